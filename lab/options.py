"""The options lab's commands share, written once: one argparse parent parser.

Each command takes the logs folder and names the shared options it has
(``argparse.ArgumentParser(parents=[lab_options(...)])``), so a flag means the same thing, with
the same default and help, wherever it appears. A command's own options follow them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

# What the four folds of irc-train kept (python -m lab.relevance_folds; docs/experiments.md).
LOOKS = 2
# With max_total 50, the best F1 keeps recall over 0.6 (it needed "recall" at 30).
PREFER = "recent"
MIN_LINEAR = "shipped"


def lab_options(
    data: Path,
    *,
    seed: bool = False,
    writes_weights: bool = False,
    fit_choices: bool = False,
    fold_weights: bool = False,
) -> argparse.ArgumentParser:
    """A parent parser: the folder of logs (``data`` when none is given) and the shared options
    a command has: ``--seed``; ``--dry-run`` and ``--hold-out`` for a fit that writes a weights
    file (``writes_weights``); the relevance fit's ``--fitter``, ``--looks``, ``--prefer`` and
    ``--min-linear`` (``fit_choices``); a folds manifest's weights (``fold_weights``).

    A new parser each call: a command's ``set_defaults`` changes the actions it holds."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("data", nargs="?", type=Path, default=data)
    if seed:
        parser.add_argument("--seed", type=int, default=13)
    if writes_weights:
        parser.add_argument("--dry-run", action="store_true", help="do not write the weights")
        parser.add_argument(
            "--hold-out",
            type=float,
            default=0.0,
            metavar="FRACTION",
            help="fit on the other logs and report on this seeded fraction of whole training "
            "logs (nothing is written); measures a change without touching irc-dev",
        )
    if fit_choices:
        parser.add_argument(
            "--fitter",
            choices=("lightgbm", "numpy"),
            default="lightgbm",
            help="lightgbm: scikit-learn and LightGBM (default); numpy: lab.boosting's own",
        )
        parser.add_argument(
            "--looks", type=int, choices=(2, 3), default=LOOKS, help="two looks, or a third"
        )
        parser.add_argument(
            "--prefer",
            choices=("recent", "recall"),
            default=PREFER,
            help="among defaults within 0.005 F1 of the best: the most recent messages, then "
            "the best F1 (recent), or the most recent messages, then the highest recall (recall)",
        )
        parser.add_argument(
            "--min-linear",
            choices=("shipped", "choose"),
            default=MIN_LINEAR,
            help="choose the threshold for the shipped [context] min_linear (shipped) or choose "
            "min_linear too (choose); held-out logs are scored with the one chosen",
        )
    if fold_weights:
        parser.add_argument(
            "--folds",
            type=Path,
            metavar="MANIFEST",
            help="score each fold's held-out logs with that fold's weights (the folds.json "
            "python -m lab.relevance_folds writes)",
        )
    return parser
