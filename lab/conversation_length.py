"""The cap on a context per channel, from how long its conversations run: a study on the folds.

    python -m lab.conversation_length TRAIN_DIR --folds MANIFEST [--warm] [--cache FILE]

Every held-out trigger of each fold is scored once with its fold's weights (the trainer's
simulation of the builder: ``lab.train_relevance.propose``, the warm walk or, without
``--warm``, the one history page of a cold build), and kept in ``--cache``; then each cap rule
chooses as the builder does (the recent message, the one replied to, the candidates over the
threshold best first, the likeliest answered) and the rules are compared: one cap for every
channel, and ``conversation.selection.length.ConversationLengths`` (the cap of each channel
from what its earlier builds asked for) at several ceilings and quantiles. It prints the
pooled figures, the mean cap, and the logs that gain or lose more than 0.02 F1 against the
cap of 50. The real builder confirms a rule: ``lab.context_quality --folds MANIFEST --set
max_total_long=N``.
"""

from __future__ import annotations

import argparse
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversation.common import ContextSettings
from conversation.selection import ConversationLengths, RelevanceModel, load_model_from
from lab.context_quality import read_manifest
from lab.train_relevance import answer_chances, build_modes, load_log, propose


@dataclass
class Trigger:
    """What a cap rule needs of one trigger: its candidates' scores and labels."""

    ids: np.ndarray
    scores: np.ndarray
    gold: np.ndarray
    parent: np.ndarray
    gold_count: int
    has_parent: bool
    reference: int | None
    chain: set[int]
    chances: list[tuple[float, int]]


def records(
    data: Path, manifest: Path, warm: bool, meanings: Path | None = None
) -> dict[str, tuple[int, list[Trigger]]]:
    """Per held-out log: its fold and its triggers, in order, scored with the fold's weights."""
    settings = ContextSettings(max_total=1000)
    mode = build_modes(settings)[0 if warm else -1]
    found: dict[str, tuple[int, list[Trigger]]] = {}
    for fold, (weights, held_out, _) in enumerate(read_manifest(manifest, settings), start=1):
        model = load_model_from(weights)
        for name in held_out:
            log = load_log(data / f"{name}.json", meanings)
            triggers = []
            for trigger_id in sorted(log.triggers):
                gold, parents = log.triggers[trigger_id]
                index = log.index[trigger_id]
                walk, chain = propose(log, index, mode)
                scored = model.score_threads(log.clues[index], walk, chain)
                triggers.append(
                    Trigger(
                        ids=np.array([c.id for c in walk], dtype=np.int64),
                        scores=np.array([r.score for r in scored]),
                        gold=np.array([c.id in gold for c in walk], dtype=bool),
                        parent=np.array([c.id in parents for c in walk], dtype=bool),
                        gold_count=len(gold),
                        has_parent=bool(parents),
                        reference=log.clues[index].reference,
                        chain=chain,
                        chances=answer_chances(model, walk, scored),
                    )
                )
            found[name] = (fold, triggers)
            print(f"fold {fold}: {name} ({len(triggers)} triggers)", flush=True)
    return found


def choose(t: Trigger, model: RelevanceModel, cap: int, min_linear: int = 1) -> tuple[list, int]:
    """The builder's choice at ``cap`` (``lab.train_relevance._tally``'s rule for one choice)
    and how many messages the score asked for (``Scoring.asked``)."""
    n = len(t.scores)
    fixed = list(range(min(min_linear, n)))
    if t.reference is not None and t.reference in t.chain:
        at = int(np.nonzero(t.ids == t.reference)[0][0])
        if at not in fixed and len(fixed) < cap:
            fixed.append(at)
    inside = set(fixed)
    order = [i for i in np.lexsort((-t.ids, -t.scores)).tolist() if i not in inside]
    over = sum(1 for i in order if t.scores[i] >= model.threshold)
    room = max(0, cap - len(fixed))
    worth = sum(1 for i in order if t.scores[i] >= model.always_best_floor)
    replied = int(t.reference is not None and t.reference in t.chain)
    count = min(room, max(min(max(0, model.always_best - replied), worth), over))
    picked = fixed + order[:count]
    inside = set(picked)
    left = [(c, i) for c, i in t.chances if i not in inside][: max(0, min(8, room - count))]
    reach = sum(c >= model.answer_floor for c, _ in left)
    picked += [i for _, i in left[: min(model.answer_best, reach)]]
    return picked, len(fixed) + over


