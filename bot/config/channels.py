"""Per-channel settings: ``[[channels]]`` tables, and the effective settings of a channel.

One persona, one model and one set of thresholds for every channel is rarely right: a support
channel wants a careful persona and a large model, an off-topic channel a cheap one, a busy
channel a smaller ``max_total``. Each ``[[channels]]`` table has a ``match`` (any of
``channel_ids``, ``category_ids``, ``guild_ids``) and keys of the sections a channel may set
(``CHANNEL_SECTIONS``, those of them the config has: a section added later is picked up by
name, nothing else to change). A channel's ``model = "NAME"`` picks a ``[models.NAME]``
endpoint.

The most specific match wins, whole (channel, then category, then server, then the top level;
two tables never cascade), and a thread takes its parent channel's. The effective ``Config`` of
each table is built once, when the config is loaded (so a mistake is one line at load, naming
the table and the key), and looked up per answer by three dictionary reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bot.config.errors import explain
from bot.config.model_settings import CONNECTION_KEYS, ModelSettings
from bot.config.named_models import MAX_NAMED_MODELS, MODEL_NAME, NamedModel, model_with
from conversation.common import Snowflake, StrictSection

Config = Any
"""``bot.config.schema.Config``, which validates itself with this module (so cannot be imported
here): a config is read only through its ``model``, ``models`` and ``channels`` and the sections a
channel sets."""

CHANNEL_SECTIONS = ("model", "context", "triggers", "tools", "status", "threads", "catchup")
"""Sections a ``[[channels]]`` table may set, when the config has them."""
MAX_CHANNEL_TABLES = 500
MAX_MATCH_IDS = 1000
ENDPOINT_KEYS = frozenset(CONNECTION_KEYS) - {"name"}
"""[model] keys of the connection: a channel picks another endpoint by name instead."""

GLOBAL_KEYS = {
    ("triggers", "max_concurrent_answers"): "a limit across all channels",
    ("triggers", "allow_dms"): "direct messages belong to no channel table",
    ("model", "vision"): "images are read once for every channel",
    ("tools", "mcp"): "the MCP servers are started once, for every channel",
}
"""Keys of a channel section that cannot differ per channel, and why."""


class ChannelMatch(StrictSection):
    """Where a ``[[channels]]`` table applies: any channel, category or server listed."""

    channel_ids: tuple[Snowflake, ...] = Field((), max_length=MAX_MATCH_IDS)
    category_ids: tuple[Snowflake, ...] = Field((), max_length=MAX_MATCH_IDS)
    guild_ids: tuple[Snowflake, ...] = Field((), max_length=MAX_MATCH_IDS)

    @model_validator(mode="after")
    def _matches_something(self) -> ChannelMatch:
        if not (self.channel_ids or self.category_ids or self.guild_ids):
            raise ValueError("needs channel_ids, category_ids or guild_ids (ids without quotes)")
        return self


class ChannelRule(BaseModel):
    """One ``[[channels]]`` table as written: ``match`` and section tables, checked against
    the whole config (``effective_configs``) since what a key may be depends on its section."""

    model_config = ConfigDict(extra="allow", frozen=True)

    match: ChannelMatch

    def overrides(self) -> dict[str, Any]:
        """Each section the table sets, with its keys (``model = "NAME"`` is ``use``)."""
        tables = dict(self.model_extra or {})
        if isinstance(tables.get("model"), str):
            tables["model"] = {"use": tables["model"]}
        return tables

    def describe_match(self) -> str:
        parts = [
            f"{key} = [{', '.join(str(i) for i in ids)}]"
            for key in ("channel_ids", "category_ids", "guild_ids")
            if (ids := getattr(self.match, key))
        ]
        return ", ".join(parts)


def check_models(models: Mapping[str, NamedModel]) -> None:
    if len(models) > MAX_NAMED_MODELS:
        raise ValueError(f"[models] {len(models)} tables: at most {MAX_NAMED_MODELS}")
    for name in models:
        if not MODEL_NAME.fullmatch(name):
            raise ValueError(
                f"[models] {name!r}: a name is letters, digits, - and _ (at most 40 characters)"
            )


def top_level(config: Config) -> Config:
    """The config as the top level answers with it: ``[model] use`` resolved to its endpoint."""
    use = config.model.use
    if use is None:
        return config
    named = _named(config, use, "[model] use")
    return config.model_copy(update={"model": _model(config.model, {}, named, "[model]")})


def effective_configs(config: Config) -> list[Config]:
    """The effective config of each ``[[channels]]`` table, in the file's order.

    Raises ``ValueError("[[channels]] N [section] key: what is wrong")`` for the first problem.
    """
    if len(config.channels) > MAX_CHANNEL_TABLES:
        raise ValueError(
            f"[[channels]] {len(config.channels)} tables: at most {MAX_CHANNEL_TABLES}"
        )
    top = top_level(config)
    sections = [name for name in CHANNEL_SECTIONS if name in type(config).model_fields]
    configs = []
    for number, rule in enumerate(config.channels, start=1):
        where = f"[[channels]] {number}"
        updates: dict[str, Any] = {}
        for section, changes in rule.overrides().items():
            if section not in sections:
                allowed = ", ".join(["match", *sections])
                raise ValueError(f"{where} {section}: unknown key (a channel sets {allowed})")
            if not isinstance(changes, dict):
                named = 'a [models.NAME] name (model = "big") or ' if section == "model" else ""
                raise ValueError(
                    f"{where} {section}: must be {named}a table ([channels.{section}])"
                )
            updates[section] = _section(config, section, changes, f"{where} [{section}]")
        configs.append(top.model_copy(update=updates))
    _check_unambiguous(config)
    return configs


def _section(config: Config, section: str, changes: dict[str, Any], where: str) -> Any:
    current = getattr(config, section)
    fields = type(current).model_fields
    for key in changes:
        if key not in fields:
            raise ValueError(f"{where} {key}: unknown key (check its spelling against config.toml)")
        if (section, key) in GLOBAL_KEYS:
            why = GLOBAL_KEYS[section, key]
            raise ValueError(f"{where} {key}: set only at the top level, [{section}] ({why})")
    if section == "tools" and changes.get("enabled") is True and not current.enabled:
        raise ValueError(
            f"{where} enabled: needs [tools] enabled = true at the top level (the tools start "
            "once, for every channel); turn them off in the channels that should not have them"
        )
    if section == "model":
        refused = sorted(set(changes) & ENDPOINT_KEYS)
        if refused:
            raise ValueError(
                f"{where} {refused[0]}: set per endpoint: declare a [models.NAME] table and "
                'choose it with model = "NAME"'
            )
        use = changes.get("use", config.model.use)
        named = None if use is None else _named(config, use, f"{where} use")
        return _model(config.model, changes, named, where)
    written = current.model_dump(mode="json", exclude_unset=True)
    try:
        checked = type(current).model_validate_json(json.dumps(written | changes), strict=True)
    except ValidationError as error:
        raise ValueError(_first_problem(error, where, type(current))) from None
    return current.model_copy(update={key: getattr(checked, key) for key in changes})


def _model(
    base: ModelSettings, changes: dict[str, Any], named: NamedModel | None, where: str
) -> ModelSettings:
    try:
        return model_with(base, changes, named)
    except ValidationError as error:
        raise ValueError(_first_problem(error, where, ModelSettings)) from None


def _named(config: Config, name: str, where: str) -> NamedModel:
    named = config.models.get(name)
    if named is None:
        known = ", ".join(config.models) or "none are declared"
        raise ValueError(f"{where}: no [models.{name}] table (the named models: {known})")
    return named


def _first_problem(error: ValidationError, where: str, schema: type[BaseModel]) -> str:
    """The first problem of a channel's section, worded as ``check-config`` words any other."""
    detail = error.errors()[0]
    location = [str(part) for part in detail["loc"]]
    key = ".".join(location)
    message = explain(detail, schema, location)
    if detail["type"] == "value_error":
        named, _, rest = message.partition(": ")
        if not key and rest and named.isidentifier():
            key, message = named, rest
    return f"{where} {key}: {message}" if key else f"{where}: {message}"


