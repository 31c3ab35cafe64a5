"""A follow-up's request continues the previous one (on the example channel's log): the previous
request and the answer byte for byte, then what is new; edits and deletions still win; a
conversation that outgrows its room is cut once, to a share of it."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta
from pathlib import Path

from conversation.common.settings import ContextSettings
from conversation.graph.node import MessageNode
from conversation.memory.append import (
    ChannelNow,
    Continuity,
    refit_keeping_summary,
    remembered_prompt,
    sent_prompt,
)
from conversation.memory.recall import BoundedMemory
from conversation.memory.sent import SentPrompt
from conversation.prompt.budget import Budget
from conversation.prompt.materialize import MaterializeOptions, Materializer
from conversation.prompt.pipeline import PreparedPrompt, persona_for
from conversation.prompt.pipeline import prepare_prompt as build_prompt
from conversation.prompt.tokens import TokenCounter
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from conversation.sources.snowflakes import time_snowflake

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "support-channel.json"
FIRST = 1350095370977280000  # Chloé: "About 800 GB, so a dump would take hours." (to the bot)
SECOND = 1350098139217920000  # Chloé, later: "given the guide Dev linked, can I use..."
BOTS_ANSWER = 1350094616002560000  # the bot's answer before the first
GUIDE = 1350094112686080000  # Dev's message with the guide
BUDGET = Budget(window=8192, reserve=1024)
ANSWER = MessageNode(role="assistant", content="Then the in-place upgrade with --link it is.")


async def fresh_prompt(source: LogSource, trigger_id: int) -> PreparedPrompt:
    builder = ContextBuilder(ContextSettings(min_linear=4))
    return await build_prompt(
        source.message(trigger_id),
        ChannelReader(source, ChannelCache(source.channel_id)),
        builder,
        Materializer(MaterializeOptions(bot_user_id=source.bot_user_id)),
        persona_for("You are {bot_name}.", "Threadwise", source.channel),
        budget=BUDGET,
    )


async def follow_up(
    continuity: Continuity | None = None,
    now: ChannelNow | None = None,
    edits: dict[int, str] | None = None,
) -> tuple[PreparedPrompt, PreparedPrompt]:
    """The request answered first (remembered with its answer), and the follow-up's, after
    ``edits`` (message id -> new text) were made in between."""
    source = LogSource.from_file(EXAMPLE)
    memory = BoundedMemory()
    continuity = continuity or Continuity(max_total=50)
    first, previous = await remembered_prompt(
        await fresh_prompt(source, FIRST), memory, source.channel_id,
        continuity=continuity, budget=BUDGET,
    )  # fmt: skip
    assert previous is None
    memory.remember_now(sent_prompt(first, source.channel_id, answer=ANSWER))
    for message_id, text in (edits or {}).items():
        source.message(message_id).content = text
    if edits:
        now = ChannelNow(content=lambda i: source.message(i).content if i in edits else None)
    second, previous = await remembered_prompt(
        await fresh_prompt(source, SECOND), memory, source.channel_id,
        continuity=continuity, budget=BUDGET, now=now,
    )  # fmt: skip
    return first, second


def texts(prepared: PreparedPrompt) -> list[str]:
    return [m["content"] for m in prepared.request_messages]


async def test_the_follow_up_starts_with_the_request_before_and_its_answer():
    first, second = await follow_up()
    before = first.request_messages
    assert second.request_messages[: len(before)] == before
    assert second.request_messages[len(before)]["content"] == ANSWER.content
    assert second.stable_end == len(before) + 1  # the cache breakpoint: after the answer
    assert second.cache_key == first.cache_key
    assert "given the guide Dev linked" in texts(second)[-1]
    # Nothing is sent twice.
    ids = [n.message_id for n in second.graph.snapshot().nodes() if n.message_id]
    assert len(ids) == len(set(ids))


async def test_an_edited_message_is_sent_as_edited_and_the_prefix_breaks_there():
    first, _ = await follow_up()
    index = next(i for i, n in enumerate(first.graph.snapshot().nodes()) if n.message_id)
    edited = int(first.graph.snapshot().nodes()[index].message_id or 0)
    old = texts(first)[index]
    _, second = await follow_up(edits={edited: "rewritten entirely"})
    assert second.stable_end != len(first.request_messages) + 1  # not the continued start
    assert second.request_messages[:index] == first.request_messages[:index]
    assert old not in texts(second)
    assert any(text.endswith(": rewritten entirely") for text in texts(second))


async def test_a_deleted_message_is_never_sent_again():
    first, _ = await follow_up()
    assert any(str(BOTS_ANSWER) == n.message_id for n in first.graph.snapshot().nodes())
    _, second = await follow_up(now=ChannelNow(deleted=lambda i: i == BOTS_ANSWER))
    assert all(n.message_id != str(BOTS_ANSWER) for n in second.graph.snapshot().nodes())
    assert ANSWER.content in texts(second)  # the rest of the conversation goes on


async def test_a_conversation_past_max_total_is_cut_once_to_a_share_of_it():
    first, second = await follow_up(Continuity(max_total=8, cut_share=0.5))
    sent = [n for n in second.graph.snapshot().nodes() if n.message_id]
    assert len(sent) <= 4  # half of max_total, the trigger included
    assert (
        second.reused is None
        and second.request_messages[-1]
        == (await follow_up(Continuity(max_total=50)))[1].request_messages[-1]
    )
    assert second.fitted is not None
    assert "conversation cut to 50%" in second.fitted.cuts[-1].describe()
    assert len([n for n in first.graph.snapshot().nodes() if n.message_id]) > 4


def with_follow_ups(folder: Path, count: int) -> tuple[LogSource, list[int]]:
    """The example channel with ``count`` more questions of Chloé's after ``SECOND``, a minute
    apart, each replying to the one before."""
    export = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    asked = export["messages"][-1]
    ids: list[int] = []
    for number in range(1, count + 1):
        said = datetime.fromisoformat(asked["timestamp"]) + timedelta(minutes=1)
        asked = copy.deepcopy(asked) | {
            "id": str(time_snowflake(said)),
            "timestamp": said.isoformat(),
            "content": f"and question {number}: what if the disk fills up halfway?",
            "mentions": [],
        }
        asked["reference"]["messageId"] = str(ids[-1] if ids else SECOND)
        export["messages"].append(asked)
        ids.append(int(asked["id"]))
    path = folder / "support-channel.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    return LogSource.from_file(path), ids


def message_ids(nodes: list[MessageNode] | tuple[MessageNode, ...]) -> set[str]:
    return {n.message_id for n in nodes if n.message_id is not None}


async def test_what_a_plain_cut_left_out_is_not_selected_back_in(tmp_path):
    """After a cut without a summary, the follow-ups' selections hold the messages it left
    out again; sent again they would refill the room at once (a cut every answer or two)."""
    source, later = with_follow_ups(tmp_path, 3)
    memory = BoundedMemory()
    # The follow-ups have room to grow (no cut), but not so much that what the cut left out
    # would fit in half of it.
    cut, roomy = Continuity(max_total=8, cut_share=0.5), Continuity(max_total=12)
    sent: list[SentPrompt] = []
    fresh: list[PreparedPrompt] = []
    triggers = [FIRST, SECOND, *later]
    for trigger_id, continuity in zip(triggers, [cut, cut, roomy, roomy, roomy], strict=True):
        fresh.append(await fresh_prompt(source, trigger_id))
        prepared, previous = await remembered_prompt(
            fresh[-1], memory, source.channel_id, continuity=continuity, budget=BUDGET
        )
        sent.append(sent_prompt(prepared, source.channel_id, answer=ANSWER, previous=previous))
        memory.remember_now(sent[-1])
        if trigger_id == later[0]:  # refused as too long, rebuilt: still where it was cut
            smaller = Budget(window=2048, reserve=512)
            refit = refit_keeping_summary(prepared, smaller, TokenCounter())
            assert refit.cut_at == SECOND
    first, second, *follow_ups = sent
    assert first.cut_at is None and second.cut_at == SECOND  # the second request was cut
    dropped = message_ids(first.nodes) - message_ids(second.nodes) - {str(i) for i in first.others}
    assert dropped and dropped <= message_ids(fresh[2].graph.snapshot().nodes())  # selected again
    assert not dropped & message_ids(refit.graph.snapshot().nodes())  # nor brought back by it
    before = second
    for after in follow_ups:  # each continues the one before, and none sends them again
        assert after.nodes[: len(before.nodes)] == before.nodes
        assert after.nodes[len(before.nodes)] == ANSWER
        assert not dropped & message_ids(after.nodes)
        assert after.cut_at == SECOND
        before = after
    # Built afresh (the conversation moved on: it continues no request), it has no floor.
    moved_on = Continuity(max_total=50, keep_share=1.01)
    prepared, previous = await remembered_prompt(
        fresh[-1], memory, source.channel_id, continuity=moved_on, budget=BUDGET
    )
    assert previous is not None and previous.cut_at == SECOND and prepared.continues is None
    assert sent_prompt(prepared, source.channel_id, previous=previous).cut_at is None
    assert dropped <= message_ids(prepared.graph.snapshot().nodes())


async def test_what_a_plain_cut_left_out_comes_back_when_the_room_has_grown(tmp_path):
    """Widened (an operator raised ``max_total``), the room holds what the cut left out with
    the follow-up and stays within what a cut leaves: it comes back, no cut comes sooner."""
    source, later = with_follow_ups(tmp_path, 1)
    memory = BoundedMemory()
    sent: list[SentPrompt] = []
    steps = [(FIRST, 8), (SECOND, 8), (later[0], 50)]
    for trigger_id, max_total in steps:
        prepared, previous = await remembered_prompt(
            await fresh_prompt(source, trigger_id), memory, source.channel_id,
            continuity=Continuity(max_total=max_total, cut_share=0.5), budget=BUDGET,
        )  # fmt: skip
        sent.append(sent_prompt(prepared, source.channel_id, answer=ANSWER, previous=previous))
        memory.remember_now(sent[-1])
    first, second, widened = sent
    dropped = message_ids(first.nodes) - message_ids(second.nodes) - {str(i) for i in first.others}
    assert second.cut_at == SECOND and dropped
    assert widened.nodes[: len(second.nodes)] == second.nodes  # it continues the cut request
    assert dropped <= message_ids(widened.nodes)


def test_a_message_missing_from_a_stretch_the_cache_holds_whole_is_deleted():
    """The cache answers "known not to exist" for it (deleted while the bot was down, say):
    the memory takes that as deleted; a message it knows nothing of is not."""
    cache = ChannelCache(7)
    cache.cover(0, 200)
    now = ChannelNow.of_cache(cache)
    assert now.gone_id(150)
    assert not now.gone_id(300)  # unknown, not gone
    assert now.with_gone(frozenset({300})).gone_id(300)  # the store said so
    # A thread's starter message (the thread's id) is in the parent channel; a linked message
    # may be in any channel: neither is gone for missing here.
    assert not now.gone_id(7)
    linked = MessageNode(
        role="user", content="x", message_id="150", metadata={"reasons": ["link via 190"]}
    )
    assert not now.gone(linked)
    assert now.gone(linked.model_copy(update={"metadata": {}}))
