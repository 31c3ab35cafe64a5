"""The learned relevance score: its features, its shipped weights, and how it steers the builder."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.selection.clues import Clue, words_of
from conversation.selection.clues import clue_of as clue_of_message
from conversation.selection.features import FEATURES, SECOND_FEATURES, THIRD_FEATURES
from conversation.selection.weights import load_model
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.harness import EXAMPLE, run_cli_here
from tests.fakes.synthetic import busy_channel

MINUTE = 60_000
ASKER, HELPER, OTHER_A, OTHER_B = 1, 2, 3, 4


def clue(i: int, author: int, text: str, *, mentions=(), reference=None, minute=None) -> Clue:
    return Clue(
        id=i,
        at_ms=(minute if minute is not None else i) * MINUTE,
        author=author,
        mentions=frozenset(mentions),
        reference=reference,
        words=words_of(text),
        question="?" in text,
        size=len(text.split()),
    )


def test_the_shipped_weights_load_and_match_the_features():
    model = load_model()
    assert model.first.features == FEATURES
    assert model.second.features == SECOND_FEATURES
    assert model.third is None or model.third.features == THIRD_FEATURES
    assert 0 < model.threshold < 1
    assert "irc-train" in model.trained_on
    assert model.second.trees and len(model.second.means) == len(model.second.features)


def test_the_trees_read_the_same_in_the_fast_and_the_explaining_walk():
    """The compiled expression scores; the node walk explains: both must follow the same paths."""
    import math

    stage = load_model().deciding
    source = synthetic()
    history = [clue_of_message(m) for m in reversed(source.messages[200:260])]
    trigger = clue_of_message(source.messages[260])
    for scored in load_model().score_all(trigger, history, set()):
        roots = sum(tree.values[0] for tree in stage.trees)
        z = stage.base + roots + sum(stage.contributions(scored.row))
        assert scored.score == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-9)


def test_words_leave_out_markup_names_and_chatter():
    words = words_of("<@123456789012345678> alice: thanks, the nvidia driver is broken", ["alice"])
    assert words == {"nvidia", "driver", "broken"}


def test_the_conversation_with_the_asker_outscores_an_interleaved_one():
    """Two conversations interleave; the asker's exchange with a helper must rank first."""
    history = [
        clue(10, ASKER, "my wifi card is not detected after the kernel upgrade"),
        clue(11, OTHER_A, "anyone know a good irc client", mentions=()),
        clue(12, HELPER, "which wifi chipset does lspci show", mentions=[ASKER]),
        clue(13, OTHER_B, "try hexchat", mentions=[OTHER_A]),
        clue(14, ASKER, "lspci says broadcom bcm4313", mentions=[HELPER]),
        clue(15, OTHER_A, "hexchat works thanks", mentions=[OTHER_B]),
        clue(16, HELPER, "install the broadcom sta driver", mentions=[ASKER]),
        clue(17, OTHER_B, "you are welcome", mentions=[OTHER_A]),
    ]
    trigger = clue(18, ASKER, "the sta driver fails to build", mentions=[HELPER])
    candidates = list(reversed(history))  # newest first, as the walk finds them
    scores = {
        c.id: s.score
        for c, s in zip(candidates, load_model().score_all(trigger, candidates, set()), strict=True)
    }
    ours = [scores[i] for i in (10, 12, 14, 16)]
    theirs = [scores[i] for i in (11, 13, 15, 17)]
    assert min(ours) > max(theirs)


def synthetic(seed: int = 3) -> LogSource:
    return LogSource(parse_export(busy_channel(seed=seed, messages=400)))


async def build_with(source: LogSource, index: int, **overrides):
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    builder = ContextBuilder(ContextSettings(**overrides))
    return await builder.build(source.messages[index], reader)


