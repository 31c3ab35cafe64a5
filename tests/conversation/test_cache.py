"""The channel cache never claims to hold what it does not."""

from __future__ import annotations

from conversation.cache import LIVE, UNKNOWN, CacheRegistry, ChannelCache
from conversation.dce import parse_export
from conversation.log_source import LogSource
from conversation.reader import ChannelReader
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
