"""The catch-up study as a command, on a synthetic channel whose conversations are known."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.synthetic import busy_channel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def rows(folder: Path) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "lab.catchup_quality", str(folder)],
        capture_output=True, text=True, cwd=ROOT, timeout=200,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "returns after 1 h away" in lines[0]
    return {line[:40].strip(): line[40:].split() for line in lines[2:]}


def test_reply_chains_group_into_pure_conversations_and_one_summary_mixes_them(tmp_path):
    # Everyone replies within their conversation and writes no name: the replies alone group.
    export = busy_channel(seed=5, messages=360, members=40, reply_rate=1.0, old_reply_rate=0.0,
                          silence_rate=0.0)  # fmt: skip
    labels = {}
    for m in export["messages"]:
        labels[m["id"]] = {"annotated": True, "parents": [], "conversation": f"c{m.pop('_gold')}"}
        m["mentions"] = []
    (tmp_path / "busy.json").write_text(json.dumps(export))
    (tmp_path / "busy.gold.json").write_text(json.dumps({"messages": labels}))
    found = rows(tmp_path)
    assert found["rules only (reply, mention)"][0] == "1.000"  # purity
    assert found["one summary of the hour"][1] == "1.000"  # it covers everything...
    assert float(found["one summary of the hour"][0]) < 0.5  # ... all mixed together
