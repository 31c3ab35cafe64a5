"""Fit the relevance score on the IRC training split and write conversation/relevance_weights.json.

    python -m bench.train_relevance [TRAIN_DIR] [--triggers N] [--seed S] [--dry-run]

Candidates are proposed as the builder proposes them (the temporal walk before the trigger under
sealing, at most one history page, plus the trigger's reply chain); a candidate is positive when
the gold annotation puts it in the trigger's conversation. A seeded sample of triggers keeps the
fit to a few minutes of pure Python (Newton's method on an L2-regularised logistic loss). The
default threshold and ``min_linear`` are then chosen on another seeded sample of training
triggers: the best micro F1 of the whole selection (``min_linear`` recent messages always in,
``max_total`` cap) that keeps parent recall at least 0.98, preferring more recent messages
among near-equal pairs. No figure on irc-dev is ever used.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.context_quality import gold_triggers
from conversation.relevance import (
    FEATURES,
    RELATIVE_FEATURES,
    WEIGHTS_FILE,
    Clue,
    LogisticStage,
    RelevanceModel,
    feature_rows,
    relative_rows,
    words_of,
)
from conversation.settings import ContextSettings

DEFAULT_TRAIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "irc-train"
OUTPUT = Path(__file__).resolve().parents[1] / "conversation" / WEIGHTS_FILE
DISCORD_EPOCH_MS = 1_420_070_400_000
# A first-look score at least this makes a candidate part of the conversation for the second
# look (fixed, not tuned: even odds).
ANCHOR = 0.5
MIN_LINEAR_GRID = (0, 1, 2, 3, 4, 5, 6, 8, 10)
# The defaults must keep the message a trigger answers in nearly every context.
PARENT_RECALL_FLOOR = 0.98
F1_TOLERANCE = 0.005


@dataclass
class Log:
    name: str
    clues: list[Clue]
    index: dict[int, int]
    triggers: dict[int, tuple[set[int], set[int]]]


def load_log(path: Path) -> Log:
    data = json.loads(path.read_text())
    clues = []
    for message in data["messages"]:
        message_id = int(message["id"])
        mentions = message.get("mentions") or []
        reference = message.get("reference") or {}
        content = message.get("content") or ""
        clues.append(
            Clue(
                id=message_id,
                at_ms=(message_id >> 22) + DISCORD_EPOCH_MS,
                author=int(message["author"]["id"]),
                mentions=frozenset(int(user["id"]) for user in mentions),
                reference=int(reference["messageId"]) if reference.get("messageId") else None,
                words=words_of(content, (user.get("name", "") for user in mentions)),
                question="?" in content,
                size=len(content.split()),
            )
        )
    clues.sort(key=lambda clue: clue.id)
    return Log(
        name=path.stem,
        clues=clues,
        index={clue.id: i for i, clue in enumerate(clues)},
        triggers=gold_triggers(path.with_suffix(".gold.json")),
    )


def propose(log: Log, trigger_index: int, settings: ContextSettings) -> tuple[list[Clue], set[int]]:
    """The builder's candidates for a trigger: the walk back, then the reply chain's remainder."""
    trigger = log.clues[trigger_index]
    threshold_ms = settings.time_threshold_minutes * 60_000
    walk: list[Clue] = []
    newer = trigger
    for j in range(trigger_index - 1, max(-1, trigger_index - 1 - settings.candidate_window), -1):
        clue = log.clues[j]
        sealing = len(walk) >= settings.min_linear  # the recent messages are in whatever age
        if sealing and newer.at_ms - clue.at_ms > threshold_ms:
            break
        walk.append(clue)
        newer = clue
    seen = {clue.id for clue in walk}
    chain: set[int] = set()
    current = trigger
    while current.reference is not None and len(chain) < settings.max_total:
        j = log.index.get(current.reference)
        if j is None or current.reference >= trigger.id or current.reference in chain:
            break
        current = log.clues[j]
        chain.add(current.id)
        if current.id not in seen:
            walk.append(current)
            seen.add(current.id)
    for clue in list(walk):  # what the walk replies to (free in the builder when cached)
        j = log.index.get(clue.reference) if clue.reference is not None else None
        if j is not None and clue.reference not in seen and clue.reference < trigger.id:
            walk.append(log.clues[j])
            seen.add(clue.reference)
    return walk, chain


def stage(features, means, scales, weights, bias) -> LogisticStage:
    return LogisticStage(
        features=features,
        means=tuple(round(v, 6) for v in means),
        scales=tuple(round(v, 6) for v in scales),
        weights=tuple(round(v, 6) for v in weights),
        bias=round(bias, 6),
    )


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def fit(rows: list[list[float]], labels: list[int], l2: float = 1.0, rounds: int = 6):
    """Standardise, then Newton's method; returns means, scales, weights, bias."""
    k = len(rows[0])
    n = len(rows)
    means = [sum(r[i] for r in rows) / n for i in range(k)]
    scales = []
    for i in range(k):
        var = sum((r[i] - means[i]) ** 2 for r in rows) / n
        scales.append(math.sqrt(var) if var > 1e-12 else 1.0)
    xs = [[1.0, *((r[i] - means[i]) / scales[i] for i in range(k))] for r in rows]
    w = [0.0] * (k + 1)
    pairs = [(a, b) for a in range(k + 1) for b in range(a, k + 1)]
    for round_ in range(rounds):
        grad = [0.0] * (k + 1)
        hess = [0.0] * len(pairs)
        loss = 0.0
        for x, y in zip(xs, labels, strict=True):
            z = sum(wi * xi for wi, xi in zip(w, x, strict=True))
            p = sigmoid(z)
            loss -= math.log(p if y else 1 - p + 1e-300) if 0 < p < 1 else 0.0
            g = p - y
            h = p * (1 - p)
            for i in range(k + 1):
                grad[i] += g * x[i]
            hx = [h * xi for xi in x]
            for index, (a, b) in enumerate(pairs):
                hess[index] += hx[a] * x[b]
        matrix = [[0.0] * (k + 1) for _ in range(k + 1)]
        for index, (a, b) in enumerate(pairs):
            matrix[a][b] = matrix[b][a] = hess[index]
        for i in range(1, k + 1):
            grad[i] += l2 * w[i]
            matrix[i][i] += l2
        step = solve(matrix, grad)
        w = [wi - si for wi, si in zip(w, step, strict=True)]
        print(f"  newton round {round_ + 1}: loss {loss / n:.4f}", flush=True)
    return means, scales, w[1:], w[0]


def solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the system is small and well conditioned)."""
    size = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, size):
            factor = a[r][col] / a[col][col]
            for c in range(col, size + 1):
                a[r][c] -= factor * a[col][c]
    x = [0.0] * size
    for r in range(size - 1, -1, -1):
        x[r] = (a[r][size] - sum(a[r][c] * x[c] for c in range(r + 1, size))) / a[r][r]
    return x


def sample(logs: list[Log], count: int, rng: random.Random) -> list[tuple[Log, int]]:
    everything = [(log, trigger) for log in logs for trigger in sorted(log.triggers)]
    rng.shuffle(everything)
    return everything[:count]


def choose_defaults(
    model: RelevanceModel, chosen: list[tuple[Log, int]], settings: ContextSettings
) -> tuple[tuple[int, float], dict[tuple[int, float], tuple[float, float, float, float]]]:
    """The ``min_linear`` and threshold with the best micro F1 of the whole selection.

    Returns the best pair and, for every pair tried, precision, recall, F1, parent recall.
    """
    grid = [round(0.05 + 0.025 * i, 3) for i in range(33)]
    linears = MIN_LINEAR_GRID
    hits: Counter[tuple[int, float]] = Counter()
    picked: Counter[tuple[int, float]] = Counter()
    parents_found: Counter[tuple[int, float]] = Counter()
    gold_total = with_parent = 0
    for log, trigger_id in chosen:
        gold, parents = log.triggers[trigger_id]
        index = log.index[trigger_id]
        walk, chain = propose(log, index, settings)
        results = model.score_all(log.clues[index], walk, chain)
        gold_total += len(gold)
        with_parent += bool(parents)
        parent = log.clues[index].reference
        for min_linear in linears:
            linear = [clue.id for clue in walk[:min_linear]]
            if parent is not None and parent in chain:  # the builder always takes it
                linear.append(parent)
            linear_set = set(linear)
            scored = sorted(
                (
                    (result.score, clue.id)
                    for clue, result in zip(walk, results, strict=True)
                    if clue.id not in linear_set
                ),
                reverse=True,
            )
            room = max(0, settings.max_total - len(linear))
            for threshold in grid:
                key = (min_linear, threshold)
                extra = [cid for score, cid in scored if score >= threshold][:room]
                context = linear_set.union(extra)
                hits[key] += len(context & gold)
                picked[key] += len(context)
                parents_found[key] += bool(context & parents)
    table = {}
    for key in hits.keys() | picked.keys():
        p = hits[key] / picked[key] if picked[key] else 0.0
        r = hits[key] / gold_total if gold_total else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        table[key] = (p, r, f, parents_found[key] / max(with_parent, 1))
    allowed = [key for key in table if table[key][3] >= PARENT_RECALL_FLOOR] or list(table)
    top = max(table[key][2] for key in allowed)
    # The optimum is flat: among pairs within F1_TOLERANCE of it, keep the most recent messages
    # (a context that always shows what was just said is the safer default on other servers).
    near = [key for key in allowed if table[key][2] >= top - F1_TOLERANCE]
    best = max(near, key=lambda key: (key[0], table[key][2], key[1]))
    return best, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--triggers", type=int, default=2000, help="triggers sampled for the fit")
    parser.add_argument("--threshold-triggers", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--dry-run", action="store_true", help="do not write the weights")
    args = parser.parse_args()
    started = time.perf_counter()
    settings = ContextSettings()
    paths = sorted(p for p in args.data.glob("*.json") if not p.name.endswith(".gold.json"))
    logs = [load_log(path) for path in paths]
    print(f"{len(logs)} logs, {sum(len(log.triggers) for log in logs)} triggers", flush=True)
    rng = random.Random(args.seed)
    picked = sample(logs, args.triggers + args.threshold_triggers, rng)
    fit_set, threshold_set = picked[: args.triggers], picked[args.triggers :]

    examples = []
    labels: list[int] = []
    covered = gold_total = 0
    for log, trigger_id in fit_set:
        gold, _parents = log.triggers[trigger_id]
        index = log.index[trigger_id]
        walk, chain = propose(log, index, settings)
        examples.append((log.clues[index], walk, chain))
        labels.extend(int(clue.id in gold) for clue in walk)
        covered += sum(clue.id in gold for clue in walk)
        gold_total += len(gold)
    print(
        f"{len(labels)} candidates, {sum(labels)} positive; the candidates hold "
        f"{covered / gold_total:.3f} of the gold context",
        flush=True,
    )
    rows = [row for trigger, walk, chain in examples for row in feature_rows(trigger, walk, chain)]
    print("first look:", flush=True)
    first = stage(FEATURES, *fit(rows, labels))
    placeholder = LogisticStage(
        features=FEATURES + RELATIVE_FEATURES,
        means=(0.0,) * len(FEATURES + RELATIVE_FEATURES),
        scales=(1.0,) * len(FEATURES + RELATIVE_FEATURES),
        weights=(0.0,) * len(FEATURES + RELATIVE_FEATURES),
        bias=0.0,
    )
    model = RelevanceModel(
        first=first,
        second=placeholder,
        anchor=ANCHOR,
        threshold=0.5,
        trained_on=f"irc-train, {len(fit_set)} triggers, seed {args.seed}",
    )
    rows2 = []
    for trigger, walk, chain in examples:
        base, scores, idf = model.first_look(trigger, walk, chain)
        anchors = {c.id for c, p in zip(walk, scores, strict=True) if p >= ANCHOR}
        extra = relative_rows(trigger, walk, anchors, idf)
        rows2.extend(b + e for b, e in zip(base, extra, strict=True))
    print("second look:", flush=True)
    second = stage(FEATURES + RELATIVE_FEATURES, *fit(rows2, labels))
    model = model.model_copy(update={"second": second})
    (min_linear, threshold), table = choose_defaults(model, threshold_set, settings)
    for key in sorted(table):
        if (key[0] == min_linear and abs(key[1] - threshold) < 0.11) or key[1] == threshold:
            p, r, f, parent = table[key]
            mark = " <- default" if key == (min_linear, threshold) else ""
            print(
                f"  min_linear {key[0]:>2} threshold {key[1]:.3f}: P {p:.3f} R {r:.3f} "
                f"F1 {f:.3f} parent recall {parent:.3f}{mark}"
            )
    model = model.model_copy(update={"threshold": threshold})
    for name, weight in sorted(
        zip(second.features, second.weights, strict=True), key=lambda x: -abs(x[1])
    ):
        print(f"  {weight:+.3f}  {name}")
    if not args.dry_run:
        OUTPUT.write_text(json.dumps(model.model_dump(), indent=1) + "\n")
        print(f"wrote {OUTPUT}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
