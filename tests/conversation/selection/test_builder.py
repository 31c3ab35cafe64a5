"""The builder in both modes on replayed logs: edge cases by hand, invariants by hypothesis."""

from __future__ import annotations

from pathlib import Path

import nextcord
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection import walk
from conversation.selection.builder import ContextBuilder
from conversation.selection.result import ContextSelection
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.later import asked_later, message_id
from tests.fakes.synthetic import busy_channel

LOGS = Path(__file__).resolve().parents[2] / "logs"


async def build(
    source: LogSource, trigger_index: int = -1, cache: ChannelCache | None = None, **overrides
) -> ContextSelection:
    settings = ContextSettings(**overrides)
    trigger = source.messages[trigger_index]
    reader = ChannelReader(source, cache if cache is not None else ChannelCache(source.channel_id))
    return await ContextBuilder(settings).build(trigger, reader)


def contents(selection: ContextSelection) -> list[str]:
    return [message.content for message in selection.messages]


async def test_reply_to_deleted_message_is_reported_not_fetched():
    source = LogSource.from_file(LOGS / "reply_to_deleted.json")
    selection = await build(source, trigger_index=2, min_linear=2)
    assert contents(selection) == ["anyone tried the new release?", "yes, it broke my build"]
    assert any("gone" in problem for problem in selection.problems)
    # Discord said "deleted" in the payload (referenced_message: null): no fetch is spent on it.
    assert source.calls["fetch_message"] == 0
    assert selection.rest_calls == 1  # the one history page for the linear messages


async def test_reply_chain_across_days_is_followed_whatever_its_age():
    source = LogSource.from_file(LOGS / "chain_across_days.json")
    selection = await build(source, min_linear=1)
    assert contents(selection) == [
        "Does anyone know how to configure the proxy?",
        "Set HTTPS_PROXY in the service file",
        "That worked, thanks! What about no_proxy?",
        "good morning",
    ]
    kinds = {m.content: [r.kind for r in selection.reasons[m.id]] for m in selection.messages}
    assert kinds["good morning"] == ["linear"]
    assert kinds["Set HTTPS_PROXY in the service file"] == ["reference"]
    # Each link names the message it came through.
    first = selection.messages[0]
    assert selection.reasons[first.id][0].via == selection.messages[1].id


@pytest.mark.parametrize("learned", [True, False])
async def test_a_long_silence_seals_the_old_conversation(learned: bool):
    source = LogSource.from_file(LOGS / "sealing_silence.json")
    selection = await build(source, min_linear=2, learned_relevance=learned)
    assert not any("Old topic" in text or "friday" in text for text in contents(selection))
    if learned:  # the score keeps what follows the silence, or less
        assert set(contents(selection)) <= {
            "new topic: pizza or tacos?", "tacos", "with extra salsa", "deal", "who orders?"
        }  # fmt: skip
        return
    assert contents(selection) == [
        "new topic: pizza or tacos?",
        "tacos",
        "with extra salsa",
        "deal",
        "who orders?",
    ]


async def test_min_linear_reaches_past_a_silence():
    source = LogSource.from_file(LOGS / "sealing_silence.json")
    selection = await build(source, min_linear=7)
    assert "friday then" in contents(selection)
    assert "Old topic: the database migration" not in contents(selection)


async def test_interleaved_conversations_are_told_apart_by_who_speaks():
    source = LogSource.from_file(LOGS / "interleaved.json")
    trigger = next(i for i, m in enumerate(source.messages) if m.content == "that worked!")
    selection = await build(source, trigger_index=trigger, min_linear=0)
    assert contents(selection) == [
        "my laptop won't boot after the update",
        "did you try safe mode?",
        "safe mode shows a kernel panic",
        "boot the previous kernel from grub",
    ]


