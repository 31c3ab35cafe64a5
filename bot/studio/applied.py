"""Which settings the studio's channel answers with: its ``[[channels]]`` table, or the top level.

The studio answers with the effective settings of the log's channel, as ``replay`` and the bot
would there. Tuning ``[context]`` on a channel that has its own table is only useful if the page
says so, and if what it copies changes that channel only: so this names the table (its number in
the file and what matched: the channel, its category or its server), the model in use and the
keys the table changes (``check-config``'s own lines, from ``bot.config.report``), and writes
"Copy as TOML" as that ``[[channels]]`` table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bot.config.channels import ChannelSettings
from bot.config.export_settings import place_of_export
from bot.config.report import table_differences, toml_value
from bot.config.schema import Config
from conversation.common import ContextSettings
from conversation.replay import ChannelExport

MATCH_KEYS = {"channel": "channel_ids", "category": "category_ids", "server": "guild_ids"}


class AppliedSettings(BaseModel):
    """What the page shows near the channel's title. ``table`` is None at the top level."""

    table: int | None = None  # the [[channels]] table's number in the file, from 1
    matched_by: str | None = None  # "channel", "category" or "server"
    match: dict[str, list[int]] = {}  # the table's match, as written
    model: str  # the model name answers go to
    changes: list[str] = []  # "[section] key = value": what the table changes from the top level
    summary: str  # the whole of it as one line


@dataclass(frozen=True)
class ChannelTable:
    """A ``[[channels]]`` table as written, to copy back with the page's ``[context]`` in it."""

    match: dict[str, list[int]]
    written: dict[str, Any]  # the table's keys besides match (model = "NAME" kept as written)
    top_context: ContextSettings

    def toml(self, settings: ContextSettings) -> str:
        """The table with ``settings`` as its ``[channels.context]``: the keys it already set
        and those that differ from the top level (so pasting it over the table changes only this
        channel, and keeps its other sections)."""
        lines = ["[[channels]]", f"match = {toml_value(self.match)}"]
        tables = {k: v for k, v in self.written.items() if isinstance(v, dict) and k != "context"}
        lines.extend(
            f"{key} = {toml_value(value)}"
            for key, value in self.written.items()
            if key != "context" and key not in tables
        )
        for section, values in tables.items():
            lines.append(f"[channels.{section}]")
            lines.extend(f"{key} = {toml_value(value)}" for key, value in values.items())
        written = self.written.get("context")
        set_here = set(written) if isinstance(written, dict) else set()
        top = self.top_context.model_dump(mode="json")
        context = [
            (key, value)
            for key, value in settings.model_dump(mode="json").items()
            if key in set_here or value != top[key]
        ]
        if context:
            lines.append("[channels.context]")
        for key, value in context:
            if value is None:  # TOML has no null: a table cannot unset a top-level key
                lines.append(f"# {key} = (unset: leave it out of [context] at the top level)")
            else:
                lines.append(f"{key} = {toml_value(value)}")
        return "\n".join(lines) + "\n"


def settings_for_studio(
    config: Config, export: ChannelExport
) -> tuple[Config, AppliedSettings, ChannelTable | None]:
    """The effective config of the exported channel, what the page says about it, and its
    ``[[channels]]`` table to copy (None: the top level applies)."""
    settings = ChannelSettings(config)
    place = place_of_export(export)
    found = settings.match_at(place)
    if found is None:
        effective = settings.top
        model = effective.model.name
        return (
            effective,
            AppliedSettings(
                model=model,
                summary=f"settings: top level (no [[channels]] table matches); model {model}",
            ),
            None,
        )
    index, level = found
    rule, effective = config.channels[index], settings.by_rule[index]
    match = {key: list(ids) for key, ids in rule.match.model_dump().items() if ids}
    changes = table_differences(rule, effective, settings.top)
    number, model = index + 1, effective.model.name
    matched_id = {"channel": place.channel_id, "category": place.category_id}.get(
        level, place.guild_id
    )
    matched = f"{MATCH_KEYS[level]} = [{matched_id}]"
    summary = (
        f"settings: [[channels]] {number}, matched by its {level} ({matched}); model {model}; "
        + (f"changes {', '.join(changes)}" if changes else "same settings as the top level")
    )
    applied = AppliedSettings(
        table=number,
        matched_by=level,
        match=match,
        model=model,
        changes=changes,
        summary=summary,
    )
    table = ChannelTable(match, dict(rule.model_extra or {}), settings.top.context)
    return effective, applied, table
