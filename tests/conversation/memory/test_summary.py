"""A cut leaves a summary of what falls out right after the system prompt (on the example
channel's log): written once, from the summary before it and the messages dropped, counted in
the budget; a summary that fails leaves a plain cut and says why."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from conversation.graph.node import MessageNode
from conversation.memory.append import (
    Continuity,
    refit_keeping_summary,
    remembered_prompt,
    sent_prompt,
)
from conversation.memory.recall import BoundedMemory
from conversation.memory.sent import SentPrompt
from conversation.memory.summary import (
    Summary,
    SummaryPolicy,
    is_summary,
    restored_summary,
    summary_node,
    summary_of,
)
from conversation.prompt.budget import Budget
from conversation.prompt.pipeline import PreparedPrompt
from conversation.prompt.tokens import TokenCounter
from conversation.replay.log_source import LogSource
from tests.conversation.memory.test_append import (
    ANSWER,
    BUDGET,
    EXAMPLE,
    FIRST,
    SECOND,
    fresh_prompt,
)

CUT = Continuity(max_total=8, cut_share=0.5)  # the example's follow-up outgrows it
EARLIER = Summary(
    text="Chloé asked about upgrading PostgreSQL 12 to 16; Dev linked the upgrade guide.",
    messages=7,
    first=datetime(2025, 3, 14, 9, 58, tzinfo=UTC),
    last=datetime(2025, 3, 14, 10, 30, tzinfo=UTC),
    authors={1300000000000000104: "Dev"},
)


class Writer:
    """The model's side of a summary: what it was given, and what it answers."""

    def __init__(self, answer: str = "Chloé plans an 800 GB upgrade; --link suggested.") -> None:
        self.answer = answer
        self.given: list[str] = []

    async def __call__(self, transcript: str) -> str:
        self.given.append(transcript)
        return self.answer


async def cut_with(
    policy: SummaryPolicy | None, earlier: Summary | None = None, continuity: Continuity = CUT
) -> tuple[SentPrompt, PreparedPrompt]:
    """The first request (remembered with its answer, carrying ``earlier`` after its system
    prompt when given) and the follow-up's, which outgrows ``CUT`` and is cut."""
    source = LogSource.from_file(EXAMPLE)
    memory = BoundedMemory()
    first, _ = await remembered_prompt(
        await fresh_prompt(source, FIRST), memory, source.channel_id,
        continuity=CUT, budget=BUDGET,
    )  # fmt: skip
    sent = sent_prompt(first, source.channel_id, answer=ANSWER)
    if earlier is not None:
        node = summary_node(earlier)
        sent = sent.model_copy(
            update={
                "nodes": (sent.nodes[0], node, *sent.nodes[1:]),
                "tokens": (sent.tokens[0], 50, *sent.tokens[1:]),
            }
        )
    memory.remember_now(sent)
    second, _ = await remembered_prompt(
        await fresh_prompt(source, SECOND), memory, source.channel_id,
        continuity=continuity, budget=BUDGET, summaries=policy,
    )  # fmt: skip
    return sent, second


