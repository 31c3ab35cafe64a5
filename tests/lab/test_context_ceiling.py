"""Where the context's F1 is lost (lab.context_ceiling), on labelled synthetic channels."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.synthetic import busy_channel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _labelled_channel(folder: Path, name: str, seed: int, *, one: bool = False) -> None:
    """A busy channel whose generator's conversations are the gold (or, ``one``, the whole
    channel is one): each message's parent is the one before it in its conversation; the last
    two thirds are annotated."""
    export = busy_channel(seed=seed, messages=240, old_reply_rate=0.0)
    last: dict[int, str] = {}
    labels = {}
    for i, message in enumerate(export["messages"]):
        conversation = 0 if one else message["_gold"]
        labels[message["id"]] = {
            "annotated": i >= 80,
            "parents": [last[conversation]] if conversation in last else [],
            "conversation": f"c{conversation}",
        }
        last[conversation] = message["id"]
    (folder / f"{name}.json").write_text(json.dumps(export))
    (folder / f"{name}.gold.json").write_text(json.dumps({"messages": labels}))


def _run(module: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT,
        timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def _row(output: str, start: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {start}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_replayed_choice_is_the_builders_and_the_ceilings_bound_it(tmp_path):
    _labelled_channel(tmp_path, "alpha", 3)
    _labelled_channel(tmp_path, "beta", 4, one=True)  # longer than a history page
    ceiling = _run("lab.context_ceiling", str(tmp_path))
    # One cap in both: the ceiling replays the trainer's choice, which a channel's running cap
    # (conversation.selection.length) is not part of.
    quality = _run(
        "lab.context_quality",
        *(str(tmp_path), "--only", "threadwise builder", "--warm", "--set", "max_total_long=50"),
    )
    # The replay is the real builder's choice, warm (the walk reaches cached_candidate_window):
    # same precision, recall, F1 and parent recall.
    replayed = _row(ceiling, "the builder's")[1:5]
    assert replayed == _row(quality, "threadwise builder")[1:5]
    shares = {row[0]: float(row[1]) for row in (
        _row(ceiling, "outside the candidates"),
        _row(ceiling, "among them, past max_total"),
        _row(ceiling, "within reach"),
    )}  # fmt: skip
    assert abs(sum(shares.values()) - 1.0) < 0.002
    assert shares["outside the candidates"] > 0 and shares["among them, past max_total"] > 0
    best = _row(ceiling, "best possible")
    assert best[1] == "1.000" and float(best[2]) == shares["within reach"]
    sized = _row(ceiling, "the score's ranking")
    for column in (1, 2, 3):  # nothing does better than the best possible
        assert float(sized[column]) <= float(best[column])
        assert float(replayed[column - 1]) <= float(best[column])
    # Every trigger falls in one size row.
    sizes = ceiling.split("| conversation size |")[1].splitlines()[2:]
    triggers = sum(int(line.split("|")[2]) for line in sizes if line.startswith("| "))
    assert ceiling.startswith(f"{triggers} triggers, ")