def _check_unambiguous(config: Config) -> None:
    for kind in ("channel_ids", "category_ids", "guild_ids"):
        seen: dict[int, int] = {}
        for number, rule in enumerate(config.channels, start=1):
            for snowflake in getattr(rule.match, kind):
                if snowflake in seen and seen[snowflake] != number:
                    raise ValueError(
                        f"[[channels]] {number} match {kind}: {snowflake} is already matched by "
                        f"[[channels]] {seen[snowflake]} (one table per id)"
                    )
                seen[snowflake] = number


@dataclass(frozen=True)
class Place:
    """What a channel is matched by: itself (a thread: its parent), its category, its server."""

    channel_id: int
    category_id: int | None
    guild_id: int | None


class ChannelSettings:
    """The effective settings of every channel of one config, built once per (re)load."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.top = top_level(config)
        self.by_rule = effective_configs(config)
        self._index: list[dict[int, int]] = [{}, {}, {}]
        for number, rule in enumerate(config.channels):
            for level, ids in enumerate(
                (rule.match.channel_ids, rule.match.category_ids, rule.match.guild_ids)
            ):
                for snowflake in ids:
                    self._index[level].setdefault(snowflake, number)

    def rule_for(self, place: Place) -> int | None:
        """The index of the most specific ``[[channels]]`` table matching, None: top level."""
        found = self.match_at(place)
        return None if found is None else found[0]

    def match_at(self, place: Place) -> tuple[int, str] | None:
        """The index of the most specific table matching and what matched (``"channel"``,
        ``"category"`` or ``"server"``), None: the top level applies."""
        by_channel, by_category, by_guild = self._index
        for index, key, level in (
            (by_channel, place.channel_id, "channel"),
            (by_category, place.category_id, "category"),
            (by_guild, place.guild_id, "server"),
        ):
            if key is not None and key in index:
                return index[key], level
        return None

    def settings_at(self, place: Place) -> Config:
        """The effective config at ``place``: its table's, else the top level's."""
        rule = self.rule_for(place)
        return self.top if rule is None else self.by_rule[rule]

    def __iter__(self) -> Iterator[tuple[ChannelRule, Config]]:
        return iter(zip(self.config.channels, self.by_rule, strict=True))