async def test_interleaved_without_participant_filter_takes_everything_recent():
    source = LogSource.from_file(LOGS / "interleaved.json")
    trigger = next(i for i, m in enumerate(source.messages) if m.content == "that worked!")
    selection = await build(
        source, trigger_index=trigger, min_linear=0, participants_only=False,
        learned_relevance=False,
    )  # fmt: skip
    assert "yes, 7pm at the usual place" in contents(selection)


async def test_reply_to_a_message_outside_the_log_is_reported():
    source = LogSource.from_file(LOGS / "reply_outside_log.json")
    selection = await build(source, trigger_index=1, min_linear=5)
    assert contents(selection) == ["hello"]
    assert any("gone" in problem for problem in selection.problems)
    # The linear page reached the channel's start, so the cache already knows the id is gone.
    assert selection.rest_calls == 1
    assert source.calls["fetch_message"] == 0


async def test_reply_to_an_unknown_old_message_costs_one_page_around_it():
    source = LogSource.from_file(LOGS / "chain_across_days.json")
    # Two pages of one message each: the linear page cannot reach the day-old reference.
    trigger = source.messages[-1]
    reader = ChannelReader(source, ChannelCache(source.channel_id), page_limit=1)
    selection = await ContextBuilder(ContextSettings(min_linear=1)).build(trigger, reader)
    assert "That worked, thanks! What about no_proxy?" in contents(selection)
    pages = [e.detail.split()[0] for e in selection.work_log if e.action == "history_page"]
    assert pages[0] == "before" and "around" in pages


async def test_payload_reference_is_used_before_any_fetch():
    source = LogSource.from_file(LOGS / "quirks_thread.json")
    selection = await build(source, min_linear=0)
    # Alice's pin notice is not conversation: the walk skips it though she takes part.
    assert contents(selection) == ["I am a bot"]
    assert selection.reasons[selection.messages[-1].id][0].kind == "reference"
    assert selection.rest_calls == 1  # a page for the temporal neighbours, none for the reference


async def test_warm_cache_fed_like_the_gateway_costs_no_rest_calls():
    export = parse_export(busy_channel(seed=3, messages=400, silence_rate=0))
    source = LogSource(export)
    cache = ChannelCache(source.channel_id)
    first = source.messages[0]
    cache.go_live(first.created_at)
    for message in source.messages:  # what MESSAGE_CREATE events would have delivered
        cache.add(message)
    selection = await build(source, cache=cache)
    assert len(selection.messages) >= 10
    assert selection.rest_calls == 0
    assert source.total_calls == 0


async def test_the_walk_passes_candidate_window_only_through_what_the_cache_holds(monkeypatch):
    # Every candidate enters: no threshold, and no margin for the second page's messages.
    monkeypatch.setattr(walk, "OLDER_MARGIN", 0.0)
    export = parse_export(
        busy_channel(seed=3, messages=400, reply_rate=0, old_reply_rate=0, silence_rate=0)
    )
    every_candidate = {"candidate_window": 20, "relevance_threshold": 0.0, "max_total": 300}
    paid_only = await build(LogSource(export), cached_candidate_window=20, **every_candidate)
    cold = await build(LogSource(export), cached_candidate_window=150, **every_candidate)
    assert len(paid_only.messages) == 20
    assert paid_only.rest_calls == 1
    # Cold, the walk goes on through the rest of the one page it fetched; every candidate
    # enters, so the conversation reaches that page's edge and a second page is read.
    assert cold.rest_calls == 2
    assert len(cold.messages) == 150
    source = LogSource(export)
    cache = ChannelCache(source.channel_id)
    for message in source.messages:  # a bot that saw the channel's messages arrive
        cache.on_gateway_message(message)
    warm = await build(source, cache=cache, cached_candidate_window=150, **every_candidate)
    assert len(warm.messages) == 150
    assert warm.rest_calls == 0


