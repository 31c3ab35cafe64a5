"""The trainer's simulated selection against the real builder's, on the same triggers.

    python -m lab.choice_agreement LOG [LOG ...] [--json]

``lab.train_relevance`` chooses the selection defaults (threshold, best candidates always in,
likeliest answered ones and their floor) by simulating the builder on thousands of triggers
(``propose`` for the candidates, ``mode_tallies`` for the rule), since replaying the builder on each
of the four thousand grid choices would take hours. The choice is only as good as that simulation:
this replays the same triggers through the real builder (``lab.context_quality.score_logs``; warm,
the cache holding the channel, and cold, an empty cache reading its one history page) and prints
both sides' counts for the model's own choice, per build mode. The cold mode is the one-page build:
the second page a cold build reads when the conversation reaches the first one's edge
(``conversation.selection.walk``) depends on the choice itself and is not simulated; the choice is
made for the worst case, one page. They must be equal
(``tests/lab/test_choice_matches_builder.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from conversation.common import ContextSettings
from conversation.replay import Score
from conversation.selection import RelevanceModel, load_model
from lab.context_quality import score_logs
from lab.train_relevance import MODE_NAMES, Choice, Tally, build_modes, load_log, mode_tallies

COUNTS = ("hits", "picked", "parents_found", "gold", "with_parent")


def model_choice(model: RelevanceModel, settings: ContextSettings) -> Choice:
    """The choice the model ships with, as ``choose_defaults`` keys it."""
    return (
        settings.min_linear,
        model.always_best,
        model.threshold,
        model.answer_best,
        model.answer_floor,
    )


def _trainer_counts(tally: Tally, key: Choice) -> dict[str, int]:
    return {
        "hits": tally.hits[key],
        "picked": tally.picked[key],
        "parents_found": tally.parents_found[key],
        "gold": tally.gold_total,
        "with_parent": tally.with_parent,
    }


def _builder_counts(scores: list[Score]) -> dict[str, int]:
    return {
        "hits": sum(s.hits for s in scores),
        "picked": sum(s.selected for s in scores),
        "parents_found": sum(s.parent_found for s in scores),
        "gold": sum(s.gold for s in scores),
        "with_parent": sum(s.with_parent for s in scores),
    }


def agreement(
    paths: list[Path], settings: ContextSettings, model: RelevanceModel
) -> dict[str, dict[str, dict[str, int]]]:
    """Per build mode (``warm``, and ``cold`` when its walk is shorter), the trainer's and the
    builder's counts over every gold trigger of ``paths`` for the model's own choice."""
    logs = [load_log(path) for path in paths]
    chosen = [(log, trigger) for log in logs for trigger in sorted(log.triggers)]
    key = model_choice(model, settings)
    tallies = mode_tallies(model, chosen, settings, (settings.min_linear,), only=key)
    result = {}
    for name, tally, mode in zip(MODE_NAMES, tallies, build_modes(settings), strict=False):
        scores = [
            score
            for path in paths
            for score in asyncio.run(
                score_logs(path.parent, mode, [path.stem], model, warm=name == "warm")
            ).values()
        ]
        result[name] = {
            "trainer": _trainer_counts(tally, key),
            "builder": _builder_counts(scores),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="DCE logs with a .gold.json beside")
    parser.add_argument("--json", action="store_true", help="the counts as one JSON object")
    args = parser.parse_args()
    # One cap: the trainer's simulation, which this compares with, does not model a channel's
    # running cap (``conversation.selection.length``; docs/experiments.md).
    settings = ContextSettings(max_total_long=ContextSettings().max_total)
    model = load_model()
    result = agreement(args.logs, settings, model)
    if args.json:
        print(json.dumps(result))
        return
    print(f"choice {model_choice(model, settings)}")
    print("| mode | side | " + " | ".join(COUNTS) + " | precision | recall | parent recall |")
    print("|---|---|" + "---|" * (len(COUNTS) + 3))
    for mode, sides in result.items():
        for side, c in sides.items():
            p = c["hits"] / max(c["picked"], 1)
            r = c["hits"] / max(c["gold"], 1)
            parent = c["parents_found"] / max(c["with_parent"], 1)
            cells = " | ".join(str(c[name]) for name in COUNTS)
            print(f"| {mode} | {side} | {cells} | {p:.4f} | {r:.4f} | {parent:.4f} |")


if __name__ == "__main__":
    main()
