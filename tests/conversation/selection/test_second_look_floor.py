"""The second look skips what the first look finds plainly elsewhere, and changes nothing else."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.addressing import with_written_addresses
from conversation.selection.builder import ContextBuilder
from conversation.selection.clues import clue_of
from conversation.selection.features import relative_rows
from conversation.selection.reach import reach_rows
from conversation.selection.relevance import RelevanceModel, Scored
from conversation.selection.weights import WeightsError, load_model, load_model_from
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.synthetic import busy_channel


def channel(seed: int = 3, messages: int = 400) -> LogSource:
    return LogSource(parse_export(busy_channel(seed=seed, messages=messages)))


def walk_of(source: LogSource, index: int, length: int = 150):
    """A trigger and the candidates before it, newest first, as the builder's walk finds them."""
    trigger = clue_of(source.messages[index])
    history = [clue_of(m) for m in reversed(source.messages[index - length : index])]
    return with_written_addresses(trigger, history)


def floored(floor: float) -> RelevanceModel:
    return load_model().model_copy(update={"second_look_floor": floor})


def test_rows_for_some_candidates_are_the_rows_for_all_at_those_places():
    trigger, candidates = walk_of(channel(), 300)
    model = load_model()
    _, first, idf = model.first_look(trigger, candidates, set())
    anchors = {c.id for c, p in zip(candidates, first, strict=True) if p >= model.anchor}
    some = [0, 3, 7, 40, 41, 99, 149]
    every_relative = relative_rows(trigger, candidates, anchors, idf)
    every_reach = reach_rows(trigger, candidates, first)
    assert anchors  # the conversation found is not empty, so the rows say something
    assert relative_rows(trigger, candidates, anchors, idf, some) == [
        every_relative[i] for i in some
    ]
    assert reach_rows(trigger, candidates, first, some) == [every_reach[i] for i in some]


@pytest.mark.parametrize("index", [180, 260, 399])
def test_under_the_floor_the_first_look_stands_and_every_other_score_is_unchanged(index: int):
    trigger, candidates = walk_of(channel(), index)
    everything = floored(0.0).score_threads(trigger, candidates, set())
    model = floored(0.02)
    skipping = model.score_threads(trigger, candidates, set())
    _, first, _ = model.first_look(trigger, candidates, set())
    skipped = 0
    for p, full, quick in zip(first, everything, skipping, strict=True):
        if p < 0.02:
            skipped += 1
            assert quick == Scored(p, ())
            assert model.evidence(quick) == ()
        else:
            assert quick == full
    assert 0 < skipped < len(candidates)


def test_the_reply_thread_the_chain_and_the_kept_are_looked_at_whatever_their_first_look():
    source = channel()
    trigger, candidates = walk_of(source, 300)
    model = floored(0.05)
    _, first, _ = model.first_look(trigger, candidates, set())
    low = [c.id for c, p in zip(candidates, first, strict=True) if p < 0.02]
    kept, chained = low[0], low[1]
    replied = candidates[[c.id for c in candidates].index(low[2])]
    trigger = replace(trigger, reference=replied.id)
    everything = floored(0.0).score_threads(trigger, candidates, {chained}, {kept})
    scored = model.score_threads(trigger, candidates, {chained}, {kept})
    by_id = {c.id: s for c, s in zip(candidates, scored, strict=True)}
    full = {c.id: s for c, s in zip(candidates, everything, strict=True)}
    for message_id in (kept, chained, replied.id):
        assert by_id[message_id] == full[message_id] and by_id[message_id].row
    assert by_id[replied.id].in_thread and by_id[replied.id].score == 1.0


async def build(source: LogSource, index: int, model: RelevanceModel, **settings):
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    builder = ContextBuilder(ContextSettings(**settings), model)
    return await builder.build(source.messages[index], reader)


@pytest.mark.parametrize("index", [150, 280, 399])
async def test_the_builder_tells_every_recent_messages_reason_and_lets_no_skipped_one_in(
    index: int,
):
    source = channel()
    model = floored(0.05)
    linear = 25  # enough recent messages that some are plainly elsewhere
    skipping = await build(source, index, model, min_linear=linear)
    for reasons in skipping.reasons.values():
        first = reasons[0]
        assert first.score is not None
        if first.kind != "linear":  # in by its score: it was looked at twice
            assert first.score >= model.always_best_floor
    # The recent messages are in whatever their score, and their reasons are told in full.
    everything = await build(source, index, floored(0.0), min_linear=linear)
    for message in source.messages[index - linear : index]:
        assert skipping.reasons[message.id] == everything.reasons[message.id]
    # A threshold under the floor needs every score: the selection is the one without skipping.
    low = dict(relevance_threshold=0.01)
    assert (await build(source, index, model, **low)).reasons == (
        await build(source, index, floored(0.0), **low)
    ).reasons


def test_a_floor_above_the_best_few_floor_is_refused_at_load(tmp_path: Path):
    weights = json.loads(load_model().model_dump_json())
    weights["second_look_floor"] = weights["always_best_floor"] + 0.01
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(weights), encoding="utf-8")
    with pytest.raises(WeightsError, match="second_look_floor must lie between 0 and"):
        load_model_from(path)
    weights["second_look_floor"] = weights["always_best_floor"]
    path.write_text(json.dumps(weights), encoding="utf-8")
    assert load_model_from(path).second_look_floor == weights["always_best_floor"]