async def test_a_cold_build_reads_a_second_page_only_when_the_conversation_reaches_the_first_edge():
    export = busy_channel(seed=5, messages=700, old_reply_rate=0, silence_rate=0)
    source = LogSource(parse_export(export))
    # The first page holds 100 messages before the trigger: walked whole either way. One cap
    # for both (max_total_long = max_total): the pages are compared, not the caps.
    one_page = ContextBuilder(ContextSettings(cached_candidate_window=100, max_total_long=50))
    adaptive = ContextBuilder(ContextSettings(max_total_long=50))
    pages = {1: 0, 2: 0}
    channel_id = source.channel_id
    for index in range(250, 700, 11):
        trigger = source.messages[index]
        first = await one_page.build(trigger, ChannelReader(source, ChannelCache(channel_id)))
        built = await adaptive.build(trigger, ChannelReader(source, ChannelCache(channel_id)))
        assert first.rest_calls == 1
        # Among the first page's 20 oldest messages, one entered by its score (not as recent).
        edge = {m.id for m in source.messages[index - 100 : index - 80]}
        edge_start = source.messages[index - 100].id
        at_edge = any(first.reasons[i][0].kind != "linear" for i in edge & set(first.reasons))
        assert built.rest_calls == (2 if at_edge else 1)
        if not at_edge:
            assert built.reasons == first.reasons
        # The second page adds: what one page chose stays, for the same reasons, and what is
        # added is older than the first page.
        assert first.reasons.items() <= built.reasons.items()
        assert all(i < edge_start for i in set(built.reasons) - set(first.reasons))
        pages[built.rest_calls] += 1
    assert pages[1] > 0 and pages[2] > 0, pages


async def test_deleted_message_event_removes_it_from_later_contexts():
    source = LogSource.from_file(LOGS / "sealing_silence.json")
    cache = ChannelCache(source.channel_id)
    before = await build(source, cache=cache, min_linear=2)
    gone = before.messages[-1]
    cache.on_delete(gone.id)
    after = await build(source, cache=cache, min_linear=2)
    assert gone.id not in after.ids
    assert set(before.ids) - {gone.id} <= set(after.ids)  # the rest of the context stays


# ---------------------------------------------------------------------------- properties

_SOURCES: dict[int, LogSource] = {}


def synthetic_source(seed: int) -> LogSource:
    if seed not in _SOURCES:
        _SOURCES[seed] = LogSource(parse_export(busy_channel(seed=seed, messages=300)))
    return _SOURCES[seed]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 3),
    position=st.floats(0, 1),
    min_linear=st.integers(0, 15),
    extra=st.integers(0, 30),
    threshold=st.sampled_from([1, 5, 30, 240]),
    participants_only=st.booleans(),
)
async def test_builder_invariants(seed, position, min_linear, extra, threshold, participants_only):
    source = synthetic_source(seed)
    index = int(position * (len(source.messages) - 1))
    trigger = source.messages[index]
    options = dict(
        min_linear=min_linear,
        max_total=max(1, min_linear + extra),
        time_threshold_minutes=threshold,
        participants_only=participants_only,
    )
    selection = await build(source, trigger_index=index, **options)
    ids = selection.ids

    assert len(ids) <= options["max_total"]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(message_id < trigger.id for message_id in ids)
    recent = [m.id for m in source.messages[max(0, index - min_linear) : index]]
    assert set(recent) <= set(ids)
    parent = trigger.reference.message_id if trigger.reference else None
    if parent is not None and source.message(parent) and options["max_total"] > min_linear:
        assert parent in ids
    assert all(selection.reasons[message_id] for message_id in ids)

    again = await build(source, trigger_index=index, **options)
    assert again.ids == ids
    assert again.reasons == selection.reasons


@pytest.mark.parametrize("min_linear,max_total", [(10, 30), (0, 5), (5, 5)])
async def test_cap_is_exact_on_a_busy_channel(min_linear, max_total):
    source = synthetic_source(1)
    sizes = []
    for index in range(100, 300, 10):
        selection = await build(
            source,
            trigger_index=index,
            min_linear=min_linear,
            max_total=max_total,
            participants_only=False,
        )
        sizes.append(len(selection.ids))
    assert max(sizes) == max_total  # the cap is reached in a busy channel, and never passed


