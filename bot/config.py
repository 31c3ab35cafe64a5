"""Operator configuration: ``config.toml`` read with ``tomllib`` into pydantic models.

A broken config is the first thing a new operator meets, so every problem becomes one line that
names the file, the key and what is expected (``ConfigError``), never a traceback. Secrets are
``SecretStr`` so they print masked; the ``DISCORD_TOKEN`` and ``MODEL_API_KEY`` environment
variables win over the file so that tokens can stay out of it.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from bot.mentions import MentionSettings
from bot.settings_model import ModelSettings
from bot.validators import HttpUrl, OptionalSecret
from conversation.settings import ArticleSettings, ContextSettings, StrictSection

DEFAULT_CONFIG_PATH = Path("config.toml")


class ConfigError(Exception):
    """One clear line about what is wrong in the config, for the operator."""


class DiscordSettings(StrictSection):
    token: OptionalSecret = Field(None, description="Bot token; DISCORD_TOKEN wins.")
    api_base: HttpUrl = Field(
        "https://discord.com/api/v10",
        description="REST base URL; the gateway URL is asked from it (proxies and tests set it).",
    )
    guild_ready_timeout: float = Field(2.0, gt=0, description="Seconds to wait for guild data.")


class TriggerSettings(StrictSection):
    """When the bot answers."""

    allow_dms: bool = Field(True, description="Answer direct messages.")
    always_on_channels: tuple[int, ...] = Field(
        (), description="Channels where every message is answered."
    )
    answer_bots: bool = Field(False, description="Answer messages written by other bots.")
    burst_window_seconds: float = Field(
        1.5, ge=0, description="Messages from one person within this window get one answer."
    )


class PermissionSettings(StrictSection):
    """Who may use the bot where. Empty allow-lists allow everyone; blocks always win."""

    allowed_users: tuple[int, ...] = ()
    blocked_users: tuple[int, ...] = ()
    allowed_roles: tuple[int, ...] = ()
    blocked_roles: tuple[int, ...] = ()
    allowed_channels: tuple[int, ...] = ()
    blocked_channels: tuple[int, ...] = ()


class ReplySettings(StrictSection):
    edit_interval_seconds: float = Field(
        1.0, ge=0.2, description="While streaming, edit the answer at most this often."
    )
    max_messages_per_answer: int = Field(
        5, ge=1, le=100, description="Discord messages one answer may take; the rest is cut."
    )


class AttachmentSettings(StrictSection):
    max_text_chars: int = Field(8000, ge=0, description="Text attachments inlined up to this size.")
    max_text_attachments: int = Field(3, ge=0, description="Text attachments read per message.")


class StorageSettings(StrictSection):
    path: Path = Field(
        Path("data/threadwise.sqlite3"), description="SQLite file, created on first run."
    )
    retention_days: int = Field(
        0, ge=0, description="Drop interactions older than this; 0 keeps all."
    )


class LoggingSettings(StrictSection):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Config(StrictSection):
    discord: DiscordSettings = DiscordSettings()
    model: ModelSettings = ModelSettings()
    context: ContextSettings = ContextSettings()
    articles: ArticleSettings = ArticleSettings()
    triggers: TriggerSettings = TriggerSettings()
    permissions: PermissionSettings = PermissionSettings()
    replies: ReplySettings = ReplySettings()
    mentions: MentionSettings = MentionSettings()
    attachments: AttachmentSettings = AttachmentSettings()
    storage: StorageSettings = StorageSettings()
    logging: LoggingSettings = LoggingSettings()

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets shown as ``**********``."""
        return json.loads(self.model_dump_json())


def load_config(path: Path | str | None = None, *, env: Mapping[str, str] | None = None) -> Config:
    """Read, merge the environment into, and validate the config file.

    No ``path`` means ``./config.toml`` if it exists, else the defaults; an explicit path that
    does not exist is an error (a typo there must not silently run on defaults).
    """
    env = os.environ if env is None else env
    explicit = path is not None
    path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path}: not valid TOML: {error}") from error
        except RecursionError as error:
            raise ConfigError(f"{path}: not valid TOML: nested too deeply") from error
        except OSError as error:
            raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
        except UnicodeDecodeError as error:
            raise ConfigError(f"{path}: not UTF-8 text (at byte {error.start})") from error
    elif explicit:
        raise ConfigError(f"{path}: config file not found")
    if env.get("DISCORD_TOKEN"):
        data.setdefault("discord", {})["token"] = env["DISCORD_TOKEN"]
    if env.get("MODEL_API_KEY"):
        data.setdefault("model", {})["api_key"] = env["MODEL_API_KEY"]
    try:
        config = Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_error(path, error)) from error
    if not config.storage.path.is_absolute():
        anchored = (
            (path.resolve().parent / config.storage.path) if explicit else config.storage.path
        )
        config = config.model_copy(
            update={"storage": config.storage.model_copy(update={"path": anchored})}
        )
    return config


def describe_error(path: Path, error: ValidationError) -> str:
    """``config.toml: [context] min_linear: ...`` for the first problem (and how many more)."""
    first = error.errors()[0]
    location = [str(part) for part in first["loc"]]
    section = f"[{location[0]}]" if location else ""
    key = ".".join(location[1:])
    where = f"{section} {key}".strip() or "top level"
    kind = first["type"]
    if kind == "extra_forbidden":
        message = "unknown key (check its spelling against config.toml)"
        if len(location) == 1:
            message = "unknown section"
    elif kind == "value_error":
        message = str(first["ctx"].get("error", first["msg"])) if "ctx" in first else first["msg"]
        # Cross-field checks are raised as "key: what is wrong" so the key can still be named.
        named, _, rest = message.partition(": ")
        if not key and rest and named.isidentifier():
            where, message = f"{section} {named}", rest
    elif location[-1:] in (["token"], ["api_key"]):
        message = first["msg"]  # never echo what may be a secret
    else:
        message = f"{first['msg']} (got {first.get('input')!r})"
    more = len(error.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {where}: {message}{suffix}"


def require_token(config: Config, path: Path | str | None) -> str:
    """The Discord token, or a ConfigError saying where to put it."""
    if config.discord.token is None:
        raise ConfigError(
            f"{path or DEFAULT_CONFIG_PATH}: [discord] token: missing; set the DISCORD_TOKEN "
            "environment variable or [discord] token"
        )
    return config.discord.token.get_secret_value()
