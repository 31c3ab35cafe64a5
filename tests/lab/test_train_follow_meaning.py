"""The follow trainer and study read cached embeddings (``--meanings``): a decision fitted with
them reads meaning, is written where ``--out`` says, and is measured with ``--weights``.

Run as the commands, on synthetic labelled logs and a cache of the format ``lab.meanings``
writes (random unit vectors: what is checked is the plumbing, not a gain).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conversation.selection.follow_model import MEANING_FOLLOW_FEATURES, load_follow_model_from
from tests.lab.test_train_relevance import ROOT, _labelled_log

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("numpy") is None, reason="needs numpy (the train extra)"
    ),
    pytest.mark.slow,
]


def _cache(folder: Path, cache: Path) -> None:
    """Each log's messages with a random unit vector, as ``lab.meanings`` stores them."""
    import numpy as np

    rng = np.random.default_rng(7)
    out = cache / folder.name
    out.mkdir(parents=True)
    for path in folder.glob("*.json"):
        if path.name.endswith(".gold.json"):
            continue
        ids = [int(m["id"]) for m in json.loads(path.read_text())["messages"]]
        vectors = rng.normal(size=(len(ids), 384))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        np.savez(out / f"{path.stem}.npz", ids=np.array(ids), vectors=vectors.astype(np.float16))


def _run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_decision_fitted_with_meanings_reads_them(tmp_path):
    folder = tmp_path / "irc-train"
    folder.mkdir()
    for name, seed in (("alpha", 1), ("beta", 2)):
        _labelled_log(folder, name, seed)
    cache = tmp_path / "meanings"
    _cache(folder, cache)
    out = tmp_path / "follow.json"
    _run("lab.train_follow", str(folder), "--meanings", str(cache), "--out", str(out))
    model = load_follow_model_from(out)
    assert model.reads_meaning and model.stage.features == MEANING_FOLLOW_FEATURES
    # The trees were fitted on known cosines: their means are not the missing -1.
    assert all(-1.0 < m < 1.0 for m in model.stage.means[-5:])
    measured = _run("lab.follow", str(folder), "--weights", str(out), "--meanings", str(cache))
    assert "fitted decision" in measured and "note:" not in measured
    blind = _run("lab.follow", str(folder), "--weights", str(out))
    assert "without --meanings every cosine is missing" in blind