Counts = tuple[int, int, int, int, int]  # hits, picked, gold, with parent, parent found


def run(
    logs: dict[str, tuple[int, list[Trigger]]],
    models: dict[int, RelevanceModel],
    rule: tuple[int, int, float],
) -> tuple[Counts, dict[str, Counts], float]:
    """Pooled and per-log counts of a cap rule (``max_total``, ``max_total_long``, quantile:
    ``ConversationLengths.cap`` per log, as per channel), and the mean cap."""
    base, ceiling, quantile = rule
    total = [0] * 5
    per_log: dict[str, Counts] = {}
    caps = []
    for name, (fold, triggers) in logs.items():
        model = models[fold]
        lengths = ConversationLengths(quantile=quantile)
        counts = [0] * 5
        for t in triggers:
            cap = lengths.cap(0, base, ceiling).total
            caps.append(cap)
            picked, asked = choose(t, model, cap)
            lengths.record(0, asked)
            counts[0] += int(t.gold[picked].sum())
            counts[1] += len(picked)
            counts[2] += t.gold_count
            counts[3] += t.has_parent
            counts[4] += int(t.has_parent and bool(t.parent[picked].any()))
        per_log[name] = (counts[0], counts[1], counts[2], counts[3], counts[4])
        total = [a + b for a, b in zip(total, counts, strict=True)]
    return (total[0], total[1], total[2], total[3], total[4]), per_log, float(np.mean(caps))


def figures(c: Counts) -> tuple[float, float, float, float]:
    p = c[0] / max(c[1], 1)
    r = c[0] / max(c[2], 1)
    return p, r, 2 * p * r / (p + r) if p + r else 0.0, c[4] / max(c[3], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--folds", type=Path, required=True, metavar="MANIFEST")
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--meanings", type=Path, help="lab.meanings' cache, for such weights")
    parser.add_argument("--cache", type=Path, help="the scored triggers, kept between runs")
    args = parser.parse_args()
    if args.cache is not None and args.cache.exists():
        logs = pickle.loads(args.cache.read_bytes())
    else:
        logs = records(args.data, args.folds, args.warm, args.meanings)
        if args.cache is not None:
            args.cache.write_bytes(pickle.dumps(logs, protocol=pickle.HIGHEST_PROTOCOL))
    settings = ContextSettings()
    models = {
        k: load_model_from(weights)
        for k, (weights, _, _) in enumerate(read_manifest(args.folds, settings), start=1)
    }
    base = settings.max_total
    rules: dict[str, tuple[int, int, float]] = {
        f"one cap, {cap}": (cap, cap, 0.9) for cap in (base, 60, 80, 120)
    }
    for ceiling in (80, 120):
        for quantile in (0.8, 0.9, 0.95):
            rules[f"per channel, up to {ceiling}, quantile {quantile}"] = (base, ceiling, quantile)
    _, reference, _ = run(logs, models, rules[f"one cap, {base}"])
    print(f"{'warm' if args.warm else 'cold (one page)'}, {len(logs)} logs")
    print("| cap | precision | recall | F1 | parent recall | mean cap | logs +0.02 | logs -0.02 |")
    print("|---|---|---|---|---|---|---|---|")
    for label, rule in rules.items():
        total, per_log, mean_cap = run(logs, models, rule)
        change = [figures(per_log[n])[2] - figures(reference[n])[2] for n in per_log]
        p, r, f, parent = figures(total)
        gain = sum(c > 0.02 for c in change)
        loss = sum(c < -0.02 for c in change)
        print(
            f"| {label} | {p:.3f} | {r:.3f} | {f:.3f} | {parent:.3f} | {mean_cap:.1f} "
            f"| {gain} | {loss} |"
        )


if __name__ == "__main__":
    main()
