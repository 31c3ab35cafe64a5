"""The channel cache never claims to hold what it does not."""

from __future__ import annotations

from bench.synthetic import busy_channel
from conversation.cache import LIVE, UNKNOWN, ChannelCache
from conversation.dce import parse_export
from conversation.log_source import LogSource
from conversation.reader import ChannelReader


def source(messages: int = 400) -> LogSource:
    return LogSource(parse_export(busy_channel(seed=2, messages=messages, silence_rate=0)))


async def test_a_full_cache_does_not_claim_evicted_history():
    log = source()
    cache = ChannelCache(log.channel_id, max_messages=150)
    reader = ChannelReader(log, cache)
    newest = log.messages[-1]
    for message in log.messages[-150:]:
        cache.on_gateway_message(message)
    old = log.messages[50]
    found = await reader.get(old.id)  # a page around an old message, into a full cache
    assert found is None or found.id == old.id
    # Whatever was evicted at once, nothing in the channel is declared missing.
    for message in log.messages:
        assert cache.get(message.id) is not None, message.id
    assert cache.previous(newest.id) is not None


def test_live_coverage_starts_at_the_first_gateway_message_and_stops_on_a_new_session():
    log = source(50)
    cache = ChannelCache(log.channel_id)
    first, second, third = log.messages[10], log.messages[11], log.messages[30]
    cache.on_gateway_message(first)
    assert cache.covering(first.id) == (first.id, LIVE)
    assert cache.get(first.id - 1) is UNKNOWN  # before the session: not claimed
    cache.on_gateway_message(second)
    assert cache.previous(second.id) is first
    cache.stop_live()  # a new session: events in between may be lost
    cache.on_gateway_message(third)
    assert cache.previous(third.id) is UNKNOWN
    assert cache.covering(second.id) == (first.id, second.id)


def test_an_older_copy_never_replaces_an_edited_one():
    log = source(20)
    cache = ChannelCache(log.channel_id)
    edited, stale = log.messages[5], log.messages[5]
    cache.add(edited)
    cache.add_if_absent(stale)
    assert cache.get(edited.id) is edited
