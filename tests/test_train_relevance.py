"""The relevance trainer chooses its threshold for the config as shipped.

Run as the command (tests never import bench), on synthetic labelled logs: the defaults it
chooses (threshold, best candidates always in) suit the ``[context] min_linear`` that
config.toml ships, the recent messages the bot keeps whatever the trainer would prefer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.fakes.synthetic import busy_channel

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")


def _labelled_log(folder: Path, name: str, seed: int) -> None:
    export = busy_channel(seed=seed, messages=120)
    ids = [message["id"] for message in export["messages"]]
    labels = {
        message_id: {
            "annotated": True,
            "parents": [ids[i - 3]] if i >= 3 else [],
            "conversation": f"c{i % 3}",
        }
        for i, message_id in enumerate(ids)
    }
    (folder / f"{name}.json").write_text(json.dumps(export))
    (folder / f"{name}.gold.json").write_text(json.dumps({"messages": labels}))


def _chosen(folder: Path, *flags: str) -> list[int]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.train_relevance", str(folder), "--dry-run",
         "--triggers", "200", "--threshold-triggers", "100", *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return [int(m) for m in re.findall(r"min_linear +(\d+) best", result.stdout)]


def test_the_threshold_is_chosen_for_the_shipped_min_linear(tmp_path):
    for name, seed in (("alpha", 1), ("beta", 2)):
        _labelled_log(tmp_path, name, seed)
    shipped = tomllib.loads((ROOT / "config.toml").read_text())["context"]["min_linear"]
    tried = _chosen(tmp_path)
    assert tried and set(tried) == {shipped}
