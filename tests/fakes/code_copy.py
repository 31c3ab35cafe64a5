"""A copy of the project's code with one file cut short, for tests of how commands fail.

A command run with the copy first on ``PYTHONPATH`` imports the copy, so a broken shipped file
(weights, say) can be tested through the real command without touching the installed one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fakes.harness import ROOT


def code_copy_with(tmp_path: Path, relative: str, text: str) -> Path:
    """``bot/`` and ``conversation/`` copied into ``tmp_path`` with ``relative`` replaced by
    ``text``, and a minimal ``config.toml`` beside them (a token, an unreachable Discord, a
    store in the folder)."""
    for package in ("bot", "conversation"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (tmp_path / relative).write_text(text, encoding="utf-8")
    (tmp_path / "config.toml").write_text(
        '[discord]\ntoken = "not-a-real-token"\napi_base = "http://127.0.0.1:9/api/v10"\n'
        '[storage]\npath = "store.sqlite3"\n',
        encoding="utf-8",
    )
    return tmp_path


def run_bot_in(copy: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``python -m bot COMMAND --config copy/config.toml`` with the copy first on the path and
    no ``DISCORD_TOKEN`` from the environment (the copy's config carries its own)."""
    env = {key: value for key, value in os.environ.items() if key != "DISCORD_TOKEN"}
    return subprocess.run(
        [sys.executable, "-m", "bot", *command, "--config", str(copy / "config.toml")],
        capture_output=True,
        text=True,
        cwd=copy,
        env=env | {"PYTHONPATH": str(copy)},
        timeout=60,
    )
