"""The prompt's order: the trigger's conversation first, the other recent messages after a label,
the trigger last; the same selection as in time order, and the budget still in force."""

from __future__ import annotations

from pathlib import Path

from conversation.common.settings import ContextSettings
from conversation.prompt.budget import Budget
from conversation.prompt.layout import OTHERS_LABEL, lay_out
from conversation.prompt.materialize import MaterializeOptions, Materializer
from conversation.prompt.pipeline import conversation_threshold, persona_for, prompt_for
from conversation.prompt.tokens import TokenCounter, prompt_tokens
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.selection.result import ContextSelection, Reason
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "support-channel.json"
PERSONA = "You are {bot_name}, in #{channel}."


async def example_prompt(budget: Budget | None = None, *, time_order: bool = False):
    source = LogSource.from_file(EXAMPLE)
    trigger = source.messages[-1]
    # Four recent messages always in, so the lunch talk is there to be laid out after its label.
    builder = ContextBuilder(ContextSettings(min_linear=4))
    selection = await builder.build(trigger, ChannelReader(source, ChannelCache(source.channel_id)))
    materializer = Materializer(MaterializeOptions(bot_user_id=source.bot_user_id))
    return await prompt_for(
        selection,
        materializer,
        persona_for(PERSONA, "Threadwise", source.channel),
        threshold=conversation_threshold(builder),
        now=trigger.created_at,
        budget=budget,
        counter=TokenCounter(),
        time_order=time_order,
    )


async def test_the_conversation_comes_first_and_the_lunch_talk_after_its_label():
    prepared = await example_prompt()
    before = await example_prompt(time_order=True)
    texts = [m["content"] for m in prepared.request_messages]
    label = texts.index(OTHERS_LABEL)
    conversation, others = texts[1:label], texts[label + 1 : -1]
    assert conversation[0].startswith("Chloé: We have to move the main database")
    assert any("800 GB" in text for text in conversation)
    assert others == [
        "Ana: Ben: approved",
        "Eli: who else is coming to lunch?",
        "Ben: thanks Ana, merging",
        "Ana: the deploy is green, Ben",
    ]
    assert texts[-1].endswith("[sent Friday 2025-03-14 13:28 UTC]")
    # The same messages as in time order (the selection does not move), only the order.
    old = [m["content"] for m in before.request_messages]
    assert OTHERS_LABEL not in old
    assert sorted(t for t in texts if t != OTHERS_LABEL) == sorted(old)
    assert old[1:-1] == texts[1:label] + texts[label + 1 : -1]  # here the lunch came later
    assert prepared.stable_end == label
    assert prepared.cache_key == f"conversation-{prepared.layout.conversation[0].id}"


async def test_the_label_is_counted_and_goes_with_the_last_of_the_other_messages():
    whole = await example_prompt(Budget(window=8192, reserve=1024))
    assert whole.fitted is not None and whole.fitted.fits
    # The label is counted with the rest: the total is the count of what is sent.
    assert whole.fitted.total == prompt_tokens(whole.fitted.nodes)
    tight = Budget(window=whole.fitted.total - 40, reserve=1)
    cut = await example_prompt(tight)
    assert cut.fitted is not None and cut.fitted.fits
    dropped = [c.message_id for c in cut.fitted.cuts if c.what == "message"]
    assert dropped  # the other recent messages go first ...
    others = {str(m.id) for m in cut.layout.others}
    assert set(dropped) <= others
    kept = [m["content"] for m in cut.request_messages]
    if others - set(dropped):
        assert OTHERS_LABEL in kept
    smallest = await example_prompt(Budget(window=whole.fitted.total - 150, reserve=1))
    texts = [m["content"] for m in smallest.request_messages]
    ids = {n.message_id for n in smallest.graph.snapshot().nodes()}
    assert not ids & others and OTHERS_LABEL not in texts  # ... and the label with the last


def test_a_recent_message_answering_the_conversation_belongs_to_it():
    """Read from the reasons: the recent message replied to by a conversation message, and the
    one the score puts in, are in the conversation; an unrelated recent one is not."""
    source = LogSource.from_file(EXAMPLE)
    by_start = {m.content[:24]: m for m in source.messages}
    question = by_start["We have to move the main"]
    guide = by_start["Yes, last month. This gu"]
    approved = by_start["Ben: approved"]
    lunch = by_start["who else is coming to lu"]
    trigger = source.messages[-1]
    reasons = {
        question.id: [Reason(kind="linear", score=0.9)],  # the score puts it in
        guide.id: [Reason(kind="linear", score=0.1), Reason(kind="reference", via=trigger.id)],
        approved.id: [Reason(kind="linear", score=0.02)],
        lunch.id: [Reason(kind="linear", score=0.03)],
    }
    selection = ContextSelection(
        trigger=trigger,
        messages=sorted([question, guide, approved, lunch], key=lambda m: m.id),
        reasons=reasons,
    )
    layout = lay_out(selection, threshold=0.3)
    assert [m.id for m in layout.conversation] == [question.id, guide.id]
    assert [m.id for m in layout.others] == [approved.id, lunch.id]
    assert layout.selection.messages == [question, guide, approved, lunch]
    assert selection.messages == sorted(selection.messages, key=lambda m: m.id)  # untouched
    assert layout.root == question.id
    # Without the score (rules only) a recent message is in only through a link to the rest:
    # the question because the guide (which the trigger answers) answers it.
    rules = lay_out(selection, threshold=None)
    assert [m.id for m in rules.conversation] == [question.id, guide.id]
    assert [m.id for m in rules.others] == [approved.id, lunch.id]
