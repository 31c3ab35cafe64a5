"""LightGBM's trees, exported into the shipped weights format, score as LightGBM does.

Run as the command (tests never import bench): it fits on synthetic data and compares.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Whether they are installed, not imported: importing them cost every worker seconds at
# collection, and only the command this runs uses them.
pytestmark = [
    pytest.mark.skipif(
        not all(importlib.util.find_spec(name) for name in ("lightgbm", "sklearn")),
        reason="needs the train extra (lightgbm, scikit-learn)",
    ),
    pytest.mark.slow,
]


def test_exported_trees_give_lightgbm_s_own_scores_and_thresholds():
    result = subprocess.run(
        [sys.executable, "-m", "lab.library_fit"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "exported trees score as LightGBM does"
