"""docs/how-it-works.md names files that exist, so the call chain it draws can be followed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    return (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")


def test_every_file_named_in_how_it_works_exists() -> None:
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", _section()))
    assert len(named) > 20
    # The package table names files inside their package, so every package is a base.
    packages = [
        path.parent
        for top in ("bot", "conversation")
        for path in (ROOT / top).glob("*/__init__.py")
    ]
    bases = [ROOT, ROOT / "bot", ROOT / "conversation", *packages]
    missing = sorted(name for name in named if not any((base / name).exists() for base in bases))
    assert not missing, f"docs/how-it-works.md names files that are not there: {missing}"
