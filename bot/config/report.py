"""``check-config``'s printout: the effective settings as TOML, and what the bot reads and keeps.

The printout is itself a valid ``config.toml`` (unset keys are commented out, secrets masked), so
an operator can start a file from it. The two privacy facts come first because they are what a
server's members would ask about, and the defaults are not what reply-chain bots do.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.config.channels import effective_configs
from bot.config.model_settings import ModelSettings
from bot.config.schema import Config, ConfigSource
from bot.config.store_url import masked_url
from conversation.prompt import Budget

if TYPE_CHECKING:
    from bot.config.channels import ChannelRule

MASKED = "**********"


def trigger_fact(config: Config) -> str:
    """When the bot answers, following included: it answers without a mention by default,
    which an operator must know before members ask why it spoke."""
    triggers = config.triggers
    ways = ["mentions of it", "replies to its messages"]
    if triggers.allow_dms:
        ways.append("direct messages ([triggers] allow_dms)")
    if triggers.always_on_channels:
        count = len(triggers.always_on_channels)
        ways.append(
            f"every message in {count} channel{'s' if count != 1 else ''} "
            "([triggers] always_on_channels)"
        )
    if triggers.follow:
        off = len(triggers.follow_off_channels)
        except_in = f", except in {off} channel{'s' if off != 1 else ''}" if off else ""
        ways.append(
            f"follow-ups without a mention for {triggers.follow_minutes:g} minutes after it "
            f"answers in a channel{except_in} ([triggers] follow, follow_minutes)"
        )
    else:
        ways.append("no follow-ups without a mention ([triggers] follow = false)")
    tables = " ([[channels]] tables may change this per channel)" if config.channels else ""
    return f"answers: {', '.join(ways[:-1])} and {ways[-1]}{tables}"


def privacy_facts(config: Config) -> list[str]:
    """What reaches the model and what stays on disk, with the keys that change it."""
    context = config.context
    longest = context.longest_total
    grown = (
        f" ({longest} in a channel whose conversations run long"
        f"{'' if context.max_total_long else ', where the score reads meaning'}: max_total_long)"
        if longest > context.max_total
        else ""
    )
    reads = (
        f"reads: each answer sends the model up to {context.max_total} earlier messages of "
        f"the channel{grown}, always the {context.min_linear} most recent ones, so people who "
        "never addressed the bot are in it ([context] min_linear, max_total)"
    )
    storage = config.storage
    days = storage.retention_days
    kept = "forever" if days == 0 else f"for {days} day{'s' if days != 1 else ''}"
    keeps = (
        f"keeps: every answer (the messages sent to the model, the answer, its work log) in "
        f"{storage.location}, {kept} ([storage] retention_days); forget-user removes one person"
    )
    facts = [reads, keeps]
    if context.summarize:
        writer = f"[models.{context.summary_model}]" if context.summary_model else "the model"
        facts.append(
            f"summarizes: a conversation that outgrows its room has its older half sent to "
            f"{writer} once more, to be summarized; the summary is sent in its place and kept "
            "with the answers ([context] summarize)"
        )
    return facts


def anywhere(config: Config, on: Callable[[Config], bool]) -> bool:
    """Whether ``on`` holds at the top level or in any ``[[channels]]`` table."""
    return on(config) or any(on(channel) for channel in effective_configs(config))


def permission_facts(config: Config) -> list[str]:
    """The Discord permissions the settings need beyond answering (the invite URL the bot
    logs at start asks for them too)."""
    facts = []
    if anywhere(config, lambda c: c.threads.enabled):
        facts.append(
            "needs: Create Public Threads and Send Messages in Threads where [threads] is on; "
            "without them a conversation stays in the channel, and nothing is said"
        )
    if anywhere(config, lambda c: c.status.reactions):
        facts.append("needs: Add Reactions where [status] reactions is on (else no reaction)")
    return facts


def render_config(config: Config, source: ConfigSource) -> str:
    lines = [f"# effective configuration from {source.describe()}; secrets masked"]
    facts = [trigger_fact(config), *privacy_facts(config), *permission_facts(config)]
    lines.extend(f"# {fact}" for fact in facts)
    for section, values in config.masked().items():
        if section in ("channels", "models"):
            continue  # tables of tables: below
        if section == "storage":
            values = _storage_values(config, values)
        lines.append("")
        lines.append(f"[{section}]")
        for key, value in values.items():
            lines.append(_setting(key, value))
        if section == "model":
            from bot.config.channels import top_level

            answering = top_level(config).model  # [model] use resolved to its endpoint
            if config.model.use is not None:
                lines.append(
                    f"# use = {toml_value(config.model.use)}: answers go to "
                    f"[models.{config.model.use}], {answering.name} at {answering.base_url}"
                )
            lines.extend(explain_budget(answering))
    lines.extend(_named_models(config))
    lines.extend(_channel_tables(config))
    return "\n".join(lines) + "\n"


def _named_models(config: Config) -> list[str]:
    lines: list[str] = []
    for name, values in config.masked()["models"].items():
        lines.extend(["", f"[models.{_key(name)}]"])
        variable = values.get("api_key_env")
        if variable is not None:
            # The key came from the variable: a masked api_key beside it reads as a second key
            # written in the file.
            values = {key: value for key, value in values.items() if key != "api_key"}
        lines.extend(_setting(key, value) for key, value in values.items())
        if variable is not None:
            told = "set" if config.models[name].api_key is not None else "NOT SET"
            lines.append(f"# api_key: read from the environment variable {variable} ({told})")
    return lines


def _channel_tables(config: Config) -> list[str]:
    """Each ``[[channels]]`` table as written, then, as comments, the settings in effect where
    it matches that differ from the top level's (so what a channel really gets is visible)."""
    from bot.config.channels import ChannelSettings

    table = ChannelSettings(config)
    lines: list[str] = []
    for number, (rule, effective) in enumerate(table, start=1):
        lines.extend(["", "[[channels]]", f"match = {toml_value(rule.match.model_dump())}"])
        differences = [f"#   {line}" for line in table_differences(rule, effective, table.top)]
        where = rule.describe_match()
        if differences:
            lines.append(f"# [[channels]] {number}: in effect where it matches ({where}):")
            lines.extend(differences)
        else:
            lines.append(f"# [[channels]] {number}: same settings as the top level ({where})")
        for section, values in rule.overrides().items():
            lines.append(f"[channels.{section}]")
            lines.extend(_setting(key, value) for key, value in values.items())
    return lines


