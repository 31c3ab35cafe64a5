"""Pydantic's validation errors told as an operator reads them: one line per problem.

Each line names the file, ``[section] key`` and what is expected; every problem is shown at once
so a config with three typos takes one round trip, not three. Values of secret keys are never
echoed, since a mistyped token is still a token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from conversation.common import Snowflake

SECRET_KEYS = frozenset({"token", "api_key", "password", "url_password"})


def describe_errors(path: Path, error: ValidationError, schema: type[BaseModel]) -> list[str]:
    """One ``path: [section] key: what is wrong`` line for every problem, section by section."""
    lines = [_describe(path, detail, schema) for detail in error.errors()]
    return list(dict.fromkeys(lines))  # a union type can report one problem twice


def _describe(path: Path, detail: ErrorDetails, schema: type[BaseModel]) -> str:
    location = [str(part) for part in detail["loc"]]
    kind = detail["type"]
    if kind == "extra_forbidden" and len(location) == 1:
        return f"{path}: {_unknown_top_level(location[0], detail.get('input'), schema)}"
    if location == ["channels"] and kind in ("tuple_type", "list_type"):
        return f"{path}: [channels]: write each channel table as [[channels]] (two brackets)"
    if location == ["models"] and kind == "dict_type":
        return f"{path}: [models]: write each model as its own [models.NAME] table"
    section = f"[{location[0]}]" if location else ""
    if location[:1] == ["channels"] and location[1:2] and location[1].isdigit():
        # A [[channels]] table is named by its place in the file, counted from 1.
        section, location = f"[[channels]] {int(location[1]) + 1}", [location[0], *location[2:]]
    elif location[:1] == ["models"] and len(location) > 1:
        section, location = f"[models.{location[1]}]", [location[0], *location[2:]]
    key = ".".join(location[1:])
    where = f"{section} {key}".strip() or "top level"
    message = explain(detail, schema, location)
    if kind == "value_error":
        # Cross-field checks are raised as "key: what is wrong" so the key can still be named.
        named, _, rest = message.partition(": ")
        if not key and rest and named.isidentifier():
            where, message = f"{section} {named}", rest
        elif not location and rest and SECTION_KEY.match(named):  # across sections, tables
            where, message = named, rest
    return f"{path}: {where}: {message}"


def explain(detail: ErrorDetails, schema: type[BaseModel], location: list[str]) -> str:
    """What is wrong, worded as every config line words it (``location``: the path to the key
    within ``schema``, to find its bound note; a secret's value is never shown)."""
    kind = detail["type"]
    if kind == "extra_forbidden":
        return "unknown key (check its spelling against config.toml)"
    if kind == "value_error":
        context: Mapping[str, Any] = detail.get("ctx") or {}
        return str(context.get("error", detail["msg"]))
    if location[-1:] and location[-1] in SECRET_KEYS:
        return detail["msg"]
    if kind in BOUND_WORDS:
        return _bound(kind, detail, _field_note(schema, location))
    message = f"{detail['msg']} (got {_shown(detail.get('input'))})"
    if kind in NUMBER_KINDS and _quoted_number(detail.get("input")):
        # The hint names what the key holds: a port or a count is no id.
        what = "ids" if _holds_ids(schema, location) else "numbers"
        message += f" (write {what} without quotes)"
    return message


NUMBER_KINDS = frozenset({"int_type", "int_parsing", "float_type", "float_parsing"})


# Pydantic's bound checks, told as "[storage] retention_days: at most 36500 (100 years), got
# 1000000": the bound, what it means when the field says (``bound_note``), what was written.
BOUND_WORDS = {
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("more than", "gt"),
    "finite_number": ("a finite number", None),
}


def _bound(kind: str, detail: ErrorDetails, note: str | None) -> str:
    words, key = BOUND_WORDS[kind]
    context: Mapping[str, Any] = detail.get("ctx") or {}
    bound = f" {_number(context[key])}" if key is not None and key in context else ""
    said = f" ({note})" if note and kind in ("less_than_equal", "less_than") else ""
    return f"{words}{bound}{said}, got {_shown(detail.get('input'))}"


def _number(value: Any) -> str:
    """A bound as written in config.toml: 36500, 0.2, 1000000 (not 1e+06)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _field_note(schema: type[BaseModel], location: list[str]) -> str | None:
    """The ``bound_note`` a field gives its upper bound ("100 years"), if any."""
    model: Any = schema
    field = None
    for part in location:
        fields = getattr(model, "model_fields", None)
        if not isinstance(fields, dict) or part not in fields:
            return None
        field = fields[part]
        model = field.annotation
    extra = field.json_schema_extra if field is not None else None
    return extra.get("bound_note") if isinstance(extra, dict) else None  # type: ignore[return-value]


def _holds_ids(schema: type[BaseModel], location: list[str]) -> bool:
    """Whether the key at ``location`` takes Discord ids (``Snowflake``), looked up through the
    tables, arrays and optional values on the way."""
    annotation: Any = schema
    for part in location:
        if part.isdigit():
            continue  # the place in an array
        model = _model_in(annotation)
        if model is None or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
    return _mentions(annotation, Snowflake)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, (_model_in(arg) for arg in get_args(annotation))), None)


def _mentions(annotation: Any, wanted: Any) -> bool:
    return annotation == wanted or any(_mentions(arg, wanted) for arg in get_args(annotation))


def _unknown_top_level(name: str, value: Any, schema: type[BaseModel]) -> str:
    """A table is an unknown section; a bare ``key = value`` is a key outside any section."""
    if isinstance(value, dict):
        return f"[{name}]: unknown section (the sections are {_sections(schema)})"
    owners = [
        section
        for section, field in schema.model_fields.items()
        if isinstance(field.annotation, type)
        and issubclass(field.annotation, BaseModel)
        and name in field.annotation.model_fields
    ]
    hint = f"; did you mean [{owners[0]}] {name}?" if owners else ""
    return f"{name}: key outside any section: every setting goes under a [section]{hint}"


def _sections(schema: type[BaseModel]) -> str:
    return ", ".join(f"[{name}]" for name in schema.model_fields)


SECTION_KEY = re.compile(r"\[\w+\] \w+$|\[\[channels\]\] \d+|\[models[\].]")


def _quoted_number(value: Any) -> bool:
    """A number written as a string: an id copied with quotes, ``"123"``."""
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()


def _shown(value: Any) -> str:
    # TOML spells booleans in lower case; show the operator what they wrote.
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