class Recalls:
    """A memory that recalls one request whatever the trigger (here the same message is asked
    again: a BoundedMemory finds a request by the messages before its trigger)."""

    def __init__(self, sent: SentPrompt) -> None:
        self.sent = sent

    async def recall(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        return self.sent if channel_id == self.sent.channel_id else None

    async def remember(self, sent: SentPrompt) -> None:
        raise AssertionError("nothing is remembered here")


def nodes(prepared: PreparedPrompt) -> list[MessageNode]:
    return prepared.graph.snapshot().nodes()


async def test_the_cut_sends_a_summary_of_what_fell_out_right_after_the_system_prompt():
    writer = Writer()
    first, second = await cut_with(SummaryPolicy(write=writer))
    sent = nodes(second)
    assert sent[0].role == "system" and is_summary(sent[1])
    assert not any(is_summary(n) for n in sent[2:])
    summary = summary_of(sent[1])
    assert summary is not None and summary.text == writer.answer
    # It stands for the messages of the first request's conversation the cut left out (not
    # the other recent talk it carried, nor an answer never posted: it has no message).
    kept = {n.message_id for n in sent if n.message_id}
    dropped = [
        n
        for n in first.nodes[1:]
        if n.message_id and n.message_id not in kept and int(n.message_id) not in first.others
    ]
    assert summary.messages == len(dropped) > 0
    assert len(writer.given) == 1
    assert all(n.content in writer.given[0] for n in dropped)
    assert all(n.content not in writer.given[0] for n in sent[2:] if n.message_id)
    times = [n.created_at for n in dropped if n.created_at]
    assert (summary.first, summary.last) == (min(times), max(times))
    header = second.request_messages[1]["content"]
    assert header.startswith(f"(Summary of {summary.messages} earlier messages of this conversat")
    assert "the messages after it are more recent and win" in header
    # The budget counts it, within the room the cut keeps.
    assert second.fitted is not None and second.fitted.fits
    assert second.fitted.tokens[1] == sent[1].metadata["tokens"] > 0
    assert second.summary_note == ("success", f"{summary.describe()} written at the cut")
    # In the graph, it is the squashed version of the messages it stands for.
    assert second.graph.versions(1) == [*dropped, sent[1]]


async def test_what_a_summarized_cut_left_out_is_not_selected_back_in():
    """The next trigger's selection holds the messages the cut left out again: they are in the
    summary, and sent again they would outgrow the room at once (a cut per answer)."""
    first, second = await cut_with(SummaryPolicy(write=Writer()))
    source = LogSource.from_file(EXAMPLE)
    answered = sent_prompt(second, source.channel_id, answer=ANSWER)
    fresh = await fresh_prompt(source, SECOND)
    kept = {n.message_id for n in nodes(second) if n.message_id}
    summarized = (
        {n.message_id for n in first.nodes if n.message_id} - kept - {str(i) for i in first.others}
    )
    assert summarized <= {n.message_id for n in nodes(fresh)}  # selected again
    third, previous = await remembered_prompt(
        fresh, Recalls(answered), source.channel_id,
        continuity=Continuity(max_total=50), budget=BUDGET,
    )  # fmt: skip
    assert previous is answered and third.reused is not None  # continued, not cut
    assert not summarized & {n.message_id for n in nodes(third)}


async def test_a_prompt_refused_as_too_long_is_rebuilt_with_its_summary():
    _first, second = await cut_with(SummaryPolicy(write=Writer()))
    assert second.fitted is not None
    smaller = Budget(window=second.fitted.total, reserve=second.fitted.total // 5)
    refit = refit_keeping_summary(second, smaller, TokenCounter())
    sent = nodes(refit)
    assert sent[1] == nodes(second)[1] and not any(is_summary(n) for n in sent[2:])
    assert refit.fitted is not None and refit.fitted.budget == smaller and refit.fitted.fits
    assert refit.summary_note == second.summary_note
    assert refit.cut_at == second.cut_at == SECOND  # and where it was cut
    assert len(sent) < len(nodes(second))  # the rest was cut to fit


async def test_no_summary_is_asked_for_without_a_cut():
    writer = Writer()
    source = LogSource.from_file(EXAMPLE)
    memory = BoundedMemory()
    first, _ = await remembered_prompt(
        await fresh_prompt(source, FIRST), memory, source.channel_id,
        continuity=Continuity(max_total=50), budget=BUDGET, summaries=SummaryPolicy(writer),
    )  # fmt: skip
    memory.remember_now(sent_prompt(first, source.channel_id, answer=ANSWER))
    second, _ = await remembered_prompt(
        await fresh_prompt(source, SECOND), memory, source.channel_id,
        continuity=Continuity(max_total=50), budget=BUDGET, summaries=SummaryPolicy(writer),
    )  # fmt: skip
    assert second.reused is not None and second.summary_note is None
    assert writer.given == []


async def test_the_next_cut_summarizes_the_summary_before_it_with_what_falls_out():
    writer = Writer()
    _first, second = await cut_with(SummaryPolicy(write=writer), earlier=EARLIER)
    sent = nodes(second)
    summaries = [summary_of(n) for n in sent if is_summary(n)]
    assert len(summaries) == 1  # the earlier one is folded in, not sent beside it
    summary = summaries[0]
    assert summary is not None
    assert writer.given[0].startswith(f"Summary so far ({EARLIER.describe()}):\n{EARLIER.text}")
    assert summary.messages > EARLIER.messages and summary.first == EARLIER.first
    assert EARLIER.authors.items() <= summary.authors.items()  # forget-user finds Dev there


class Fails:
    def __init__(self, how: str) -> None:
        self.how = how

    async def __call__(self, transcript: str) -> str:
        if self.how == "error":
            raise ConnectionError("the model server is down")
        if self.how == "timeout":
            await asyncio.sleep(5)
        return {"empty": "  \n", "long": "word " * 500}.get(self.how, "")


async def test_a_summary_that_fails_leaves_a_plain_cut_and_says_why():
    plain = nodes((await cut_with(None))[1])
    for how, why in [
        ("error", "ConnectionError: the model server is down"),
        ("timeout", "not written within 0.05 s"),
        ("empty", "the model wrote nothing"),
        ("long", "more than the 100 allowed"),
    ]:
        policy = SummaryPolicy(write=Fails(how), max_tokens=100, timeout_seconds=0.05)
        _first, second = await cut_with(policy)
        sent = nodes(second)
        assert not any(is_summary(n) for n in sent), how
        # The plain cut, less only what was kept free for the summary.
        assert [n.message_id for n in sent] == [n.message_id for n in plain][: len(sent)], how
        assert second.summary_note is not None
        status, detail = second.summary_note
        assert status == "failure" and detail.startswith("no summary (plain cut)") and why in detail


async def test_a_failed_summary_keeps_the_one_before_it():
    policy = SummaryPolicy(write=Fails("error"))
    _first, second = await cut_with(policy, earlier=EARLIER)
    sent = nodes(second)
    assert is_summary(sent[1]) and summary_of(sent[1]) == EARLIER
    assert second.summary_note is not None
    assert second.summary_note[1].endswith(f"the {EARLIER.describe()} kept")


def test_a_summary_read_back_from_its_text_is_the_one_sent():
    node = summary_node(EARLIER)
    stored = MessageNode(role="user", content=node.content)  # what the store gives back
    assert summary_of(restored_summary(stored, EARLIER.authors)) == EARLIER
    redacted = MessageNode(role="user", content="[removed at the user's request]")
    assert restored_summary(redacted, EARLIER.authors) == redacted
    assert EARLIER.describe() == "summary of 7 messages, 2025-03-14 09:58 to 10:30 UTC"
    untimed = Summary(text="The answers only.", messages=2)  # no message said when
    back = MessageNode(role="user", content=summary_node(untimed).content)
    assert summary_of(restored_summary(back, {})) == untimed


async def test_a_cut_that_drops_none_of_the_conversation_keeps_the_summary_before_it():
    source = LogSource.from_file(EXAMPLE)
    tight = Continuity(max_total=4, cut_share=0.5)
    plain = nodes((await cut_with(None, continuity=tight))[1])
    kept = {n.message_id for n in plain if n.message_id is not None}
    memory = BoundedMemory()
    first, _ = await remembered_prompt(
        await fresh_prompt(source, FIRST), memory, source.channel_id,
        continuity=CUT, budget=BUDGET,
    )  # fmt: skip
    sent = sent_prompt(first, source.channel_id)  # no answer: nothing of it to drop
    # The earlier request held only what the cut keeps, and the summary before it.
    held = [
        (n, t) for n, t in zip(sent.nodes[1:], sent.tokens[1:], strict=True) if n.message_id in kept
    ]
    sent = sent.model_copy(
        update={
            "nodes": (sent.nodes[0], summary_node(EARLIER), *(n for n, _ in held)),
            "tokens": (sent.tokens[0], 50, *(t for _, t in held)),
        }
    )
    memory.remember_now(sent)
    writer = Writer()
    second, _ = await remembered_prompt(
        await fresh_prompt(source, SECOND), memory, source.channel_id,
        continuity=tight, budget=BUDGET, summaries=SummaryPolicy(write=writer),
    )  # fmt: skip
    assert second.cut_at is not None  # it was cut
    assert writer.given == []  # nothing new to summarize
    sent_now = nodes(second)
    assert is_summary(sent_now[1]) and summary_of(sent_now[1]) == EARLIER
    assert second.summary_note == ("success", f"the {EARLIER.describe()} kept")
