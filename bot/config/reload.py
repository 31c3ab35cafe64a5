"""Hot reload for ``run``: the config file watched, and each valid edit split into what applies now
and what waits for a restart. Handing the new settings to the running client is
``bot.serve.live_config``'s job, since only the serving layer knows the client.

Operators tune thresholds, the persona and who may use the bot by editing ``config.toml``; a
restart for each edit loses the channel caches and drops the gateway session. So the file is
polled every few seconds and each new version is validated by the same loader as
``check-config``:

* a valid edit applies from the next answer, announced by one INFO line naming what changed;
* an invalid edit is refused with the same one-line error as ``check-config``, and the last
  good config keeps serving;
* keys read only at start (the token, ``api_base``, storage, the article fetcher's plumbing)
  keep their running values, and one line says they take effect after a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.config.channels import effective_configs
from bot.config.config_file import NotAConfigFile, read_config_bytes
from bot.config.model_settings import CONNECTION_KEYS
from bot.config.schema import Config, ConfigError, load_config
from bot.config.tool_settings import LIVE_KEYS as TOOL_LIVE_KEYS
from conversation.articles import LIVE_LIMITS

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
SETTLE_SECONDS = 0.1
"""A changed file is read again this long after: a write caught halfway (a script or an editor
that empties the file, then writes it) reads differently then, and is taken at the next poll,
whole. Read once, an emptied file is a valid config of defaults, applied for a poll."""
# Sections the running bot reads afresh for each answer, but for the keys listed after them,
# which it reads once at start (the model client's connection: provider, address, secrets).
# Of [articles], only the per-context limits apply live. Everything else, [discord] and
# [storage] included, and any section not named here, needs a restart.
LIVE_SECTIONS = frozenset(
    {"context", "model", "triggers", "permissions", "mentions", "replies", "attachments", "logging"}
    | {"status", "threads", "catchup"}  # the status reaction, threads, catch-ups: read at each use
)
STARTUP_KEYS = frozenset(("model", key) for key in CONNECTION_KEYS)
SECRET_KEYS = {("discord", "token"), ("model", "api_key")}
SHOWN_VALUE_CHARS = 40  # longer values (a system prompt) are only said to have changed

Key = tuple[str, str]


TABLE_LISTS = {"channels": True, "models": False}
"""Config fields that are not one section but tables of them, and whether they apply live: the
[[channels]] tables do (answers read them afresh), a [models.NAME] endpoint needs a restart (its
connection is opened once)."""


def is_live(key: Key) -> bool:
    """Whether a change to this key applies without a restart."""
    section, name = key
    if section in TABLE_LISTS:
        return TABLE_LISTS[section]
    if section == "articles":
        return name in LIVE_LIMITS
    if section == "tools":
        return name in TOOL_LIVE_KEYS
    return section in LIVE_SECTIONS and key not in STARTUP_KEYS


def changed_keys(old: Config, new: Config) -> list[Key]:
    """``(section, key)`` of every setting whose value differs, in the file's order."""
    before, after = old.model_dump(), new.model_dump()
    changes = []
    for section, values in after.items():
        if section == "channels":
            if before.get(section) != values:
                changes.append((section, ""))
            continue
        old_values = before.get(section, {})
        keys = list(values) + [key for key in old_values if key not in values]  # [models.X] gone
        changes.extend((section, key) for key in keys if old_values.get(key) != values.get(key))
    return changes


def effective_config(running: Config, new: Config) -> Config:
    """``new``, except that keys needing a restart keep the values the bot is running with."""
    sections: dict[str, Any] = {}
    for section in Config.model_fields:
        fresh = getattr(new, section)
        if section in TABLE_LISTS:
            sections[section] = fresh if TABLE_LISTS[section] else getattr(running, section)
            continue
        kept = {
            key: getattr(getattr(running, section), key)
            for key in type(fresh).model_fields
            if not is_live((section, key))
        }
        sections[section] = fresh.model_copy(update=kept)
    return new.model_copy(update=sections)


