"""Fit the follow decision on the IRC training split and write
conversation/selection/follow_weights.json.

    python -m lab.train_follow [TRAIN_DIR] [--dry-run] [--hold-out FRACTION] [--meanings DIR]

The messages are those ``lab.follow`` decides (the three most active annotated speakers of each
log standing in for the bot), from irc-train only. The rules decide the messages that call
someone (a mention or a reply to someone else: never followed); the others are described by
``conversation.selection.follow_model.FOLLOW_FEATURES`` (numpy, a training-only dependency:
``pip install -e '.[train]'``). Two stages: a logistic model over the relevance rows of the
earlier messages says which one a message likely answers (a gold parent); boosted trees over the
follow features, that parent evidence among them, decide. The default threshold is chosen on
out-of-fold scores (the trees refitted on three quarters of the training logs, scoring the
fourth, four times), favouring precision (a bot that interrupts is worse than one that waits to
be called): the best F1 among thresholds whose precision is at least ``PRECISION_FLOOR``.
No figure on irc-dev is ever used. With ``--meanings DIR`` (``lab.meanings``' cache) the trees
read ``MEANING_FOLLOW_FEATURES`` too (``conversation.selection.follow_meaning``), written to
``--out`` (nothing is shipped that way unless it is the package's file).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

from conversation.selection import (
    FOLLOW_FEATURES,
    FOLLOW_WEIGHTS_FILE,
    MEANING_FOLLOW_FEATURES,
    SECOND_FEATURES,
    WINDOW_MESSAGES,
    FollowModel,
    LogisticStage,
    TreeStage,
    explicit,
    follow_row,
    load_model,
    relevance_fingerprint,
    written,
)
from lab.boosting import fit_logistic, fit_trees
from lab.follow import DATA, SPEAKERS, Item, all_items, logs_in
from lab.options import lab_options

OUTPUT = Path(__file__).resolve().parents[1] / "conversation" / "selection" / FOLLOW_WEIGHTS_FILE
PRECISION_FLOOR = 0.78
L2 = 1.0
TREES = 150
DEPTH = 4
RATE = 0.1
MIN_HESSIAN = 10.0
FOLDS = 4


def rows_of(
    decided: list[Item], parent: LogisticStage | None = None, meaning: bool = False
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Feature rows and labels of the messages the model decides, the gold follow-ups the
    rules turn down (they count as missed), and the relevance rows of the earlier messages
    with whether each is a gold parent (what the parent stage is fitted on)."""
    relevance = load_model()
    rows: list[list[float]] = []
    labels: list[int] = []
    pair_rows: list[tuple[float, ...]] = []
    pair_labels: list[int] = []
    ruled_out = 0
    for item in decided:
        clue = item.clue
        earlier = item.earlier
        authors = {c.id: c.author for c in earlier[-200:]}
        ruled = explicit(clue, item.speaker, authors.get) or written(
            clue, item.speaker, earlier[-WINDOW_MESSAGES:]
        )
        if ruled is not None:  # not the model's to decide
            if not ruled.answer:  # a name written to the bot is answered by the rule
                ruled_out += item.follow_up
            continue
        found = follow_row(item.speaker, earlier, clue, relevance, WINDOW_MESSAGES, parent, meaning)
        if found is None:
            ruled_out += item.follow_up
            continue
        rows.append(found.row)
        labels.append(int(item.follow_up))
        gold = item.log.parents.get(clue.id, set())
        pair_rows.extend(found.relevance_rows)
        pair_labels.extend(int(c.id in gold) for c in found.earlier)
    return (
        np.array(rows),
        np.array(labels, dtype=float),
        ruled_out,
        np.array(pair_rows),
        np.array(pair_labels, dtype=float),
    )


def trees(x: np.ndarray, y: np.ndarray) -> TreeStage:
    base, fitted = fit_trees(x, y, trees=TREES, depth=DEPTH, rate=RATE, min_hessian=MIN_HESSIAN)
    return TreeStage(
        features=FOLLOW_FEATURES if x.shape[1] == len(FOLLOW_FEATURES) else MEANING_FOLLOW_FEATURES,
        means=tuple(round(v, 6) for v in x.mean(axis=0).tolist()),
        base=round(base, 6),
        trees=tuple(fitted),
    )


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> np.ndarray:
    """Each message scored by trees fitted without its log (folds of whole logs)."""
    logs = np.unique(groups)
    np.random.RandomState(seed).shuffle(logs)
    scores = np.zeros(len(y))
    for fold in range(FOLDS):
        held = np.isin(groups, logs[fold::FOLDS])
        print(f"fold {fold + 1} of {FOLDS}:", flush=True)
        stage = trees(x[~held], y[~held])
        scores[held] = [stage.probability(row) for row in x[held].tolist()]
    return scores