def table_differences(rule: ChannelRule, effective: Config, top: Config) -> list[str]:
    """What a ``[[channels]]`` table puts in effect that the top level does not, one
    ``[section] key = value`` line each, secrets masked (``check-config`` and the studio say it
    the same way)."""
    top_values = top.masked()
    return [
        f"[{section}] {_setting(key, value)}"
        for section, values in effective.masked().items()
        if section in rule.overrides() or section == "model"
        for key, value in values.items()
        if top_values[section].get(key) != value
    ]


def _storage_values(config: Config, values: dict[str, Any]) -> dict[str, Any]:
    """With a PostgreSQL URL, the URL with only its password masked (so the printout loads as a
    config again) and no SQLite path: the bot does not use it, and both keys are refused."""
    url = config.storage.url_text
    if url is None:
        return values
    shown = {key: value for key, value in values.items() if key != "path"}
    shown["url"] = masked_url(url, MASKED)
    return shown


def _setting(key: str, value: Any) -> str:
    if value is None:
        return f"# {key} =  (not set)"  # TOML has no null: an unset key is left out
    return f"{_key(key)} = {toml_value(value)}"


BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def toml_value(value: Any) -> str:
    """A TOML value: strings as basic strings (JSON's escapes are TOML's, given real UTF-8 text,
    since TOML has no surrogate-pair escapes), tables inline, nulls inside left out."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        items = [f"{_key(str(k))} = {toml_value(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def explain_budget(settings: ModelSettings) -> list[str]:
    """``check-config``'s lines about the token budget, as comments."""
    reserve_key = (
        "[model] max_tokens" if settings.max_tokens is not None else "[model] reserve_tokens"
    )
    limit = Budget(window=settings.context_tokens, reserve=settings.answer_reserve).limit
    return [
        f"# token budget: prompts are cut to {limit} tokens = [model] context_tokens "
        f"{settings.context_tokens} (the model's window) - {settings.answer_reserve} kept for "
        f"the answer ({reserve_key})",
        "#   cut in this order: article text, then attachment text, then the least related "
        "messages; never the system prompt, the message answered or the one it replies to",
        "#   tokens are estimated (3 bytes a token), then calibrated from what the server "
        "reports; a smaller window stated by the server is remembered per model",
    ]
