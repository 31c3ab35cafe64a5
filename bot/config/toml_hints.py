"""What to write instead, for the TOML clash that tomllib reports without saying how to fix it.

A key given both as a value and as a table is invalid TOML, and tomllib says only "Cannot
overwrite a value (at line 10, column 16)". In a ``[[channels]]`` table it is the easy mistake
(``model = "big"`` names an endpoint, then ``[channels.model]`` sets the persona) and its fix,
``use = "big"`` inside ``[channels.model]``, is not something the message lets anyone guess.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

_CLASH = "Cannot overwrite a value"
_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")


def clash_hint(text: str, error: tomllib.TOMLDecodeError) -> str | None:
    """What to write instead when ``error`` is a table header naming a key the same table
    already gave a value; None for any other error (its own message is then the best there is)."""
    message = str(error)
    position = _POSITION.search(message)
    if not message.startswith(_CLASH) or position is None:
        return None
    lines = text.splitlines()
    number = int(position[1])
    header = _HEADER.match(lines[number - 1]) if 0 < number <= len(lines) else None
    if header is None:
        return None
    path = [part.strip().strip("\"'") for part in header[1].split(".")]
    try:
        before = tomllib.loads("\n".join(lines[: number - 1]))  # everything up to the header
    except tomllib.TOMLDecodeError:
        return None
    table = _table_at(before, path[:-1])
    key = path[-1]
    if table is None or key not in table or isinstance(table[key], dict):
        return None
    value, where = table[key], ".".join(path)
    if path == ["channels", "model"] and isinstance(value, str):
        return (
            f'a [[channels]] table sets model both as a name (model = "{value}") and as the '
            f'table [channels.model]; write use = "{value}" inside [channels.model] instead'
        )
    return f"{key} is given both as a value and as the table [{where}]; give it one of the two"


def _table_at(document: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    """The table a header's path leads to, the last one of an array of tables (the one being
    written)."""
    table: Any = document
    for key in path:
        table = table.get(key) if isinstance(table, dict) else None
        if isinstance(table, list):
            table = table[-1] if table else None
    return table if isinstance(table, dict) else None
