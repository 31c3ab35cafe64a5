"""The cache a replayed build starts from: empty, or the log up to the trigger and no further."""

from __future__ import annotations

from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.replay.replay_cache import ReplayCaches
from tests.fakes.synthetic import busy_channel


def source() -> LogSource:
    return LogSource(parse_export(busy_channel(seed=5, messages=40, silence_rate=0)))


def test_a_warm_cache_holds_the_log_up_to_the_trigger_even_when_triggers_go_back():
    log = source()
    ids = [message.id for message in log.messages]
    caches = ReplayCaches(log, warm=True)
    late = caches.for_trigger(ids[30])
    assert ids[30] in late and ids[31] not in late
    assert caches.for_trigger(ids[35]) is late  # forward: the same cache, fed on
    early = caches.for_trigger(ids[10])
    assert ids[10] in early
    assert not any(i in early for i in ids[11:])  # back: a new cache, nothing from after it
    assert early.previous(ids[10]).id == ids[9]  # covered: the walk needs no page


def test_a_cold_cache_is_empty_for_every_trigger():
    log = source()
    caches = ReplayCaches(log, warm=False)
    first = caches.for_trigger(log.messages[20].id)
    assert len(first) == 0
    assert caches.for_trigger(log.messages[30].id) is not first