def logistic(features: tuple[str, ...], x: np.ndarray, y: np.ndarray) -> LogisticStage:
    means, scales, weights, bias = fit_logistic(x, y, l2=L2)
    return LogisticStage(
        features=features,
        means=tuple(round(v, 6) for v in means),
        scales=tuple(round(v, 6) for v in scales),
        weights=tuple(round(v, 6) for v in weights),
        bias=round(bias, 6),
    )


def choose_threshold(
    scores: np.ndarray, labels: np.ndarray, missed: int
) -> tuple[float, list[tuple[float, float, float, float]]]:
    """The best F1 whose precision is at least the floor; the curve it was chosen from."""
    gold = labels.sum() + missed
    curve = []
    for threshold in np.round(np.arange(0.10, 0.95, 0.01), 2):
        predicted = scores >= threshold
        tp = float((predicted & (labels > 0)).sum())
        p = tp / predicted.sum() if predicted.sum() else 0.0
        r = tp / gold if gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        curve.append((float(threshold), p, r, f))
    allowed = [c for c in curve if c[1] >= PRECISION_FLOOR] or curve
    best = max(allowed, key=lambda c: (c[3], c[0]))
    return best[0], curve


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Word-overlap sums follow set order, which follows string hashing: a fixed seed makes
        # the weights file identical from run to run (as in lab.train_relevance).
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "lab.train_follow", *sys.argv[1:]])
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[lab_options(DATA / "irc-train", seed=True, writes_weights=True)],
    )
    parser.add_argument(
        "--meanings",
        type=Path,
        help="lab.meanings' cache: fit the meaning features too (written to --out)",
    )
    parser.add_argument("--out", type=Path, default=OUTPUT, help="where the weights go")
    args = parser.parse_args()
    started = time.perf_counter()
    meaning = args.meanings is not None
    logs = logs_in(args.data, args.meanings)
    held: list = []
    if args.hold_out:
        random.Random(args.seed).shuffle(logs)
        cut = round(len(logs) * args.hold_out)
        held, logs = logs[:cut], logs[cut:]
        args.dry_run = True
    decided = all_items(logs, SPEAKERS)
    _, _, _, px, py = rows_of(decided)
    print(f"parent stage: {len(py)} earlier messages, {int(py.sum())} gold parents", flush=True)
    parent = logistic(SECOND_FEATURES, px, py)
    per_log = [rows_of(all_items([log], SPEAKERS), parent, meaning) for log in logs]
    x = np.vstack([part[0] for part in per_log if len(part[1])])
    y = np.concatenate([part[1] for part in per_log])
    groups = np.concatenate([np.full(len(part[1]), i) for i, part in enumerate(per_log)])
    missed = sum(part[2] for part in per_log)
    print(
        f"{len(logs)} logs, {len(decided)} messages decided, {len(y)} scored "
        f"({int(y.sum())} follow-ups), {missed} follow-ups turned down by the rules",
        flush=True,
    )
    threshold, curve = choose_threshold(out_of_fold(x, y, groups, args.seed), y, missed)
    for t, p, r, f in curve:
        if abs(t - threshold) <= 0.1 + 1e-9:
            mark = " <- default" if t == threshold else ""
            print(f"  out of fold, threshold {t:.2f}: P {p:.3f} R {r:.3f} F1 {f:.3f}{mark}")
    print("all training logs:", flush=True)
    model = FollowModel(
        parent=parent,
        stage=trees(x, y),
        threshold=threshold,
        trained_on=f"irc-train, {len(logs)} logs, {SPEAKERS} speakers each, {len(y)} messages",
        relevance_sha256=relevance_fingerprint(),
    )
    if held:
        hx, hy, hmissed, _, _ = rows_of(all_items(held, SPEAKERS), parent, meaning)
        hscores = np.array([model.score(row) for row in hx.tolist()])
        _, hcurve = choose_threshold(hscores, hy, hmissed)
        t, p, r, f = next(c for c in hcurve if c[0] == threshold)
        print(f"held out ({len(held)} logs): P {p:.3f} R {r:.3f} F1 {f:.3f} at {t:.2f}")
    if not args.dry_run:
        args.out.write_text(json.dumps(model.model_dump(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
