"""The map of ``config.toml`` sections in ``bot.config.schema``'s docstring stays true.

A newcomer looks a section up there; a section added, moved or renamed without updating the map
fails here, naming the line that is wrong.
"""

from __future__ import annotations

import inspect
import re
import tomllib
import typing
from pathlib import Path

import bot.config.schema
from bot.config.schema import Config

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(
    r"^\s+(?:\[\[(?P<tables>\w+)\]\]|\[(?P<section>\w+)(?:\.NAME)?\])\s+(?P<cls>\w+)"
    r"\s+(?P<file>[\w/]+\.py)$",
    re.M,
)
TABLES = {"models", "channels"}  # [models.NAME] and [[channels]]: tables of one class each


def _map() -> dict[str, tuple[str, str]]:
    doc = bot.config.schema.__doc__ or ""
    return {m["tables"] or m["section"]: (m["cls"], m["file"]) for m in ROW.finditer(doc)}


def _section_class(section: str) -> object:
    """A section's class; for [models.NAME] and [[channels]], the class of each table."""
    annotation = Config.model_fields[section].annotation
    if section in TABLES:
        return typing.get_args(annotation)[-1 if section == "models" else 0]
    return annotation


def test_every_section_is_in_the_map_with_its_class_and_file() -> None:
    rows = _map()
    assert list(rows) == list(Config.model_fields), "sections of the map vs Config's fields"
    for section in Config.model_fields:
        cls = _section_class(section)
        assert isinstance(cls, type)
        named, file = rows[section]
        source = Path(inspect.getfile(cls)).resolve().relative_to(ROOT).as_posix()
        assert (named, file) == (cls.__name__, source), (
            f"[{section}] in bot/config/schema.py's docstring"
        )


def test_config_toml_lists_the_same_sections() -> None:
    text = (ROOT / "config.toml").read_text(encoding="utf-8")
    sections = tomllib.loads(text)
    # Named models and channel tables name real endpoints and ids: shipped as commented examples.
    assert set(sections) == set(_map()) - TABLES
    assert "\n# [models.big]\n" in text and "\n# [[channels]]\n" in text
