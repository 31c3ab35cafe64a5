"""The channel cache never claims to hold what it does not."""

from __future__ import annotations

from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.sources.cache import LIVE, UNKNOWN, CacheRegistry, ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.synthetic import busy_channel


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


def test_one_budget_across_channels_least_recently_used_give_way():
    registry = CacheRegistry(max_messages=1000, max_total=300)
    logs = {channel: source(200).messages for channel in (1, 2, 3)}
    for channel in (1, 2):
        for message in logs[channel][:150]:
            registry.for_channel(channel).on_gateway_message(message)
    assert registry.budget is not None and registry.budget.used == 300
    registry.for_channel(1)  # channel 1 is used again: channel 2 is now the stalest
    for message in logs[3][:100]:
        registry.for_channel(3).on_gateway_message(message)
    sizes = {cache.channel_id: len(cache) for cache in registry}
    assert sizes == {1: 150, 2: 50, 3: 100}
    assert registry.budget.used == sum(sizes.values()) == 300
    # Channel 2 gave up its oldest messages, and with them any claim about that stretch.
    two = registry.get(2)
    assert two is not None
    assert two.get(logs[2][0].id) is UNKNOWN
    assert two.get(logs[2][149].id) is logs[2][149]
    # A channel that gives up everything leaves the registry, claiming nothing.
    for message in logs[3][100:200]:
        registry.for_channel(3).on_gateway_message(message)
    assert registry.get(2) is None
    assert registry.budget.used == sum(len(cache) for cache in registry) == 300


def test_an_emptied_cache_claims_nothing_it_dropped():
    log = source(50)
    cache = ChannelCache(log.channel_id)
    for message in log.messages[:20]:
        cache.on_gateway_message(message)
    cache.shrink(20)
    assert len(cache) == 0
    assert cache.get(log.messages[5].id) is UNKNOWN
    assert cache.previous(log.messages[19].id) is UNKNOWN
    cache.on_gateway_message(log.messages[20])
    # Still live: what came after the dropped messages did arrive, and nothing before.
    assert cache.covering(log.messages[20].id) == (log.messages[19].id + 1, LIVE)
    assert cache.previous(log.messages[20].id) is UNKNOWN


def test_the_only_channel_is_held_to_the_budget_too():
    registry = CacheRegistry(max_messages=1000, max_total=40)
    for message in source(100).messages:
        registry.for_channel(7).on_gateway_message(message)
    cache = registry.get(7)
    assert cache is not None and len(cache) == 40
    assert registry.budget is not None and registry.budget.used == 40


def _stepwise(cache: ChannelCache, message_id: int, count: int) -> list:
    """What ``previous`` answers one step at a time, up to the first answer it does not hold."""
    found = []
    while len(found) < count:
        answer = cache.previous(message_id)
        if answer is UNKNOWN or answer is None:
            break
        found.append(answer)
        message_id = answer.id
    return found


def test_held_before_is_what_previous_answers_step_by_step():
    """The walk takes a held stretch in one slice: it must stop where ``previous`` would,
    at a hole in the coverage, at the channel's start, and after ``count``."""
    log = source(300)
    ids = [m.id for m in log.messages]
    cache = ChannelCache(log.channel_id)
    cache.add_page(log.messages[:80], 0, ids[79])  # from the channel's start
    cache.add_page(log.messages[120:200], ids[120], ids[199])  # a stretch after a hole
    for message in log.messages[200:260]:  # and live messages, adjacent to it
        cache.on_gateway_message(message)
    cache.add(log.messages[100])  # held, but in no complete stretch
    cases = 0
    for index in (0, 1, 40, 79, 80, 100, 120, 121, 150, 199, 200, 201, 259):
        for count in (0, 1, 5, 60, 300):
            held = cache.held_before(ids[index], count)
            assert held == _stepwise(cache, ids[index], count), (index, count)
            cases += bool(held)
    assert cases > 20
    # The live stretch starts at its first message: a slice stops there, as a step does.
    assert [m.id for m in cache.held_before(ids[259], 300)] == ids[200:259][::-1]
    assert [m.id for m in cache.held_before(ids[199], 300)] == ids[120:199][::-1]
    assert cache.held_before(ids[79], 300)[-1].id == ids[0]
