"""The message a trigger likely answers enters beside the score's choice, ranked apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.selection.features import ANSWER_SCORE, SECOND_FEATURES
from conversation.selection.relevance import RelevanceModel, Scored
from conversation.selection.scoring import LIKELY_ANSWERED
from conversation.selection.stages import Tree, TreeStage
from conversation.selection.weights import WeightsError, load_model, load_model_from
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.synthetic import busy_channel

ANSWER_FEATURES = (*SECOND_FEATURES, ANSWER_SCORE)
NAMED = SECOND_FEATURES.index("its author is addressed by the trigger")
SCORE = len(SECOND_FEATURES)


def split_on(feature: int, cut: float, below: float, above: float) -> Tree:
    """One split: ``below`` added to the log-odds under ``cut``, ``above`` from it."""
    return Tree(
        feature=(feature, -1, -1),
        threshold=(cut, 0.0, 0.0),
        left=(1, -1, -1),
        right=(2, -1, -1),
        values=(0.0, below, above),
    )


def answering(tree: Tree, best: int, floor: float) -> RelevanceModel:
    stage = TreeStage(features=ANSWER_FEATURES, means=(0.0,) * len(ANSWER_FEATURES), base=0.0,
                      trees=(tree,))  # fmt: skip
    return load_model().model_copy(
        update={"answers": stage, "answer_best": best, "answer_floor": floor}
    )


def scored(named: bool, score: float = 0.1) -> Scored:
    row = [0.0] * len(SECOND_FEATURES)
    row[NAMED] = float(named)
    return Scored(score, tuple(row))


def test_the_likeliest_enter_first_at_most_answer_best_and_room_none_under_the_floor():
    model = answering(split_on(NAMED, 0.5, -4.0, 4.0), best=2, floor=0.5)
    looked = [(10, scored(False)), (11, scored(True)), (12, scored(True)), (13, scored(True))]
    # The named three are equally likely (0.98): the newest first, two at most.
    assert model.likely_answered(looked, room=10) == [13, 12]
    assert model.likely_answered(looked, room=1) == [13]
    assert model.likely_answered(looked, room=0) == []
    # Unlikely ones stay out, however few enter: the floor, not the count, decides then.
    assert model.likely_answered([(10, scored(False)), (11, scored(True))], room=10) == [11]
    # Not looked at twice (``second_look_floor``): no row to rank, never in; nor one the score
    # puts under the floor of the best few, however likely the ranking finds it.
    assert model.likely_answered([(14, Scored(0.01, ()))], room=10) == []
    assert model.likely_answered([(15, scored(True, score=0.049))], room=10) == []
    assert model.likely_answered([(15, scored(True, score=0.05))], room=10) == [15]
    # No ranking, or none asked for: nothing.
    assert load_model().model_copy(update={"answers": None}).likely_answered(looked, 10) == []
    assert model.model_copy(update={"answer_best": 0}).likely_answered(looked, 10) == []


def test_the_score_it_was_given_is_read_last():
    model = answering(split_on(SCORE, 0.2, 3.0, -3.0), best=1, floor=0.5)
    low, high = scored(False, score=0.1), scored(False, score=0.6)
    assert model.likely_answered([(1, high), (2, low)], room=5) == [2]


def channel(seed: int = 3, messages: int = 400) -> LogSource:
    return LogSource(parse_export(busy_channel(seed=seed, messages=messages)))


def model_threshold() -> float:
    return load_model().threshold


async def build(source: LogSource, index: int, model: RelevanceModel, max_total: int = 50):
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    builder = ContextBuilder(ContextSettings(max_total=max_total), model)
    return await builder.build(source.messages[index], reader)


# (trigger, room left under max_total, messages added): room for two or more, for one, none.
@pytest.mark.parametrize(
    ("index", "room", "extra"), [(140, None, 2), (200, None, 2), (180, 1, 1), (180, 0, 0)]
)
async def test_the_builder_adds_them_after_the_score_and_says_why(
    index: int, room: int | None, extra: int
):
    source = channel()
    unranked = load_model().model_copy(update={"answers": None})
    max_total = 50
    if room is not None:  # as many as the score takes, and ``room`` more
        max_total = len((await build(source, index, unranked)).messages) + room
    plain = await build(source, index, unranked, max_total)
    # A ranking that finds every score under the threshold likely: the builder must add the
    # best two of those the score left out (none under the floor of the best few).
    model = answering(split_on(SCORE, model_threshold(), 3.0, -3.0), best=2, floor=0.5)
    answered = await build(source, index, model, max_total)
    added = set(answered.reasons) - set(plain.reasons)
    assert len(added) == extra and len(answered.messages) == len(plain.messages) + extra
    assert len(answered.messages) <= max_total
    for message_id in added:
        reason = answered.reasons[message_id][0]
        assert reason.evidence[0] == LIKELY_ANSWERED
        assert reason.score is not None
        assert model.always_best_floor <= reason.score < model_threshold()
    # What the score chose is as it was, reasons and all.
    assert {i: answered.reasons[i] for i in plain.reasons} == plain.reasons


def _write(tmp_path: Path, weights: dict) -> Path:
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(weights), encoding="utf-8")
    return path


def test_a_ranking_for_other_features_or_a_broken_tree_is_refused_at_load(tmp_path: Path):
    model = answering(split_on(NAMED, 0.5, -4.0, 4.0), best=2, floor=0.5)
    weights = json.loads(model.model_dump_json())
    assert load_model_from(_write(tmp_path, weights)).answer_best == 2
    other = json.loads(model.model_dump_json())
    other["answers"]["features"] = other["answers"]["features"][:-1]
    other["answers"]["means"] = other["answers"]["means"][:-1]
    with pytest.raises(WeightsError, match="answers: fitted for other features"):
        load_model_from(_write(tmp_path, other))
    broken = json.loads(model.model_dump_json())
    broken["answers"]["trees"][0]["feature"][0] = len(ANSWER_FEATURES)
    with pytest.raises(WeightsError, match=r"answers\.trees\.0: node 0 points outside"):
        load_model_from(_write(tmp_path, broken))
    negative = dict(weights, answer_best=-1)
    with pytest.raises(WeightsError, match="answer_best"):
        load_model_from(_write(tmp_path, negative))
    # A count of likely answers with no ranking to take them from would do nothing, silently.
    unranked = dict(weights, answers=None)
    with pytest.raises(WeightsError, match=r"answer_best is 2 but answers .* is missing"):
        load_model_from(_write(tmp_path, unranked))
    assert load_model_from(_write(tmp_path, dict(unranked, answer_best=0))).answers is None
