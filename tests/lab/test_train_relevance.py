"""The relevance trainer chooses its threshold for the config as shipped.

Run as the command (tests never import bench), on synthetic labelled logs: the defaults it
chooses (threshold, best candidates always in) suit the ``[context] min_linear`` that
config.toml ships, the recent messages the bot keeps whatever the trainer would prefer.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.clues import clue_of
from conversation.selection.weights import load_model_from
from tests.fakes.synthetic import busy_channel

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


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One fit on two labelled logs (``--out`` in a folder of its own), shared by the tests
    that read what it printed and what it wrote: the same run the two of them made apart
    (``--dry-run`` only leaves the write out), a fit less."""
    folder = tmp_path_factory.mktemp("labelled")
    for name, seed in (("alpha", 1), ("beta", 2)):
        _labelled_log(folder, name, seed)
    out = tmp_path_factory.mktemp("weights") / "weights.json"
    result = subprocess.run(
        [sys.executable, "-m", "lab.train_relevance", str(folder), "--out", str(out),
         "--triggers", "200", "--threshold-triggers", "100"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, out


def test_the_threshold_is_chosen_for_the_shipped_min_linear(trained):
    shipped = tomllib.loads((ROOT / "config.toml").read_text())["context"]["min_linear"]
    stdout, _ = trained
    tried = [int(m) for m in re.findall(r"min_linear +(\d+) best", stdout)]
    assert tried and set(tried) == {shipped}


def test_the_answer_ranking_learns_which_message_a_trigger_answers(trained):
    """In these logs every message answers the one three before it: the ranking fitted beside
    the score must put that one first for nearly every trigger (a ranking that learned nothing
    would pick it about one time in the number of candidates)."""
    _, out = trained
    model = load_model_from(out).model_copy(update={"second_look_floor": 0.0})
    assert model.answers is not None  # in the file whatever the choice (0 skips its step)
    source = LogSource(parse_export(busy_channel(seed=3, messages=120)))
    first = total = 0
    for index in range(40, 120):
        trigger = clue_of(source.messages[index])
        history = [clue_of(m) for m in reversed(source.messages[index - 30 : index])]
        scored = model.score_threads(trigger, history, set())
        chances = [model.answers.probability((*s.row, s.score)) for s in scored]
        first += max(range(len(chances)), key=chances.__getitem__) == 2  # three before
        total += 1
    assert first >= 0.8 * total


def test_the_defaults_keep_the_parent_floor_in_both_build_modes(tmp_path):
    """One choice serves a bot that saw the channel (its cache reaches 199 messages back) and one
    just restarted (one history page): its parent recall is the lower of the two."""
    for name, seed in (("alpha", 1), ("beta", 2)):
        # No silence seals the walk, and every fifth message answers one 150 back: past the
        # history page, in the cache.
        export = busy_channel(seed=seed, messages=260, silence_rate=0.0)
        ids = [message["id"] for message in export["messages"]]
        labels = {
            message_id: {
                "annotated": True,
                "parents": [ids[i - 150] if i % 5 == 0 and i >= 150 else ids[i - 3]],
                "conversation": f"c{i % 3}",
            }
            for i, message_id in enumerate(ids)
            if i >= 3
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(export))
        (tmp_path / f"{name}.gold.json").write_text(json.dumps({"messages": labels}))
    result = subprocess.run(
        [sys.executable, "-m", "lab.train_relevance", str(tmp_path), "--dry-run",
         "--triggers", "200", "--threshold-triggers", "200"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    default = re.search(r"parent recall (\d\.\d+) <- default", result.stdout)
    modes = dict(re.findall(r"the default, (.+?): P .* parent recall (\d\.\d+)", result.stdout))
    assert default is not None and set(modes) == {"warm", "cold"}
    assert modes["cold"] < modes["warm"]
    assert default.group(1) == modes["cold"]