@pytest.mark.parametrize("index", [150, 280, 399])
async def test_the_threshold_trades_fullness_for_sureness(index: int):
    source = synthetic()
    strict = await build_with(source, index, relevance_threshold=1.0)
    default = await build_with(source, index)
    loose = await build_with(source, index, relevance_threshold=0.0)
    assert len(strict.ids) <= len(default.ids) <= len(loose.ids) <= ContextSettings().max_total
    assert set(strict.ids) <= set(default.ids) <= set(loose.ids)
    # Whatever the threshold, the recent messages are in and every message says why, with a score.
    linear = ContextSettings().min_linear
    recent = [m.id for m in source.messages[index - linear : index]]
    assert set(recent) <= set(strict.ids)
    # The best-scored candidates are in even when no score reaches the threshold (when there
    # are any: after a long silence only the recent messages are left).
    assert len(strict.ids) >= min(len(loose.ids), len(recent) + load_model().always_best)
    for message_id in loose.ids:
        first = loose.reasons[message_id][0]
        assert first.score is not None and 0 <= first.score <= 1


async def test_switching_the_score_off_gives_the_participation_rules():
    source = synthetic()
    rules = await build_with(source, 300, learned_relevance=False)
    assert all(r.score is None for reasons in rules.reasons.values() for r in reasons)
    scored = await build_with(source, 300)
    assert rules.ids != scored.ids


def test_replay_explains_each_message_with_its_score():
    result = run_cli_here("replay", str(EXAMPLE), "--no-model")
    assert result.returncode == 0, result.stderr
    assert "(score 0." in result.stdout or "(score 1." in result.stdout
    assert "reply chain" in result.stdout or "reply link" in result.stdout


def test_the_weights_file_is_package_data():
    pyproject = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text()
    assert '"relevance_weights.json"' in pyproject


def test_the_budget_still_reads_reasons_that_carry_a_score():
    """The token budget protects the reply chain by reading reasons; a score must not hide it."""
    from conversation.graph.node import MessageNode
    from conversation.prompt.budget import _reply_chain

    parent = MessageNode(
        role="user",
        content="the question",
        message_id="5",
        metadata={"reasons": ["reference via 9 (score 0.97: in the trigger's reply chain)"]},
    )
    trigger = MessageNode(role="user", content="and?", message_id="9", metadata={"trigger": True})
    assert _reply_chain([parent, trigger]) == {0: 1}


def test_the_budget_drops_the_lowest_scores_first():
    from datetime import UTC, datetime, timedelta

    from conversation.graph.node import MessageNode
    from conversation.prompt.budget import _drop_order

    start = datetime(2024, 5, 1, tzinfo=UTC)

    def node(i: int, score: float) -> MessageNode:
        reason = f"temporal via 99 (score {score:.2f}: few messages back)"
        return MessageNode(
            role="user",
            content=f"m{i}",
            message_id=str(i),
            created_at=start + timedelta(minutes=i),
            metadata={"reasons": [reason]},
        )

    nodes = [node(1, 0.9), node(2, 0.2), node(3, 0.6), node(4, 0.1)]
    trigger = MessageNode(
        role="user",
        content="?",
        message_id="99",
        created_at=start + timedelta(minutes=5),
        metadata={"trigger": True},
    )
    assert _drop_order([*nodes, trigger], protected=[4]) == [3, 1, 2, 0]


