"""bench.context_cost on real scored logs: the cached window timed against one page."""

from __future__ import annotations

import subprocess
import sys

from conversation.gold import load_gold
from tests.test_context_ceiling import ROOT, _labelled_channel


def test_warm_builds_on_scored_logs_are_timed_for_both_walks(tmp_path):
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
    assert f"warm builds on 1 scored log, {triggers} triggers (median per round):" in lines
    assert any(line.startswith("  cached window (199): ") for line in lines)
    assert any(line.startswith("  one page (99): ") for line in lines)
    assert lines[-1].startswith("  cached window (199) against one page (99): ")


def test_a_folder_without_scored_logs_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_cost", "--logs", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path}: no scored logs here (*.json with a .gold.json)"
    ]