async def test_thread_starter_brings_the_question_from_the_parent_channel():
    """A thread's first message carries the parent-channel message it started from."""
    parent, thread, guild = "900000000000000001", "900000000000000009", "900000000000000000"
    origin = "1236965000000000000"
    erin, bob = {"id": "11", "name": "erin"}, {"id": "12", "name": "bob"}
    export = parse_export({
        "guild": {"id": guild, "name": "g"},
        "channel": {"id": thread, "type": "GuildPublicThread", "categoryId": parent,
                    "category": "general", "name": "help"},
        "messages": [
            {"id": "1236965680742400000", "type": "ThreadStarterMessage", "content": "",
             "timestamp": "2024-05-06T10:00:00Z", "author": erin,
             "reference": {"messageId": origin, "channelId": parent, "guildId": guild}},
            {"id": "1236965932400640000", "timestamp": "2024-05-06T10:01:00Z", "author": bob,
             "content": "did you try restarting it?"},
            {"id": "1236966184058880000", "timestamp": "2024-05-06T10:02:00Z", "author": erin,
             "content": "yes, same error"},
        ],
    })  # fmt: skip
    source = LogSource(export)
    data = source.payloads.message(export.messages[0])
    data["referenced_message"] = {  # as Discord sends it: the message in the parent channel
        **source.payloads.message(export.messages[1], resolve_reference=False),
        "id": origin,
        "channel_id": parent,
        "content": "my build fails with error E42, why?",
        "author": {"id": "11", "username": "erin", "discriminator": "0", "avatar": None},
    }
    source.messages[0] = nextcord.Message(state=source.state, channel=source.channel, data=data)
    selection = await build(source, min_linear=5)
    assert contents(selection)[0] == "my build fails with error E42, why?"
    assert selection.problems == []
    assert selection.rest_calls == 1  # the linear page only: no page around a foreign id


# ------------------------------------------------------------ a silence before the trigger

BOT_MENTION = "<@1300000000000000100>"
OLD_THREAD = ("We have to move the main database", "Yes, last month", "About 800 GB")


@pytest.mark.parametrize("learned", [True, False])
async def test_a_silence_right_before_the_trigger_seals_the_old_conversation(learned: bool):
    export = asked_later(f"{BOT_MENTION} where should we go for lunch today?")
    source = LogSource(parse_export(export))
    selection = await build(source, learned_relevance=learned, min_linear=4)
    texts = contents(selection)
    assert len(texts) == 4  # the min_linear most recent messages, whatever their age
    assert all(r.kind == "linear" for m in selection.messages for r in selection.reasons[m.id])
    assert not any(text.startswith(OLD_THREAD) for text in texts)


@pytest.mark.parametrize("learned", [True, False])
async def test_a_reply_across_the_silence_is_followed_whatever_its_age(learned: bool):
    plain = asked_later("")
    question = message_id(plain, "We have to move the main database")
    export = asked_later(f"{BOT_MENTION} did the upgrade work?", replying_to=question)
    selection = await build(LogSource(parse_export(export)), learned_relevance=learned)
    reasons = {m.content[:24]: selection.reasons[m.id] for m in selection.messages}
    assert reasons["We have to move the main"][0].kind == "reference"


async def test_a_link_across_the_silence_is_followed_whatever_its_age():
    plain = asked_later("")
    answer = message_id(plain, "About 800 GB")
    link = f"https://discord.com/channels/1300000000000000000/1300000000000000001/{answer}"
    export = asked_later(f"{BOT_MENTION} about {link}: is that too big for a dump?")
    selection = await build(LogSource(parse_export(export)))
    reasons = {m.content[:12]: selection.reasons[m.id] for m in selection.messages}
    assert reasons["About 800 GB"][0].kind == "link"
