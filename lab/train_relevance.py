"""Fit the relevance score on the IRC training split and write
conversation/selection/relevance_weights.json.

    python -m lab.train_relevance [TRAIN_DIR] [--triggers N] [--seed S] [--dry-run] [--out PATH]
        [--fitter lightgbm|numpy] [--looks 2|3] [--prefer recall|recent]

Candidates are proposed as the builder proposes them (``propose``: the temporal walk before the
trigger up to a silence, the recent messages, the trigger's reply chain, what they reply to); a
candidate is positive when the gold annotation puts it in the trigger's conversation. A seeded
sample of triggers keeps the fit to a few minutes (scikit-learn and LightGBM, training-only
dependencies: ``pip install -e '.[train]'``; ``--fitter numpy`` is the project's own
``lab.boosting``, kept to compare): the first look is a logistic model, the second boosted trees
over its features, the relative ones and the reach ones (``conversation.selection.reach``);
``--looks 3`` adds a third. Trees ranking which candidate the trigger answers (its gold parent) are
fitted on the same triggers. The default threshold, ``min_linear``, how many best-scored candidates
are always in and how many of the likeliest answered ones enter (from what chance) are then chosen
on another seeded sample of training triggers: the best micro F1 of the whole selection
(``max_total`` cap) that keeps parent recall at least 0.985 (0.98 on logs never seen, with a
margin); among choices within 0.005 of it, the most recent messages and then the best F1 (``--prefer
recall``: the highest recall). No figure on irc-dev is ever used; ``python -m lab.relevance_folds``
measures a change on irc-train's logs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from conversation.common import ContextSettings
from conversation.selection import (
    ANSWER_SCORE,
    FEATURES,
    MEANING_SECOND_FEATURES,
    MEANING_WEIGHTS_FILE,
    PARENT_NEIGHBOURS,
    SECOND_FEATURES,
    THIRD_FEATURES,
    WEIGHTS_FILE,
    Clue,
    LogisticStage,
    RelevanceModel,
    Scored,
    TreeStage,
    feature_rows,
    name_keys,
    opening_of,
    thread_scores,
    with_addresses,
    words_of,
)
from conversation.sources import PAGE_LIMIT
from lab.context_quality import gold_triggers
from lab.options import lab_options

DEFAULT_TRAIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "irc-train"
OUTPUT = Path(__file__).resolve().parents[1] / "conversation" / "selection" / WEIGHTS_FILE
MEANING_OUTPUT = OUTPUT.with_name(MEANING_WEIGHTS_FILE)
DISCORD_EPOCH_MS = 1_420_070_400_000
# A first-look score at least this makes a candidate part of the conversation for the second
# look (fixed, not tuned: even odds).
ANCHOR = 0.5
# A first-look score under this skips the second look (``RelevanceModel.second_look_floor``):
# on the four folds of irc-train, warm, it leaves every figure as it was and takes 30% off the
# score's time in busy channels (docs/experiments.md, "The second-look floor").
SECOND_LOOK_FLOOR = 0.02
MIN_LINEAR_GRID = (0, 1, 2, 3, 4, 5, 6, 8, 10)
ALWAYS_BEST_GRID = (0, 1, 2, 3, 4, 5, 6, 8)
# The trees: enough to see interactions, few enough to score a hundred candidates in about a
# millisecond.
TREES = 80
DEPTH = 4
RATE = 0.2
MIN_HESSIAN = 20.0  # a leaf stands for at least about a hundred and fifty candidates
# The defaults must keep the message a trigger answers in nearly every context: 0.98 on logs
# never seen. The sampled threshold triggers come from the logs the trees were fitted on, where
# parent recall runs about 0.003 to 0.007 above the held-out folds' (docs/experiments.md, "The
# message a trigger answers"): the choice asks for a margin over 0.98.
PARENT_RECALL_FLOOR = 0.985
# How many of the likeliest answered messages enter beside the score's choice, and from what
# chance (``RelevanceModel.answer_best``, ``answer_floor``); 0: no such step.
ANSWER_BEST_GRID = (0, 2, 4, 6, 8)
ANSWER_FLOOR_GRID = (0.01, 0.02, 0.03, 0.05)
F1_TOLERANCE = 0.005
# Triggers sampled for the fit and for choosing the defaults: on the folds, twice the 4,000
# the numpy fit could afford did better (LightGBM fits them in seconds). The defaults are
# chosen on 8,000, each built twice (``build_modes``): on the folds, 4,000 gave 0.001 less F1
# in both modes and parent recall 0.001 lower cold.
FIT_TRIGGERS = 10_800
THRESHOLD_TRIGGERS = 8_000


def min_linear_grid(option: str, settings: ContextSettings) -> tuple[int, ...]:
    """The recent-message counts the defaults are chosen among: ``shipped``, the config's own
    (``[context] min_linear``, which the bot keeps whatever the trainer prefers), so the
    threshold is the one that suits it; ``choose``, the whole grid."""
    return (settings.min_linear,) if option == "shipped" else MIN_LINEAR_GRID


@dataclass
class Log:
    name: str
    clues: list[Clue]
    index: dict[int, int]
    triggers: dict[int, tuple[set[int], set[int]]]


def export_clues(data: dict) -> list[Clue]:
    """A DiscordChatExporter log's messages as clues (the relevance model's view), oldest first:
    the one reading of a log that the trainers and the follow bench share."""
    clues = []
    for message in data["messages"]:
        message_id = int(message["id"])
        author = message["author"]
        mentions = message.get("mentions") or []
        reference = message.get("reference") or {}
        content = message.get("content") or ""
        clues.append(
            Clue(
                id=message_id,
                at_ms=(message_id >> 22) + DISCORD_EPOCH_MS,
                author=int(author["id"]),
                mentions=frozenset(int(user["id"]) for user in mentions),
                reference=int(reference["messageId"]) if reference.get("messageId") else None,
                words=words_of(content, (user.get("name", "") for user in mentions)),
                question="?" in content,
                size=len(content.split()),
                opening=opening_of(content),
                author_keys=name_keys((author.get("name"), author.get("nickname"))),
            )
        )
    clues.sort(key=lambda clue: clue.id)
    return clues


def load_log(path: Path, meanings: Path | None = None) -> Log:
    """A log and its gold triggers; with ``meanings`` (``lab.meanings``' cache), each clue
    carries its message's embedding."""
    data = json.loads(path.read_text())
    clues = export_clues(data)
    if meanings is not None:
        from lab.meanings import read_meanings

        table = read_meanings(meanings, path)
        clues = [replace(clue, meaning=table.get(clue.id)) for clue in clues]
    return Log(
        name=path.stem,
        clues=clues,
        index={clue.id: i for i, clue in enumerate(clues)},
        triggers=gold_triggers(path.with_suffix(".gold.json")),
    )


def propose(log: Log, trigger_index: int, settings: ContextSettings) -> tuple[list[Clue], set[int]]:
    """The builder's candidates for a trigger, in its order (``ScoredBuild``,
    steps 1 to 4): the walk back to the first silence, the recent messages past it, the reply
    chain's remainder, the replied-to message's neighbourhood when the walk did not reach it,
    then what those reply to.

    The walk reaches ``settings.walk_reach`` messages (``build_modes``: as far as a warm
    build's, or a cold build's history page). The order matters: a candidate's rank is one of
    its features. ``tests/lab/test_choice_matches_builder.py`` holds the two to the
    same candidates.
    """
    trigger = log.clues[trigger_index]
    threshold_ms = settings.time_threshold_minutes * 60_000
    walk: list[Clue] = []
    newer = trigger
    for j in range(trigger_index - 1, max(-1, trigger_index - 1 - settings.walk_reach), -1):
        clue = log.clues[j]
        if newer.at_ms - clue.at_ms > threshold_ms:  # a silence seals, right before it too
            break
        walk.append(clue)
        newer = clue
    walked = {clue.id for clue in walk}
    seen = set(walked)
    # The recent messages are in whatever their age; those past a silence explore nothing.
    sealed_off: set[int] = set()
    newer = trigger
    for clue in log.clues[max(0, trigger_index - settings.min_linear) : trigger_index][::-1]:
        if sealed_off or newer.at_ms - clue.at_ms > threshold_ms:
            sealed_off.add(clue.id)
        newer = clue
        if clue.id not in seen:
            walk.append(clue)
            seen.add(clue.id)
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
    parent = trigger.reference
    if parent in chain and parent not in walked:  # a reply across a silence: its neighbours
        for step in (-1, 1):
            j = log.index[parent]
            current = log.clues[j]
            for _ in range(PARENT_NEIGHBOURS):
                j += step
                if not 0 <= j < len(log.clues) or log.clues[j].id >= trigger.id:
                    break
                found = log.clues[j]
                if abs(found.at_ms - current.at_ms) > threshold_ms:
                    break
                current = found
                if found.id not in seen:
                    walk.append(found)
                    seen.add(found.id)
    for clue in list(walk):  # what the candidates reply to (free in the builder: the payload)
        if clue.id in sealed_off and clue.id not in chain:
            continue  # what an old conversation answered is that conversation
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


def sample(logs: list[Log], count: int, rng: random.Random) -> list[tuple[Log, int]]:
    everything = [(log, trigger) for log in logs for trigger in sorted(log.triggers)]
    rng.shuffle(everything)
    return everything[:count]


# min_linear, best candidates always in, threshold, likeliest answered in, their floor
Choice = tuple[int, int, float, int, float]
# precision, recall, F1, parent recall
Figures = tuple[float, float, float, float]
# What ``build_modes`` proposes, in its order: the cached walk, the cold page.
MODE_NAMES = ("warm", "cold")  # as `--warm` and lab.choice_agreement name them


def _answer_options() -> list[tuple[int, float]]:
    return [(0, 0.0)] + [(k, p) for k in ANSWER_BEST_GRID if k for p in ANSWER_FLOOR_GRID]


def _answer_sums(
    chances: list[tuple[float, int]],
    inside: set[int],
    most: int,
    in_gold: np.ndarray,
    is_parent: np.ndarray,
) -> tuple[list[int], list[int], list[int]]:
    """The likeliest answered candidates not ``inside`` (at most ``most``): running sums of
    their gold and parent flags, and for each answer option how many of them reach its floor."""
    left_out = [(chance, i) for chance, i in chances if i not in inside][: max(0, most)]
    gold_sums, parent_sums = [0], [0]
    for _, i in left_out:
        gold_sums.append(gold_sums[-1] + int(in_gold[i]))
        parent_sums.append(parent_sums[-1] + int(is_parent[i]))
    reaching = [sum(chance >= floor for chance, _ in left_out) for _, floor in _answer_options()]
    return gold_sums, parent_sums, reaching


def answer_chances(
    model: RelevanceModel, walk: list[Clue], scored: list[Scored]
) -> list[tuple[float, int]]:
    """``(chance, index in the walk)`` of each candidate, as ``RelevanceModel.answer_ranking``
    ranks them (the builder's order)."""
    index = {clue.id: i for i, clue in enumerate(walk)}
    ranking = model.answer_ranking((clue.id, r) for clue, r in zip(walk, scored, strict=True))
    return [(chance, index[message_id]) for chance, message_id in ranking]


def build_modes(settings: ContextSettings) -> tuple[ContextSettings, ...]:
    """The candidate sets a build may have: the cached walk (a bot that saw the channel) and,
    when it is shorter, what a cold build reads (after a restart).

    A cold build's walk goes as far as the history pages it fetched hold (the cache has them
    then, and ``cached_candidate_window`` lets the walk through what the cache holds): whole
    pages, as many as ``candidate_window`` and the recent messages asked for; with the
    defaults, the one page of 100 the recent messages cost. The builder reads one more when
    the conversation reaches that page's edge (``conversation.selection.walk``); that depends
    on the choice being made, so the cold mode here is the worst case, the one page.
    """
    pages = -(-max(settings.candidate_window, settings.min_linear) // PAGE_LIMIT)
    cold_reach = min(settings.walk_reach, pages * PAGE_LIMIT)
    cold = settings.model_copy(update={"cached_candidate_window": cold_reach})
    return (settings, cold) if cold.walk_reach < settings.walk_reach else (settings,)


@dataclass
class Tally:
    """Counts of one build mode per choice, summed over the threshold triggers."""

    hits: Counter
    picked: Counter
    parents_found: Counter
    gold_total: int = 0
    with_parent: int = 0

    def figures(self, key: Choice) -> Figures:
        p = self.hits[key] / self.picked[key] if self.picked[key] else 0.0
        r = self.hits[key] / self.gold_total if self.gold_total else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return p, r, f, self.parents_found[key] / max(self.with_parent, 1)


def choose_defaults(
    model: RelevanceModel,
    chosen: list[tuple[Log, int]],
    settings: ContextSettings,
    prefer: str = "recent",
    min_linears: tuple[int, ...] = MIN_LINEAR_GRID,
) -> tuple[Choice, dict[Choice, Figures], dict[str, Figures]]:
    """The selection defaults with the best micro F1 of the whole selection.

    ``min_linears`` are the recent-message counts tried (the shipped one alone when the
    threshold is chosen for the config as shipped). With the answer ranking fitted, how many
    of the likeliest answered messages enter, and from what chance, is chosen too. Every
    trigger is built both ways a bot builds it (``build_modes``): one choice serves both, so it
    must keep the parent-recall floor in each, and its F1 is theirs pooled. Returns the best
    choice; for every choice tried, precision, recall, F1, parent recall (pooled; the parent
    recall the lower of the modes'); and the best choice's figures in each mode. The simulated
    builds count what the real builder picks, in each mode (``lab.choice_agreement`` compares
    them).
    """
    tallies = mode_tallies(model, chosen, settings, min_linears)
    pooled = Tally(Counter(), Counter(), Counter())
    for tally in tallies:
        pooled.hits.update(tally.hits)
        pooled.picked.update(tally.picked)
        pooled.gold_total += tally.gold_total
    table = {}
    for key in pooled.hits.keys() | pooled.picked.keys():
        p, r, f, _ = pooled.figures(key)
        table[key] = (p, r, f, min(tally.figures(key)[3] for tally in tallies))
    allowed = [key for key in table if table[key][3] >= PARENT_RECALL_FLOOR] or list(table)
    top = max(table[key][2] for key in allowed)
    # The optimum is flat: among choices within F1_TOLERANCE of it, keep the most recent
    # messages (a context that always shows what was just said is the safer default on other
    # servers).
    near = [key for key in allowed if table[key][2] >= top - F1_TOLERANCE]
    # With ``prefer="recall"``, the fullest of those contexts (the most of the conversation).
    if prefer == "recall":
        best = max(near, key=lambda key: (key[0], table[key][1], -key[3], key[4]))
    else:
        # On a tie, the fewest likely-answered messages, from the highest chance.
        best = max(near, key=lambda key: (key[0], table[key][2], key[2], -key[3], key[4]))
    named = zip(MODE_NAMES, tallies, strict=False)  # the cold page only when it is shorter
    return best, table, {name: tally.figures(best) for name, tally in named}


def mode_tallies(
    model: RelevanceModel,
    chosen: list[tuple[Log, int]],
    settings: ContextSettings,
    min_linears: tuple[int, ...],
    only: Choice | None = None,
) -> list[Tally]:
    """Every choice's counts over ``chosen`` in each build mode (``build_modes``: the cached
    walk first, then the cold page when it is shorter). With ``only``, that choice's counts
    alone, summed as for the whole grid (``lab.choice_agreement`` checks one choice, and the
    grid's 5,440 choices per trigger cost it four fifths of its time)."""
    return [_tally(model, chosen, mode, min_linears, only) for mode in build_modes(settings)]


def _tally(
    model: RelevanceModel,
    chosen: list[tuple[Log, int]],
    settings: ContextSettings,
    min_linears: tuple[int, ...],
    only: Choice | None = None,
) -> Tally:
    """Every choice's counts over ``chosen`` (or ``only`` that one's), each built with the
    candidates ``settings`` propose."""
    grid = np.array([round(0.05 + 0.0125 * i, 4) for i in range(40)])
    options = _answer_options()
    bests = ALWAYS_BEST_GRID
    if only is not None:  # the same loops over that choice's own values of the grid
        bests = tuple(best for best in bests if best == only[1])
        grid = grid[grid == only[2]]
    tally = Tally(Counter(), Counter(), Counter())
    hits, picked, parents_found = tally.hits, tally.picked, tally.parents_found
    for log, trigger_id in chosen:
        gold, parents = log.triggers[trigger_id]
        index = log.index[trigger_id]
        walk, chain = propose(log, index, settings)
        scored = model.score_threads(log.clues[index], walk, chain)
        scores = np.array([r.score for r in scored])
        chances = answer_chances(model, walk, scored)
        in_gold = np.array([clue.id in gold for clue in walk], dtype=int)
        is_parent = np.array([clue.id in parents for clue in walk], dtype=int)
        tally.gold_total += len(gold)
        tally.with_parent += bool(parents)
        parent = log.clues[index].reference
        # Best first, on a tie the newest (the builder's order; the walk is not all by age).
        order = np.lexsort((-np.array([clue.id for clue in walk], dtype=np.int64), -scores))
        for min_linear in min_linears:
            linear = set(range(min(min_linear, len(walk))))
            # The builder always takes it, room permitting.
            if parent is not None and parent in chain and len(linear) < settings.max_total:
                linear.add(next(i for i, clue in enumerate(walk) if clue.id == parent))
            fixed = sorted(linear)
            rest = np.array([i for i in order if i not in linear], dtype=int)
            room = max(0, settings.max_total - len(linear))
            hits_rest = np.concatenate([[0], np.cumsum(in_gold[rest])])
            parents_rest = np.concatenate([[0], np.cumsum(is_parent[rest])])
            above = (scores[rest][None, :] >= grid[:, None]).sum(axis=1)
            fixed_hits = int(in_gold[fixed].sum())
            fixed_parents = int(is_parent[fixed].sum())
            worth_it = int((scores[rest] >= model.always_best_floor).sum())
            replied_to = int(parent is not None and parent in chain)  # counts as one of the best
            # Per count taken: what the likeliest answered left out would add, as running sums
            # (gold, parents) and how many reach each floor.
            answered: dict[int, tuple[list[int], list[int], list[int]]] = {}
            for best in bests:
                forced = min(max(0, best - replied_to), worth_it)
                taken = np.minimum(room, np.maximum(forced, above))
                for threshold, count in zip(grid.tolist(), taken.tolist(), strict=True):
                    if count not in answered:
                        answered[count] = _answer_sums(
                            chances, set(linear) | set(rest[:count].tolist()),
                            min(max(ANSWER_BEST_GRID), room - count), in_gold, is_parent,
                        )  # fmt: skip
                    gold_sums, parent_sums, reaching = answered[count]
                    base_hits = fixed_hits + int(hits_rest[count])
                    base_parents = fixed_parents + int(parents_rest[count])
                    for (k, floor), reach in zip(options, reaching, strict=True):
                        if only is not None and (k, floor) != only[3:]:
                            continue
                        extra = min(k, reach)
                        key = (min_linear, best, threshold, k, floor)
                        hits[key] += base_hits + gold_sums[extra]
                        picked[key] += len(linear) + count + extra
                        parents_found[key] += bool(base_parents + parent_sums[extra])
    return tally


@dataclass
class Example:
    """One training trigger: its candidates as the builder proposes them, and their labels."""

    trigger: Clue
    walk: list[Clue]
    chain: set[int]
    labels: list[int]
    rows: list[list[float]]
    answered: list[int]  # 1 for what the trigger answers (its gold parents)


def example_of(log: Log, trigger_id: int, settings: ContextSettings) -> Example:
    gold, parents = log.triggers[trigger_id]
    index = log.index[trigger_id]
    walk, chain = propose(log, index, settings)
    trigger = log.clues[index]
    return Example(
        trigger=trigger,
        walk=walk,
        chain=chain,
        labels=[int(clue.id in gold) for clue in walk],
        rows=feature_rows(*with_addresses(trigger, walk), chain),
        answered=[int(clue.id in parents) for clue in walk],
    )


def fit_model(
    examples: list[Example],
    threshold_set: list[tuple[Log, int]],
    settings: ContextSettings,
    *,
    fitter: str = "lightgbm",
    verbose: bool = False,
    without: frozenset[str] = frozenset(),
    looks: int = 2,
    prefer: str = "recent",
    min_linears: tuple[int, ...] = MIN_LINEAR_GRID,
    answers: bool = True,
    meaning: bool = False,
) -> tuple[RelevanceModel, Choice]:
    """The looks fitted on ``examples`` (two, or three), the defaults chosen on ``threshold_set``.
    ``answers``: the answer ranking is fitted too, and its defaults chosen with the rest.

    The second look's features named in ``without`` are held at 0 for the fit, so its trees
    never use them (an ablation, measured with ``lab.relevance_folds --without``). ``meaning``:
    the second look reads the meaning features too (the examples' clues carry embeddings).
    """
    if fitter == "lightgbm":
        from lab import library_fit as fitting

        tree_args: dict = {}
    else:
        from lab import boosting as fitting

        tree_args = {"trees": TREES, "depth": DEPTH, "rate": RATE, "min_hessian": MIN_HESSIAN}
    y = np.array([label for example in examples for label in example.labels], dtype=float)
    if verbose:
        print(f"{len(y)} candidates, {int(y.sum())} positive; fitting with {fitter}", flush=True)
    rows = np.array([row for example in examples for row in example.rows])
    first = stage(FEATURES, *fitting.fit_logistic(rows, y))
    second_features = MEANING_SECOND_FEATURES if meaning else SECOND_FEATURES
    model = RelevanceModel(
        first=first,
        second=TreeStage(features=second_features, means=(), base=0.0, trees=()),
        anchor=ANCHOR,
        threshold=0.5,
        # A third look reads every candidate's second look: no floor then.
        second_look_floor=SECOND_LOOK_FLOOR if looks == 2 else 0.0,
    )
    stages = ((2, second_features), (3, THIRD_FEATURES))[: looks - 1]
    for look, features in stages:
        x = np.array(
            [
                row
                for example in examples
                for row in model.rows(example.trigger, example.walk, example.chain, looks=look)
            ]
        )
        for name in without:
            x[:, features.index(name)] = 0.0
        if verbose:
            print(f"look {look}: {x.shape[1]} features", flush=True)
        base, trees = fitting.fit_trees(x, y, **tree_args)
        fitted = TreeStage(
            features=features,
            means=tuple(round(v, 6) for v in x.mean(axis=0).tolist()),
            base=round(base, 6),
            trees=tuple(trees),
        )
        model = model.model_copy(update={"second" if look == 2 else "third": fitted})
    if answers:
        model = model.model_copy(
            update={"answers": fit_answers(model, examples, fitting, tree_args)}
        )
    choice, table, modes = choose_defaults(model, threshold_set, settings, prefer, min_linears)
    _, always_best, threshold, answer_best, answer_floor = choice
    if verbose:
        for key in sorted(table):
            same = key[:2] == choice[:2] and key[3:] == choice[3:]
            if same and abs(key[2] - threshold) < 0.06:
                p, r, f, parent = table[key]
                mark = " <- default" if key == choice else ""
                print(
                    f"  min_linear {key[0]:>2} best {key[1]} threshold {key[2]:.4f} answered "
                    f"{key[3]} from {key[4]:.2f}: P {p:.3f} R {r:.3f} F1 {f:.3f} parent recall "
                    f"{parent:.3f}{mark}"
                )
        for label, (p, r, f, parent) in modes.items():
            print(
                f"  the default, {label}: P {p:.3f} R {r:.3f} F1 {f:.3f} parent recall {parent:.3f}"
            )
    model = model.model_copy(
        update={
            "threshold": threshold,
            "always_best": always_best,
            "answer_best": answer_best,
            "answer_floor": answer_floor,
        }
    )
    return model, choice


def fit_answers(
    model: RelevanceModel, examples: list[Example], fitting, tree_args: dict
) -> TreeStage:
    """Trees ranking which candidate the trigger answers: the deciding look's row and score in,
    the gold parent out (every candidate, as the score sees them all)."""
    x, y = [], []
    for example in examples:
        scored = thread_scores(
            example.trigger,
            example.walk,
            model.score_all(example.trigger, example.walk, example.chain),
        )
        x.extend((*result.row, result.score) for result in scored)
        y.extend(example.answered)
    features = np.array(x)
    base, trees = fitting.fit_trees(features, np.array(y, dtype=float), **tree_args)
    return TreeStage(
        features=(*model.deciding.features, ANSWER_SCORE),
        means=tuple(round(v, 6) for v in features.mean(axis=0).tolist()),
        base=round(base, 6),
        trees=tuple(trees),
    )


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Word-overlap sums follow set order, which follows string hashing: fixing the hash
        # seed makes the split points, and so the weights file, identical from run to run.
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "lab.train_relevance", *sys.argv[1:]])
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[lab_options(DEFAULT_TRAIN, seed=True, writes_weights=True, fit_choices=True)],
    )
    parser.add_argument(
        "--triggers", type=int, default=FIT_TRIGGERS, help="triggers sampled for the fit"
    )
    parser.add_argument("--threshold-triggers", type=int, default=THRESHOLD_TRIGGERS)
    parser.add_argument(
        "--meanings", type=Path, help="lab.meanings' cache: fit the meaning features too"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where the weights go (the package's file; with --meanings, the one that reads "
        "meaning)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    settings = ContextSettings()
    paths = sorted(p for p in args.data.glob("*.json") if not p.name.endswith(".gold.json"))
    if not paths:
        parser.exit(2, f"error: {args.data}: no logs here (*.json with a .gold.json beside)\n")
    logs = [load_log(path, args.meanings) for path in paths]
    print(f"{len(logs)} logs, {sum(len(log.triggers) for log in logs)} triggers", flush=True)
    rng = random.Random(args.seed)
    held_out: list[Log] = []
    if args.hold_out:
        shuffled = list(logs)
        rng.shuffle(shuffled)
        cut = round(len(logs) * args.hold_out)
        held_out, logs = shuffled[:cut], sorted(shuffled[cut:], key=lambda log: log.name)
        args.dry_run = True
    picked = sample(logs, args.triggers + args.threshold_triggers, rng)
    fit_set, threshold_set = picked[: args.triggers], picked[args.triggers :]
    examples = [example_of(log, trigger_id, settings) for log, trigger_id in fit_set]
    model, choice = fit_model(
        examples,
        threshold_set,
        settings,
        fitter=args.fitter,
        verbose=True,
        looks=args.looks,
        prefer=args.prefer,
        min_linears=min_linear_grid(args.min_linear, settings),
        meaning=args.meanings is not None,
    )
    if args.out is None:
        args.out = OUTPUT if args.meanings is None else MEANING_OUTPUT
    model = model.model_copy(
        update={"trained_on": f"irc-train, {len(fit_set)} triggers, seed {args.seed}"}
    )
    if held_out:
        measured = sample(held_out, args.threshold_triggers, random.Random(args.seed + 1))
        _, held_table, _ = choose_defaults(model, measured, settings)
        p, r, f, parent = held_table[choice]
        print(
            f"held out ({len(held_out)} logs, {len(measured)} triggers): P {p:.3f} R {r:.3f} "
            f"F1 {f:.3f} parent recall {parent:.3f}"
        )
    if not args.dry_run:
        args.out.write_text(json.dumps(model.model_dump(), indent=1) + "\n")
        print(f"wrote {args.out}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
