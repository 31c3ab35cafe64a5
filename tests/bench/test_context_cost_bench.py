"""bench.context_cost on real scored logs: the shipped build timed against the builds before
the second-look floor and before the cached window."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conversation.replay.gold import load_gold
from conversation.selection.weights import load_model
from tests.lab.test_context_ceiling import ROOT, _labelled_channel


@pytest.mark.slow
def test_warm_builds_on_scored_logs_are_timed_as_shipped_and_as_before(tmp_path):
    _labelled_channel(tmp_path, "alpha", 3)
    _labelled_channel(tmp_path, "beta", 4, one=True)
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_cost", "--messages", "400", "--triggers", "20",
         "--logs", str(tmp_path), "--log-count", "1"],
        capture_output=True, text=True, cwd=ROOT, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    triggers = len(load_gold(tmp_path / "alpha.gold.json"))  # the first log by name
    assert (
        f"warm builds on 1 scored log, {triggers} triggers (median per round; best against best):"
        in lines
    )
    floor = f"cached window (199), second look over {load_model().second_look_floor:g}"
    shipped, unranked = f"{floor}, answer ranking", floor
    before = "cached window (199), every candidate looked at twice"
    first = "one page (99), every candidate looked at twice"
    for name in (shipped, unranked, before, first):
        assert any(line.startswith(f"  {name}: ") and line.endswith(" ms") for line in lines)
    assert lines[-3].startswith(f"  {shipped} against {unranked}: ")
    assert lines[-2].startswith(f"  {shipped} against {before}: ")
    assert lines[-1].startswith(f"  {shipped} against {first}: ")
    assert lines[-1].endswith("x")


def test_a_folder_without_scored_logs_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_cost", "--logs", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path}: no scored logs here (*.json with a .gold.json)"
    ]
