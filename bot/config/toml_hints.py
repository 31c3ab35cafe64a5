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
_SETTING = re.compile(r"^\s*([\w\"'. -]+?)\s*=")


def clash_hint(text: str, error: tomllib.TOMLDecodeError) -> str | None:
    """What to write instead when ``error`` comes from a key given both as a value and as a
    table (by a ``[table]`` header or a dotted key), in either order; None for any other error
    (its own message is then the best there is)."""
    message = str(error)
    position = _POSITION.search(message)
    if not message.startswith(_CLASH) or position is None:
        return None
    lines = text.splitlines()
    number = int(position[1])
    if not 0 < number <= len(lines):
        return None
    try:
        before = tomllib.loads("\n".join(lines[: number - 1]))  # everything up to that line
    except tomllib.TOMLDecodeError:
        return None
    line = lines[number - 1]
    header = _HEADER.match(line)
    if header is not None:
        return _hint(before, _keys(header[1]), _TABLE)
    setting = _SETTING.match(line)
    if setting is None:
        return None
    keys = _keys(setting[1])
    return _hint(before, _open_table(lines[: number - 1]) + keys, _value(line, keys))


_TABLE = object()  # what a ``[table]`` header gives its key


def _hint(document: dict[str, Any], path: list[str], given: object) -> str | None:
    """The hint when one side gives a key of ``path`` a value and the other a table; ``given``
    is what the failing line gives ``path``'s last key (``_TABLE`` for a header)."""
    gives_table = given is _TABLE or isinstance(given, dict)
    table: Any = document
    for depth, key in enumerate(path):
        if isinstance(table, list):  # an array of tables: the line writes into the last one
            table = table[-1] if table else {}
        if not isinstance(table, dict) or key not in table:
            return None
        found = table[key]
        is_table = isinstance(found, dict | list)
        if depth < len(path) - 1:
            if not is_table:  # a value where the line needs a table
                return _advice(path[: depth + 1], found)
            table = found
        elif is_table != gives_table:
            return _advice(path, found if gives_table else given)
    return None  # the same kind twice (a duplicate key): tomllib's own words fit


def _advice(path: list[str], name: object) -> str:
    where = ".".join(path)
    if path == ["channels", "model"] and isinstance(name, str):
        return (
            f'a [[channels]] table sets model both as a name (model = "{name}") and as a table; '
            f'write use = "{name}" inside [channels.model] instead'
        )
    return f"{path[-1]} is given both as a value and as a table ({where}); give it one of the two"


def _keys(dotted: str) -> list[str]:
    return [part.strip().strip("\"'") for part in dotted.split(".")]


def _open_table(lines: list[str]) -> list[str]:
    """The path of the table the next line writes into: the last header's, or the top level."""
    for line in reversed(lines):
        header = _HEADER.match(line)
        if header is not None:
            return _keys(header[1])
    return []


def _value(line: str, keys: list[str]) -> object:
    """What a ``key = value`` line gives its (last) key; None when the line alone is not TOML."""
    try:
        value: Any = tomllib.loads(line.strip())
        for key in keys:
            value = value[key]
    except (tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    return value
