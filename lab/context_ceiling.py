"""Where the context's F1 is lost: outside the candidates, past ``max_total``, or at the cut.

    python -m lab.context_ceiling [DATA_DIR] [--folds MANIFEST]

Every trigger is replayed as the trainer replays it (``lab.train_relevance.propose``: a warm
build's candidates, as ``lab.context_quality --warm`` replays them; the builder's choice,
``RelevanceModel.entering``, then ``likely_answered``) with the shipped
weights, or with ``--folds`` each fold's weights on its held-out logs (``lab.relevance_folds``
writes the manifest). It prints:

- where the gold context lies: outside the candidates (past the cached window), among them
  but past ``max_total``, or within reach;
- the selection against two ceilings: the score's own ranking cut at each trigger's true count
  of gold candidates (what a perfect "how much of this belongs" would give), and the best any
  selection of these candidates could do;
- precision and recall by the size of the trigger's conversation, so a change that helps long
  conversations and hurts short ones shows.

Micro figures over all triggers, as ``lab.context_quality`` scores them. Never fit anything
on what this prints for irc-dev.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conversation.common import ContextSettings
from conversation.replay import Score
from conversation.selection import RelevanceModel, WeightsError, load_model, load_model_from
from lab.context_quality import FoldError, read_manifest
from lab.options import lab_options
from lab.train_relevance import DEFAULT_TRAIN, Log, load_log, propose

# Conversation sizes (earlier messages of the trigger's conversation), upper bounds.
SIZES = (1, 5, 15, 30, 60)


@dataclass(frozen=True)
class Outcome:
    """One trigger: its gold context and parents, and what each selection picked."""

    gold: int
    gold_candidates: int
    has_parent: bool
    picks: dict[str, tuple[int, int, bool]]  # selection -> picked, hits, parent found


def _best_first(item: tuple[int, float]) -> tuple[float, int]:
    """Highest score first; on a tie, the newest (the builder's order)."""
    return -item[1], -item[0]


def _replay(
    model: RelevanceModel,
    every: RelevanceModel,
    log: Log,
    trigger_id: int,
    settings: ContextSettings,
) -> Outcome:
    """One trigger replayed; ``every`` is ``model`` looking at every candidate twice."""
    gold, parents = log.triggers[trigger_id]
    index = log.index[trigger_id]
    trigger = log.clues[index]
    walk, chain = propose(log, index, settings)
    ids = [clue.id for clue in walk]
    fixed = ids[: min(settings.min_linear, settings.max_total)]
    threshold = settings.relevance_threshold
    threshold = model.threshold if threshold is None else threshold
    everything = every.score_threads(trigger, walk, chain)
    full = [result.score for result in everything]
    scored = everything  # a threshold under the floor: the builder looks at every candidate too
    if threshold >= model.second_look_floor:
        scored = model.score_threads(trigger, walk, chain, fixed)
    results = dict(zip(ids, scored, strict=True))
    by_id = {message_id: result.score for message_id, result in results.items()}
    replied_to = trigger.reference if trigger.reference in chain else None
    if replied_to is not None and replied_to not in fixed and len(fixed) < settings.max_total:
        fixed.append(replied_to)
    chosen = fixed + model.entering(
        sorted(by_id.items(), key=_best_first),
        fixed,
        threshold=threshold,
        room=settings.max_total - len(fixed),
        taken=1 if replied_to is not None else 0,
    )
    chosen += model.likely_answered(
        ((i, result) for i, result in results.items() if i not in chosen),
        room=settings.max_total - len(chosen),
    )
    # The ranking below reads every candidate's second look: the floor's first-look scores
    # would rank among second-look ones.
    ranked = sorted(zip(ids, full, strict=True), key=_best_first)
    gold_candidates = [message_id for message_id in by_id if message_id in gold]
    # The same ranking, cut at the number of gold candidates (at least one, at most the cap).
    count = max(1, min(len(gold_candidates), settings.max_total))
    sized = fixed + [i for i, _ in ranked if i not in fixed][: max(0, count - len(fixed))]
    best = gold_candidates[: settings.max_total]

    def outcome(ids: list[int]) -> tuple[int, int, bool]:
        return len(ids), sum(i in gold for i in ids), any(i in parents for i in ids)

    return Outcome(
        gold=len(gold),
        gold_candidates=len(gold_candidates),
        has_parent=bool(parents),
        picks={
            "the builder's (the score, its threshold)": outcome(chosen),
            "the score's ranking, cut at the true count": outcome(sized),
            "best possible of these candidates": outcome(best),
        },
    )


def outcomes(data: Path, settings: ContextSettings, manifest: Path | None) -> Iterator[Outcome]:
    """Every trigger of ``data`` replayed with the shipped weights, or with ``manifest`` each
    fold's weights on its held-out logs."""
    if manifest is None:
        paths = sorted(p for p in data.glob("*.json") if not p.name.endswith(".gold.json"))
        plan = [(None, [p.stem for p in paths], settings.min_linear)]
    else:
        plan = read_manifest(manifest, settings)
    for weights, held_out, min_linear in plan:
        model = load_model() if weights is None else load_model_from(weights)
        every = model.model_copy(update={"second_look_floor": 0.0})
        fold_settings = settings.model_copy(update={"min_linear": min_linear})
        for name in held_out:
            log = load_log(data / f"{name}.json")
            for trigger_id in sorted(log.triggers):
                yield _replay(model, every, log, trigger_id, fold_settings)


def _size_label(gold: int) -> str:
    lower = 1
    for upper in SIZES:
        if gold <= upper:
            return f"{lower}" if lower == upper else f"{lower} to {upper}"
        lower = upper + 1
    return f"over {SIZES[-1]}"


def report(found: list[Outcome], settings: ContextSettings) -> str:
    """The three tables, as Markdown."""
    gold = sum(o.gold for o in found)
    reachable = sum(min(o.gold_candidates, settings.max_total) for o in found)
    candidates = sum(o.gold_candidates for o in found)
    with_parent = sum(o.has_parent for o in found)
    lines = [
        f"{len(found)} triggers, {gold} earlier messages of their conversations; "
        f"max_total {settings.max_total}",
        "",
        "| the gold context | share |",
        "|---|---|",
        f"| outside the candidates | {(gold - candidates) / gold:.3f} |",
        f"| among them, past max_total | {(candidates - reachable) / gold:.3f} |",
        f"| within reach | {reachable / gold:.3f} |",
        "",
        "| selection | precision | recall | F1 | parent recall | picked |",
        "|---|---|---|---|---|---|",
    ]
    for name in found[0].picks:
        score = Score(
            hits=sum(o.picks[name][1] for o in found),
            selected=sum(o.picks[name][0] for o in found),
            gold=gold,
            triggers=len(found),
            with_parent=with_parent,
            parent_found=sum(o.picks[name][2] for o in found if o.has_parent),
        )
        lines.append(
            f"| {name} | {score.precision:.3f} | {score.recall:.3f} | {score.f1:.3f} "
            f"| {score.parent_recall:.3f} | {score.selected / score.triggers:.1f} |"
        )
    lines += [
        "",
        "| conversation size | triggers | share of gold | gold candidates | picked "
        "| precision | recall |",
        "|---|---|---|---|---|---|---|",
    ]
    builder = next(iter(found[0].picks))
    buckets: dict[str, Counter[str]] = {}
    for o in sorted(found, key=lambda o: o.gold):  # the sizes in order
        bucket = buckets.setdefault(_size_label(o.gold), Counter())
        picked, hits, _ = o.picks[builder]
        bucket.update(triggers=1, gold=o.gold, candidates=o.gold_candidates)
        bucket.update(picked=picked, hits=hits)
    for label, b in buckets.items():
        lines.append(
            f"| {label} | {b['triggers']} | {b['gold'] / gold:.3f} "
            f"| {b['candidates'] / b['triggers']:.1f} | {b['picked'] / b['triggers']:.1f} "
            f"| {b['hits'] / max(b['picked'], 1):.3f} | {b['hits'] / b['gold']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[lab_options(DEFAULT_TRAIN, fold_weights=True)],
    )
    args = parser.parse_args()
    if not any(args.data.glob("*.gold.json")):
        parser.exit(2, f"error: {args.data}: no scored logs here (*.json with a .gold.json)\n")
    # One cap: the trainer's simulation, which this compares with, does not model a channel's
    # running cap (``conversation.selection.length``; docs/experiments.md).
    settings = ContextSettings(max_total_long=ContextSettings().max_total)
    try:
        found = list(outcomes(args.data, settings, args.folds))
    except (FoldError, WeightsError) as error:
        parser.exit(2, f"error: {error}\n")
    if not found:
        parser.exit(2, f"error: {args.data}: no triggers in these logs\n")
    print(report(found, settings))


if __name__ == "__main__":
    main()
