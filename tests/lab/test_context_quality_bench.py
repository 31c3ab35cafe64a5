"""The context-quality benchmark's reply-heavy variant: a server where everyone replies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conversation.selection.weights import WEIGHTS_FILE as WEIGHTS
from tests.fakes.synthetic import busy_channel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def reply_chain_row(folder: Path, *flags: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "lab.context_quality", str(folder), "--only", "reply chain only",
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
    shipped = ROOT / "conversation" / "selection" / "relevance_weights.json"
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
        [sys.executable, "-m", "lab.context_quality", str(tmp_path), "--folds", str(manifest)],
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
    # The folds' log rows read back: the same weights lose nowhere; a log that once scored
    # more is named.
    gamma = next(row for row in rows if row.startswith("| gamma"))
    cells = gamma.split("|")
    cells[6] = f" {float(cells[6]) + 0.05:.3f} "  # | log | fold | triggers | P | R | F1 |
    earlier = tmp_path / "earlier.txt"
    earlier.write_text(result.stdout.replace(gamma, "|".join(cells)))
    compared = subprocess.run(
        [sys.executable, "-m", "lab.context_quality", str(tmp_path), "--folds", str(manifest),
         "--against", str(earlier)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert "(3 logs in both): 0 gain, 1 lose; 0 gain and 1 lose more than 0.02" in compared.stdout
    assert "\n  gamma (" in compared.stdout and "(-0.050)" in compared.stdout


@pytest.mark.parametrize("module", ["lab.context_quality", "lab.context_ceiling"])
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
        f"error: {manifest}: not a folds manifest (run python -m lab.relevance_folds): "
        "KeyError: 'weights'"
    ]


def _fold_rows(folder: Path, manifest: Path, *flags: str) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "lab.context_quality", str(folder), "--folds", str(manifest),
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
    (tmp_path / "fold.json").write_text((ROOT / "conversation" / "selection" / WEIGHTS).read_text())
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
        [sys.executable, "-m", "lab.context_quality", str(tmp_path), "--labelled-only"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == "error: --labelled-only: only with --folds"


def _quality(folder: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab.context_quality", str(folder), "--only",
         "threadwise builder", "--per-log", *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip


def test_against_names_the_logs_that_lost_more_than_the_tolerance(tmp_path):
    """An earlier output read back: the same run changes nothing; a log that scored higher
    before is named with both figures, one within the tolerance is only counted."""
    data = tmp_path / "logs"
    data.mkdir()
    for name, seed in (("alpha", 1), ("beta", 2), ("gamma", 3)):
        _labelled_log(data, name, seed)
    first = _quality(data)
    assert first.returncode == 0, first.stderr
    rows = {
        line.split("|")[1].strip(): line
        for line in first.stdout.splitlines()
        if line.startswith(("| alpha", "| beta", "| gamma"))
    }
    assert set(rows) == {"alpha", "beta", "gamma"}
    same = tmp_path / "same.txt"
    same.write_text(first.stdout)
    again = _quality(data, "--against", str(same))
    assert again.returncode == 0, again.stderr
    assert "(3 logs in both): 0 gain, 0 lose; 0 gain and 0 lose more than 0.02" in again.stdout

    def with_f1(row: str, change: float) -> str:
        cells = row.split("|")
        cells[5] = f" {float(cells[5]) + change:.3f} "  # | log | triggers | P | R | F1 |
        return "|".join(cells)

    better_before = first.stdout.replace(rows["alpha"], with_f1(rows["alpha"], 0.1))
    better_before = better_before.replace(rows["beta"], with_f1(rows["beta"], 0.01))
    earlier = tmp_path / "earlier.txt"
    earlier.write_text(better_before + "| delta | 40 | 0.5 | 0.5 | 0.5 | 1.0 | 3.0 |\n")
    compared = _quality(data, "--against", str(earlier))
    assert compared.returncode == 0, compared.stderr
    report = compared.stdout[compared.stdout.index("against ") :].splitlines()
    assert "(3 logs in both): 0 gain, 2 lose; 0 gain and 1 lose more than 0.02" in report[0]
    f1 = float(rows["alpha"].split("|")[5])
    assert report[1].strip().startswith("alpha (")
    assert report[1].strip().endswith(f"{f1 + 0.1:.3f} -> {f1:.3f} (-0.100)")
    assert report[2] == "  not scored here: delta"


def test_against_needs_per_log_figures(tmp_path):
    _labelled_log(tmp_path, "alpha", 1)
    earlier = tmp_path / "earlier.txt"
    earlier.write_text("| selector | precision |\n")
    for flags, says in (
        ((), "error: --against: only with --folds or --per-log"),
        (("--per-log",), f"error: --against: {earlier}: no log rows in it"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "lab.context_quality", str(tmp_path), "--only",
             "threadwise builder", *flags, "--against", str(earlier)],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert result.returncode == 2 and result.stderr == says + "\n"
