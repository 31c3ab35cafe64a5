"""The live source: one anchored REST request per page, newest first, errors made explicit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.sources.cache import ChannelCache
from conversation.sources.discord_source import HISTORY_UNREADABLE, DiscordChannelSource
from conversation.sources.reader import ChannelReader
from conversation.sources.source import SourceError
from tests.fakes.synthetic import busy_channel

CHANNEL = 700_000_000_000_000_001


@pytest.fixture
async def channel(fake_discord, connect_client):
    export = parse_export(busy_channel(seed=11, messages=250, channel_id=CHANNEL))
    await fake_discord.load_log(export)
    client = await connect_client()
    return client.get_channel(CHANNEL), LogSource(export)


def history_requests(fake) -> list:
    return fake.requests_to("GET", f"/channels/{CHANNEL}/messages")


async def test_pages_are_newest_first_and_one_request_each(fake_discord, channel):
    live, replay = channel
    source = DiscordChannelSource(live)
    ids = [m.id for m in replay.messages]
    middle = ids[120]
    fake_discord.clear_requests()
    for anchor in ("before", "after", "around"):
        page = await source.history(**{anchor: middle}, limit=100)
        expected = await replay.history(**{anchor: middle}, limit=100)
        got = [m.id for m in page]
        assert got == sorted(got, reverse=True)
        # The fake and the replay source agree on Discord's paging, anchor by anchor.
        assert set(got) <= set(ids) and len(got) >= 99
        if anchor != "around":
            assert got == [m.id for m in expected]
    requests = history_requests(fake_discord)
    assert len(requests) == 3
    assert [sorted(set(r.query) & {"before", "after", "around"}) for r in requests] == [
        ["before"],
        ["after"],
        ["around"],
    ]


async def test_missing_message_is_none_and_forbidden_is_explained(fake_discord, channel):
    live, _ = channel
    source = DiscordChannelSource(live)
    assert await source.fetch_message(123) is None
    fake_discord.forbid_history(CHANNEL)
    with pytest.raises(SourceError) as error:
        await source.history(before=2**62)
    assert error.value.status == 403
    assert error.value.user_message == HISTORY_UNREADABLE


async def test_cold_build_costs_what_the_fake_saw(fake_discord, channel):
    live, replay = channel
    trigger = await live.fetch_message(replay.messages[-1].id)
    fake_discord.clear_requests()
    reader = ChannelReader(DiscordChannelSource(live), ChannelCache(CHANNEL))
    selection = await ContextBuilder(ContextSettings()).build(trigger, reader)
    assert selection.rest_calls == len(history_requests(fake_discord)) >= 1
    # The same build over the replayed log selects the same messages.
    offline = await ContextBuilder(ContextSettings()).build(
        replay.messages[-1], ChannelReader(replay, ChannelCache(CHANNEL))
    )
    assert selection.ids == offline.ids


def test_module_does_not_touch_bot():
    text = Path(__file__).resolve().parents[3].joinpath("conversation").rglob("*.py")
    imports_bot = re.compile(r"^\s*(from\s+bot[.\s]|import\s+bot\b(?!_))", re.MULTILINE)
    offenders = [p.name for p in text if imports_bot.search(p.read_text())]
    assert offenders == []
