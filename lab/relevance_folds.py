"""K-fold, leave-whole-logs-out measure of the relevance score on the IRC training split.

    python -m lab.relevance_folds [TRAIN_DIR] [--folds 4] [--fitter lightgbm|numpy] [--out DIR]

The logs are dealt into K seeded folds. For each fold the score is fitted, and its defaults
chosen, on the other folds' logs exactly as ``lab.train_relevance`` does for the shipped
weights; then every trigger of the held-out logs goes through the real builder with that fold's
weights (``lab.context_quality --folds``), which prints each log's figures and the folds' mean
and spread. A change to the score is kept when it helps here; irc-dev is never used.

The candidates and first-look features of the sampled training triggers are computed once and
kept in ``DIR/examples-<hash>.pickle`` (the hash covers the code that makes them), so a run that
changes only the fit or the defaults costs the fits and the scoring alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import random
import sys
import time
from pathlib import Path

from conversation.common import ContextSettings
from conversation.selection import THIRD_FEATURES
from lab.options import lab_options
from lab.train_relevance import (  # sampled over all logs: ~8,000 and ~3,000 per fold
    DEFAULT_TRAIN,
    FIT_TRIGGERS,
    THRESHOLD_TRIGGERS,
    Example,
    Log,
    example_of,
    fit_model,
    load_log,
    min_linear_grid,
    sample,
)

ROOT = Path(__file__).resolve().parents[1]


def deal(names: list[str], folds: int, seed: int) -> list[list[str]]:
    """The log names dealt into ``folds`` seeded parts of near-equal size."""
    shuffled = sorted(names)
    random.Random(seed).shuffle(shuffled)
    return [sorted(shuffled[k::folds]) for k in range(folds)]


def _code_hash() -> str:
    digest = hashlib.sha256()
    for part in (
        "conversation/selection/clues.py",
        "conversation/selection/features.py",
        "conversation/selection/stages.py",
        "conversation/selection/relevance.py",
        "conversation/selection/reach.py",
        "conversation/selection/addressing.py",
        "lab/train_relevance.py",
    ):
        digest.update((ROOT / part).read_bytes())
    return digest.hexdigest()[:12]


def cached_examples(
    logs: list[Log], settings: ContextSettings, seed: int, out: Path, count: int = FIT_TRIGGERS
) -> tuple[list[tuple[str, Example]], list[tuple[Log, int]]]:
    """The sampled fit examples (with their log's name) and threshold triggers of all logs."""
    rng = random.Random(seed)
    picked = sample(logs, count + THRESHOLD_TRIGGERS, rng)
    fit_set, threshold_set = picked[:count], picked[count:]
    # The candidates depend on the settings too (min_linear seals the walk), not only the code.
    shape = hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:8]
    path = out / f"examples-{_code_hash()}-{shape}-{seed}-{count}.pickle"
    if path.exists():
        examples = pickle.loads(path.read_bytes())
    else:
        examples = [(log.name, example_of(log, t, settings)) for log, t in fit_set]
        # Kept without the meanings (a vector per candidate would be gigabytes): they are
        # the logs' own, put back below.
        bare = [(name, _without_meanings(example)) for name, example in examples]
        path.write_bytes(pickle.dumps(bare, protocol=pickle.HIGHEST_PROTOCOL))
    by_name = {log.name: log for log in logs}
    examples = [(name, _with_meanings(example, by_name[name])) for name, example in examples]
    return examples, threshold_set


def _without_meanings(example: Example) -> Example:
    return dataclasses.replace(
        example,
        trigger=dataclasses.replace(example.trigger, meaning=None),
        walk=[dataclasses.replace(clue, meaning=None) for clue in example.walk],
    )


def _with_meanings(example: Example, log: Log) -> Example:
    """The example's clues as the log holds them (with their meanings, when it has them)."""
    return dataclasses.replace(
        example,
        trigger=log.clues[log.index[example.trigger.id]],
        walk=[log.clues[log.index[clue.id]] for clue in example.walk],
    )


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"  # set order, hence the fits, identical run to run
        os.execv(sys.executable, [sys.executable, "-m", "lab.relevance_folds", *sys.argv[1:]])
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[lab_options(DEFAULT_TRAIN, seed=True, fit_choices=True)],
    )
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("/tmp/threadwise-folds"))
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="FEATURE",
        help="hold this second-look feature at 0 in the fits (an ablation); repeatable",
    )
    parser.add_argument(
        "--fit-triggers", type=int, default=FIT_TRIGGERS, help="sampled over all logs"
    )
    parser.add_argument(
        "--meanings",
        type=Path,
        help="lab.meanings' cache: the logs' embeddings, for the meaning features (scored "
        "with them too)",
    )
    parser.add_argument("--fit-only", action="store_true", help="write the folds, do not score")
    args = parser.parse_args()
    unknown = [name for name in args.without if name not in THIRD_FEATURES]
    if unknown:
        parser.exit(2, f"error: --without {unknown[0]!r}: not a second-look feature\n")
    paths = sorted(p for p in args.data.glob("*.json") if not p.name.endswith(".gold.json"))
    if not paths:
        parser.exit(2, f"error: {args.data}: no logs here (*.json with a .gold.json beside)\n")
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = ContextSettings()
    logs = [load_log(path, args.meanings) for path in paths]
    examples, threshold_set = cached_examples(
        logs, settings, args.seed, args.out, args.fit_triggers
    )
    print(f"{len(logs)} logs; examples ready in {time.perf_counter() - started:.0f} s", flush=True)
    manifest = []
    for k, held_out in enumerate(deal([log.name for log in logs], args.folds, args.seed)):
        out = set(held_out)
        fit = [example for name, example in examples if name not in out]
        chosen = [(log, t) for log, t in threshold_set if log.name not in out]
        model, choice = fit_model(
            fit,
            chosen,
            settings,
            fitter=args.fitter,
            without=frozenset(args.without),
            looks=args.looks,
            prefer=args.prefer,
            min_linears=min_linear_grid(args.min_linear, settings),
            meaning=args.meanings is not None,
        )
        model = model.model_copy(
            update={"trained_on": f"irc-train fold {k + 1}/{args.folds}, {len(fit)} triggers"}
        )
        weights = args.out / f"fold-{k + 1}.json"
        weights.write_text(json.dumps(model.model_dump(), indent=1) + "\n")
        manifest.append({"weights": weights.name, "min_linear": choice[0], "held_out": held_out})
        print(
            f"fold {k + 1}: {len(fit)} fit triggers; min_linear {choice[0]}, best {choice[1]}, "
            f"threshold {choice[2]:.4f}, answered {choice[3]} from {choice[4]:.2f} "
            f"({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    (args.out / "folds.json").write_text(json.dumps({"folds": manifest}, indent=1) + "\n")
    if args.fit_only:
        return
    from lab.context_quality import print_folds, score_folds

    print_folds(score_folds(args.data, args.out / "folds.json", settings, meanings=args.meanings))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