def test_the_triggers_reply_thread_is_in_and_other_threads_keep_their_scores():
    """A reply and what it answers belong together; another thread is not lifted wholesale."""
    from conversation.selection.relevance import Scored, thread_scores

    history = [
        clue(10, OTHER_A, "the old question that started it"),
        clue(11, HELPER, "an answer to it", reference=10),
        clue(12, OTHER_B, "unrelated chatter"),
        clue(13, OTHER_A, "a thread elsewhere"),
        clue(14, OTHER_B, "its reply", reference=13),
        clue(15, HELPER, "a reply to the old answer", reference=11),
    ]
    trigger = clue(16, ASKER, "and then?", reference=11)
    candidates = list(reversed(history))
    raw = {15: 0.2, 14: 0.6, 13: 0.1, 12: 0.3, 11: 0.05, 10: 0.02}
    model = load_model()
    scored = [
        Scored(raw[c.id], s.row)
        for c, s in zip(candidates, model.score_all(trigger, candidates, {11, 10}), strict=True)
    ]
    lifted = {
        c.id: s for c, s in zip(candidates, thread_scores(trigger, candidates, scored), strict=True)
    }
    # The trigger's thread: its parent, the parent's parent, and another reply to the parent.
    assert [lifted[i].score for i in (10, 11, 15)] == [1.0, 1.0, 1.0]
    assert all(lifted[i].in_thread for i in (10, 11, 15))
    # Another thread and the chatter keep what the score said.
    assert [lifted[i].score for i in (12, 13, 14)] == [0.3, 0.1, 0.6]
    assert not any(lifted[i].in_thread for i in (12, 13, 14))
    assert "in the trigger's reply thread" in model.evidence(lifted[15])


async def test_the_whole_reply_chain_is_in_however_strict_the_threshold():
    """Replies are followed one level per step, always: every ancestor of the trigger is in."""
    export = busy_channel(seed=5, messages=300, reply_rate=0.0, old_reply_rate=0.0)
    messages = export["messages"]
    chain = [messages[i] for i in (40, 90, 150, 220)]  # oldest first, far apart
    for child, parent in zip([*chain[1:], messages[-1]], chain, strict=True):
        child["type"] = "Reply"
        child["reference"] = {"messageId": parent["id"], "channelId": export["channel"]["id"]}
    aside = messages[230]  # someone else answering a link of the chain
    aside["reference"] = {"messageId": chain[1]["id"], "channelId": export["channel"]["id"]}
    source = LogSource(parse_export(export))
    selection = await build_with(source, len(messages) - 1, relevance_threshold=1.0)
    wanted = {int(m["id"]) for m in (*chain, aside)}
    assert wanted <= set(selection.ids)
    assert selection.reasons[int(chain[0]["id"])][0].kind == "reference"


def test_a_third_look_decides_with_the_conversation_the_second_found():
    """With a third look, the rows grow by the relative and reach features a second time, and
    the third look's trees give the score."""
    from conversation.selection.stages import Tree, TreeStage

    model = load_model()
    extra = len(THIRD_FEATURES) - len(SECOND_FEATURES)
    # A third look that reads only the second look's "linked to a likely message": +2 when set.
    linked = THIRD_FEATURES.index("linked to a likely message, second look")
    tree = Tree(
        feature=(linked, -1, -1), threshold=(0.5, 0.0, 0.0), left=(1, -1, -1),
        right=(2, -1, -1), values=(0.0, -2.0, 2.0),
    )  # fmt: skip
    third = TreeStage(
        features=THIRD_FEATURES, means=(0.0,) * len(THIRD_FEATURES), base=0.0, trees=(tree,)
    )
    looked = model.model_copy(update={"third": third})
    history = [
        clue(10, HELPER, "the wifi driver needs firmware"),
        clue(11, OTHER_A, "what a nice day"),
        clue(12, OTHER_B, "it does, install linux-firmware", reference=10),
    ]
    trigger = clue(13, ASKER, "which wifi firmware", mentions=[HELPER])
    candidates = list(reversed(history))
    two = model.score_all(trigger, candidates, set())
    three = looked.score_all(trigger, candidates, set())
    assert all(len(s.row) == len(SECOND_FEATURES) for s in two)
    assert all(len(s.row) == len(SECOND_FEATURES) + extra for s in three)
    assert looked.deciding is looked.third
    # The first 36 numbers are the same; the third look's score follows its one tree.
    for a, b in zip(two, three, strict=True):
        assert b.row[: len(SECOND_FEATURES)] == a.row
        expected = 1 / (1 + math.exp(-2.0)) if b.row[linked] >= 0.5 else 1 / (1 + math.exp(2.0))
        assert b.score == pytest.approx(expected)
