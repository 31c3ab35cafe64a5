"""The context-quality benchmark's reply-heavy variant: a server where everyone replies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conversation.relevance import WEIGHTS_FILE as WEIGHTS
from tests.fakes.synthetic import busy_channel

ROOT = Path(__file__).resolve().parents[1]


def reply_chain_row(folder: Path, *flags: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_quality", str(folder), "--only", "reply chain only",
         *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("| reply chain"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_all_replies_makes_every_annotated_message_reply_to_its_gold_parent(tmp_path):
    export = busy_channel(seed=2, messages=12, reply_rate=0.0, old_reply_rate=0.0)
    ids = [message["id"] for message in export["messages"]]
    labels = {
        ids[1]: {"annotated": False, "parents": [], "conversation": "c1"},
        ids[3]: {"annotated": True, "parents": [ids[1]], "conversation": "c1"},
        ids[5]: {"annotated": True, "parents": [ids[3]], "conversation": "c1"},
        ids[7]: {"annotated": True, "parents": [ids[1], ids[3]], "conversation": "c1"},
    }
    (tmp_path / "log.json").write_text(json.dumps(export))
    (tmp_path / "log.gold.json").write_text(json.dumps({"messages": labels}))
    # As logged, nobody replies: following replies finds nothing.
    assert reply_chain_row(tmp_path)[1:5] == ["0.000", "0.000", "0.000", "0.000"]
    # Every annotated message replying to its latest parent: each chain holds only its gold
    # context and every parent; ids[7] -> ids[3] -> ids[1] misses ids[5] (recall 5/6).
    row = reply_chain_row(tmp_path, "--all-replies")
    assert row[1:5] == ["1.000", "0.833", "0.909", "1.000"]


def _labelled_log(folder: Path, name: str, seed: int) -> None:
    export = busy_channel(seed=seed, messages=40)
    ids = [message["id"] for message in export["messages"]]
    labels = {
        message_id: {
            "annotated": True,
            "parents": [ids[i - 2]] if i >= 2 else [],
            "conversation": f"c{i % 2}",
        }
        for i, message_id in enumerate(ids)
    }
    (folder / f"{name}.json").write_text(json.dumps(export))
    (folder / f"{name}.gold.json").write_text(json.dumps({"messages": labels}))


def test_folds_print_each_held_out_log_and_the_folds_mean_and_spread(tmp_path):
    for name, seed in (("alpha", 1), ("beta", 2), ("gamma", 3)):
        _labelled_log(tmp_path, name, seed)
    shipped = ROOT / "conversation" / "relevance_weights.json"
    (tmp_path / "fold.json").write_text(shipped.read_text())
    manifest = tmp_path / "folds.json"
    manifest.write_text(
        json.dumps(
            {
                "folds": [
                    {"weights": "fold.json", "min_linear": 2, "held_out": ["alpha", "beta"]},
                    {"weights": "fold.json", "held_out": ["gamma"]},
                ]
            }
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_quality", str(tmp_path), "--folds", str(manifest)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    logs = {row.split("|")[1].strip(): row.split("|")[2].strip() for row in rows}
    assert logs["alpha"] == "1" and logs["beta"] == "1" and logs["gamma"] == "2"
    assert any(
        line.startswith("F1: mean ") and " to " in line for line in result.stdout.splitlines()
    )
    assert "all held-out triggers: P " in result.stdout


@pytest.mark.parametrize("module", ["bench.context_quality", "bench.context_ceiling"])
def test_a_broken_folds_manifest_is_one_line(tmp_path, module):
    """Both benches read a manifest through ``read_manifest``, and say a broken one alike."""
    _labelled_log(tmp_path, "alpha", 1)
    manifest = tmp_path / "folds.json"
    manifest.write_text('{"folds": [{"held_out": ["alpha"]}]}')
    result = subprocess.run(
        [sys.executable, "-m", module, str(tmp_path), "--folds", str(manifest)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {manifest}: not a folds manifest (run python -m bench.relevance_folds): "
        "KeyError: 'weights'"
    ]


def _fold_rows(folder: Path, manifest: Path, *flags: str) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_quality", str(folder), "--folds", str(manifest),
         *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line.strip("|").split("|") for line in result.stdout.splitlines()]
    return {cells[0].strip(): [c.strip() for c in cells[2:]] for cells in rows if len(cells) > 6}


def test_labelled_only_cuts_contexts_and_labels_at_the_first_annotated_message(tmp_path):
    """A log labelled throughout scores the same; one whose first half no label reaches loses
    the picks made there (counted wrong as they are), and only those."""
    _labelled_log(tmp_path, "whole", 1)
    export = busy_channel(seed=2, messages=40)
    ids = [message["id"] for message in export["messages"]]
    labels = {  # the first 20 unlabelled, as before the annotated part of an IRC log
        message_id: {"annotated": True, "parents": [], "conversation": f"c{i % 2}"}
        for i, message_id in enumerate(ids)
        if i >= 20
    }
    (tmp_path / "half.json").write_text(json.dumps(export))
    (tmp_path / "half.gold.json").write_text(json.dumps({"messages": labels}))
    (tmp_path / "fold.json").write_text((ROOT / "conversation" / WEIGHTS).read_text())
    manifest = tmp_path / "folds.json"
    manifest.write_text(
        # Ten recent messages always in: the first triggers reach back before the labels.
        json.dumps(
            {"folds": [{"weights": "fold.json", "min_linear": 10, "held_out": ["whole", "half"]}]}
        )
    )
    plain = _fold_rows(tmp_path, manifest)
    cut = _fold_rows(tmp_path, manifest, "--labelled-only")
    assert cut["whole"] == plain["whole"]
    # triggers, precision, recall, F1, parent recall, picked: same triggers and recall (every
    # gold message is labelled), fewer picks, each a miss before.
    assert cut["half"][0] == plain["half"][0] and cut["half"][2] == plain["half"][2]
    assert float(cut["half"][5]) < float(plain["half"][5])
    assert float(cut["half"][1]) > float(plain["half"][1])


def test_labelled_only_needs_folds(tmp_path):
    _labelled_log(tmp_path, "alpha", 1)
    result = subprocess.run(
        [sys.executable, "-m", "bench.context_quality", str(tmp_path), "--labelled-only"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == "error: --labelled-only: only with --folds"