def describe(key: Key, old: Config, new: Config) -> str:
    section, name = key
    label = f"[{section}] {name}"
    if section == "channels":
        return f"[[channels]] changed ({len(new.channels)} table(s))"
    if section == "models":
        return f"[models.{name}]"
    if key in SECRET_KEYS:
        return label
    before = getattr(getattr(old, section), name)
    after = getattr(getattr(new, section), name)
    if len(repr(before)) + len(repr(after)) > 2 * SHOWN_VALUE_CHARS:
        return f"{label} changed"
    return f"{label} {_shown(before)} -> {_shown(after)}"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


class FileRefused(ConfigError):
    """The config path holds no config file to read (``bot.config.config_file``)."""


class ConfigWatcher:
    """Polls one config file; calls ``apply(old, new)`` for each valid new version, where
    ``new`` keeps the running values of the keys that need a restart.

    The file is read off the event loop (``run``), once per poll and change (the new version is
    validated from the bytes read), and only when it is a regular file of a config's size
    (``bot.config.config_file``): anything else is one warning, until it changes again, and the
    last good config keeps serving."""

    def __init__(
        self,
        path: Path,
        running: Config,
        apply: Callable[[Config, Config], None],
        *,
        interval: float | None = None,
    ) -> None:
        self.path = path
        self.running = running  # what the bot uses now
        self.loaded = running  # the file's last valid version, restart keys as written
        self.apply = apply
        self.interval = POLL_SECONDS if interval is None else interval
        self._seen = self._read()

    def _read(self) -> bytes | str | None:
        """The file's bytes; why it is not read (a pipe, too big); None when it cannot be."""
        try:
            return read_config_bytes(self.path)
        except NotAConfigFile as error:
            return str(error)
        except OSError:
            return None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.take(await asyncio.to_thread(self.look))

    def check(self) -> bool:
        """Reload if the file changed; True when a new config was applied. Reads on the
        calling thread: ``run`` reads in another."""
        return self.take(self.look())

    def look(self) -> Config | ConfigError | None:
        """The file's new version, or why it cannot be used; None when nothing changed. Only
        reads the file (safe off the event loop: the running bot is not touched)."""
        content = self._read()
        if content == self._seen:
            return None
        time.sleep(SETTLE_SECONDS)
        if self._read() != content:
            return None  # still being written: the next poll reads it whole
        self._seen = content
        if isinstance(content, str):
            return FileRefused(f"{self.path}: {content}")
        try:
            return load_config(self.path, content=content)
        except ConfigError as error:
            return error

    def take(self, looked: Config | ConfigError | None) -> bool:
        """Apply what ``look`` found (on the event loop); True when a new config was applied."""
        if looked is None:
            return False
        if isinstance(looked, ConfigError):
            problems = "; ".join(looked.lines)  # check-config's lines, as one log line
            level = logging.WARNING if isinstance(looked, FileRefused) else logging.ERROR
            log.log(level, "%s (edit refused: the last good config keeps serving)", problems)
            return False
        new = looked
        changes = changed_keys(self.loaded, new)
        restart = [key for key in changes if not is_live(key)]
        live = [key for key in changes if is_live(key)]
        running_changes = set(changed_keys(self.running, new))
        newly_restart = [key for key in restart if key in running_changes]
        self.loaded = new
        if live:
            effective = effective_config(self.running, new)
            try:
                effective_configs(effective)  # with the running [models.NAME] endpoints
            except ValueError as error:
                log.error(
                    "%s: %s; [models.NAME] tables added or changed take effect after a restart "
                    "(edit refused: the last good config keeps serving)",
                    self.path,
                    error,
                )
                return False
            try:
                self.apply(self.running, effective)
            except Exception:  # a bug here must not stop the bot: it keeps the old settings
                log.exception("could not apply the reloaded config from %s", self.path)
                return False
            described = ", ".join(describe(key, self.running, effective) for key in live)
            self.running = effective
            log.info("%s reloaded: %s", self.path, described)
        if newly_restart:
            names = ", ".join(
                f"[models.{key}]" if section == "models" else f"[{section}] {key}"
                for section, key in newly_restart
            )
            log.warning("%s: %s changed: takes effect after a restart", self.path, names)
        elif not live and not restart:
            log.info("%s saved with no change in effect", self.path)
        return bool(live)
