"""The map of ``config.toml`` sections in ``bot.config.schema``'s docstring stays true.

A newcomer looks a section up there; a section added, moved or renamed without updating the map
fails here, naming the line that is wrong.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import bot.config.schema
from bot.config.schema import Config

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\s+\[(?P<section>\w+)\]\s+(?P<cls>\w+)\s+(?P<file>[\w/]+\.py)$", re.M)


def _map() -> dict[str, tuple[str, str]]:
    doc = bot.config.schema.__doc__ or ""
    return {m["section"]: (m["cls"], m["file"]) for m in ROW.finditer(doc)}


def test_every_section_is_in_the_map_with_its_class_and_file() -> None:
    rows = _map()
    assert list(rows) == list(Config.model_fields), "sections of the map vs Config's fields"
    for section, field in Config.model_fields.items():
        cls = field.annotation
        assert isinstance(cls, type)
        named, file = rows[section]
        source = Path(inspect.getfile(cls)).resolve().relative_to(ROOT).as_posix()
        assert (named, file) == (cls.__name__, source), (
            f"[{section}] in bot/config/schema.py's docstring"
        )


def test_config_toml_lists_the_same_sections() -> None:
    sections = tomllib.loads((ROOT / "config.toml").read_text(encoding="utf-8"))
    assert set(sections) == set(_map())
