"""Operator configuration: ``config.toml`` read with ``tomllib`` into pydantic models.

A broken config is the first thing a new operator meets, so every problem becomes one line that
names the file, the key and what is expected (``ConfigError``), never a traceback. Secrets are
``SecretStr`` so they print masked; the ``DISCORD_TOKEN`` and ``MODEL_API_KEY`` environment
variables win over the file so that tokens can stay out of it.

Values are checked strictly (``min_linear = true`` is not 1, ``stream = "no"`` is not false): a
config that means something other than what it says is worse than one that is refused.

Which class holds which ``config.toml`` section (``Config`` below puts them together; a section
lives beside the code that reads it, so ``conversation/`` needs nothing of ``bot/``)::

    [discord]      DiscordSettings     bot/config/schema.py
    [model]        ModelSettings       bot/config/model_settings.py
    [context]      ContextSettings     conversation/common/settings.py
    [articles]     ArticleSettings     conversation/common/settings.py
    [triggers]     TriggerSettings     bot/config/schema.py
    [permissions]  PermissionSettings  bot/config/schema.py
    [replies]      ReplySettings       bot/config/schema.py
    [mentions]     MentionSettings     bot/config/schema.py
    [attachments]  AttachmentSettings  bot/config/schema.py
    [cache]        CacheSettings       conversation/common/settings.py
    [storage]      StorageSettings     bot/config/schema.py
    [logging]      LoggingSettings     bot/config/schema.py
    [tools]        ToolSettings        bot/config/tool_settings.py
    [metrics]      MetricsSettings     bot/config/schema.py
    [catchup]      CatchupSettings     bot/config/catchup_settings.py
    [status]       StatusSettings      bot/config/status_settings.py
    [threads]      ThreadSettings      bot/config/thread_settings.py
    [models.NAME]  NamedModel          bot/config/named_models.py
    [[channels]]   ChannelRule         bot/config/channels.py
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator

from bot.config.catchup_settings import CatchupSettings
from bot.config.channels import ChannelRule, check_models, effective_configs, top_level
from bot.config.config_file import NotAConfigFile, read_config_bytes
from bot.config.errors import describe_errors
from bot.config.model_settings import ModelSettings
from bot.config.named_models import NamedModel, keys_from_env, model_with
from bot.config.status_settings import StatusSettings
from bot.config.store_url import redact_url, userinfo_problem
from bot.config.thread_settings import ThreadSettings
from bot.config.toml_hints import clash_hint
from bot.config.tool_settings import ToolSettings, masked_tools
from bot.config.validators import HttpUrl, OptionalSecret, PostgresUrl
from conversation.common import (
    ArticleSettings,
    CacheSettings,
    ContextSettings,
    FollowSettings,
    Snowflake,
    StrictSection,
)

DEFAULT_CONFIG_PATH = Path("config.toml")
CONFIG_PATH_VARIABLE = "THREADWISE_CONFIG"
"""Environment variable naming the config file when ``--config`` is not given (the Docker image
sets it to ``/config/config.toml`` so that every command reads the same file)."""
DATA_DIR_VARIABLE = "THREADWISE_DATA_DIR"


class ConfigError(Exception):
    """What is wrong in the config, for the operator: one clear line per problem."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class ConfigSource:
    """Which file a command reads, and whether the operator asked for it by name."""

    path: Path
    explicit: bool
    """Named by ``--config`` or ``THREADWISE_CONFIG``: then it must exist."""

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def describe(self) -> str:
        if self.exists:
            return str(self.path)
        return f"built-in defaults (no {self.path} here)"


def locate_config(path: Path | str | None, env: Mapping[str, str] | None = None) -> ConfigSource:
    """``--config`` first, then ``THREADWISE_CONFIG``, then ``./config.toml`` if it exists."""
    env = os.environ if env is None else env
    if path is not None:
        return ConfigSource(Path(path), explicit=True)
    if env.get(CONFIG_PATH_VARIABLE):
        return ConfigSource(Path(env[CONFIG_PATH_VARIABLE]), explicit=True)
    return ConfigSource(DEFAULT_CONFIG_PATH, explicit=False)


MAX_SHARDS = 10_000


class DiscordSettings(StrictSection):
    token: OptionalSecret = Field(None, description="Bot token; DISCORD_TOKEN wins.")
    api_base: HttpUrl = Field(
        "https://discord.com/api/v10",
        description="REST base URL; the gateway URL is asked from it (proxies and tests set it).",
    )
    guild_ready_timeout: float = Field(
        2.0,
        gt=0,
        le=60,
        description="Seconds to wait for guild data.",
        json_schema_extra={"bound_note": "a minute"},
    )
    shard_count: int | None = Field(
        None,
        ge=1,
        le=MAX_SHARDS,
        description="Total shards across all processes; unset: one unsharded client.",
        json_schema_extra={"bound_note": "Discord's largest bots run a few thousand"},
    )
    shard_ids: tuple[Annotated[int, Field(ge=0, lt=MAX_SHARDS)], ...] = Field(
        (), description="The shards this process runs; empty: all of them (with shard_count)."
    )

    @model_validator(mode="after")
    def _shards_fit(self) -> DiscordSettings:
        if self.shard_ids and self.shard_count is None:
            raise ValueError("shard_ids: needs shard_count (the total across all processes)")
        for shard_id in self.shard_ids:
            if self.shard_count is not None and not 0 <= shard_id < self.shard_count:
                raise ValueError(
                    f"shard_ids: {shard_id} is not a shard of {self.shard_count} "
                    f"(ids run from 0 to {self.shard_count - 1})"
                )
        if len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError("shard_ids: lists a shard twice")
        return self


class CallSettings(StrictSection):
    """The ``[triggers]`` keys of an answer asked for (a mention, a reply, a DM, an always-on
    channel) and of the pace of answers; ``TriggerSettings`` adds the follow keys to them."""

    allow_dms: bool = Field(True, description="Answer direct messages.")
    always_on_channels: tuple[Snowflake, ...] = Field(
        (), description="Channels where every message is answered."
    )
    answer_bots: bool = Field(False, description="Answer messages written by other bots.")
    burst_window_seconds: float = Field(
        1.5,
        ge=0,
        le=60,
        description="Messages from one person within this window get one answer.",
        json_schema_extra={"bound_note": "a minute"},
    )
    max_concurrent_answers: int = Field(
        8,
        ge=1,
        le=1000,
        description="Answers written at once across all channels (one per channel at most); "
        "the rest wait their turn.",
    )


class TriggerSettings(FollowSettings, CallSettings):
    """When the bot answers: when it is called (``CallSettings``), and when a message that calls
    no one continues its conversation (``FollowSettings``, conversation's, which the
    ``Follower`` takes as this section is). One flat section: the follow keys stay
    ``[triggers]`` keys, as operators write them. pydantic lists the last base's fields first,
    so this order of the bases keeps config.toml's order of the keys (check-config's printout,
    the order of error lines)."""


class PermissionSettings(StrictSection):
    """Who may use the bot where. Empty allow-lists allow everyone; blocks always win."""

    allowed_users: tuple[Snowflake, ...] = ()
    blocked_users: tuple[Snowflake, ...] = ()
    allowed_roles: tuple[Snowflake, ...] = ()
    blocked_roles: tuple[Snowflake, ...] = ()
    allowed_channels: tuple[Snowflake, ...] = ()
    blocked_channels: tuple[Snowflake, ...] = ()


class ReplySettings(StrictSection):
    edit_interval_seconds: float = Field(
        1.0,
        ge=0.2,
        le=60,
        description="While streaming, edit the answer at most this often.",
        json_schema_extra={"bound_note": "a minute"},
    )
    max_messages_per_answer: int = Field(
        5, ge=1, le=100, description="Discord messages one answer may take; the rest is cut."
    )


class MentionSettings(StrictSection):
    """The ``[mentions]`` section: what the bot's own messages may ping."""

    allow_user_mentions: bool = Field(
        False, description="Let <@user> in an answer ping that user (off: shown, no ping)."
    )
    allow_role_mentions: bool = Field(False, description="Let <@&role> in an answer ping the role.")
    allow_everyone: bool = Field(
        False, description="Let @everyone / @here in an answer ping. Keep off."
    )
    mention_replied_user: bool = Field(
        False, description="Ping the author of the message the bot replies to."
    )


class AttachmentSettings(StrictSection):
    max_text_chars: int = Field(
        8000, ge=0, le=1_000_000, description="Text attachments inlined up to this size."
    )
    max_text_attachments: int = Field(
        3,
        ge=0,
        le=10,
        description="Text attachments read per message.",
        json_schema_extra={"bound_note": "a Discord message holds 10"},
    )


DEFAULT_RETENTION_DAYS = 30


class StorageSettings(StrictSection):
    path: Path = Field(
        # A string, not a Path: defaults are validated like the file's values, strictly as JSON.
        "data/threadwise.sqlite3",  # type: ignore[arg-type]
        description="SQLite file, created on first run.",
    )
    url: PostgresUrl = Field(
        None, description="postgresql:// URL of a shared store, instead of the SQLite path."
    )
    retention_days: int = Field(
        DEFAULT_RETENTION_DAYS,
        ge=0,
        le=36_500,
        description="Drop interactions older than this many days; 0 keeps them forever.",
        json_schema_extra={"bound_note": "100 years"},
    )
    claim_wait_seconds: float = Field(
        1.5,
        gt=0,
        le=30,
        description="How long a mention waits for the store to say whether it was answered "
        "already; a stalled store then costs no answer (the message is answered).",
    )

    @field_validator("url")
    @classmethod
    def _readable_userinfo(cls, value: SecretStr | None) -> SecretStr | None:
        problem = None if value is None else userinfo_problem(value.get_secret_value())
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_store(self) -> StorageSettings:
        if self.url is not None and "path" in self.model_fields_set:
            raise ValueError("url: set either path (SQLite) or url (PostgreSQL), not both")
        return self

    @property
    def url_text(self) -> str | None:
        return None if self.url is None else self.url.get_secret_value()

    @property
    def location(self) -> str:
        """The store as messages name it: the URL without its password, else the file."""
        url = self.url_text
        return redact_url(url) if url else str(self.path)


class LoggingSettings(StrictSection):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("level", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


class MetricsSettings(StrictSection):
    """``[metrics]``: opt-in Prometheus endpoint."""

    port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Serve Prometheus metrics on this TCP port; unset: no metrics (0: any free "
        "port, logged at start).",
    )
    host: str = Field(
        "127.0.0.1",
        min_length=1,
        max_length=255,
        description="Address to listen on; 0.0.0.0 exposes the numbers to the network.",
    )


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
    cache: CacheSettings = CacheSettings()
    storage: StorageSettings = StorageSettings()
    logging: LoggingSettings = LoggingSettings()
    tools: ToolSettings = ToolSettings()
    metrics: MetricsSettings = MetricsSettings()
    catchup: CatchupSettings = CatchupSettings()
    status: StatusSettings = StatusSettings()
    threads: ThreadSettings = ThreadSettings()
    models: dict[str, NamedModel] = Field(default_factory=dict)
    channels: tuple[ChannelRule, ...] = ()

    @model_validator(mode="after")
    def _channels_resolve(self) -> Config:
        """Each named model and ``[[channels]]`` table makes a valid config."""
        check_models(self.models)
        channels = effective_configs(self)
        anthropic_named = any(m.provider == "anthropic" for m in self.models.values())
        for where, config in [("", top_level(self)), *_numbered(channels)]:
            model = config.model
            _check_summary_model(where, config, self.models)
            anthropic = model.provider == "anthropic" or anthropic_named
            if config.tools.enabled and anthropic and thinks(model.extra_body):
                raise ValueError(
                    f"{where}[model] extra_body.thinking: Anthropic's extended thinking cannot "
                    "be used with [tools] enabled (each tool round would have to send back the "
                    "signed thinking blocks, which the bot does not keep); turn one of them off"
                )
        return self

    @model_validator(mode="after")
    def _shards_share_a_store(self) -> Config:
        """A process running only some shards answers only their servers; the others' answers
        are recorded by other processes, so /context, explain, export and forget-user see all
        of them only in one shared PostgreSQL store (separate SQLite files would each hold a
        slice, silently)."""
        discord = self.discord
        if discord.shard_count is None or self.storage.url is not None:
            return self
        if discord.shard_ids and len(discord.shard_ids) < discord.shard_count:
            ids = ", ".join(str(i) for i in discord.shard_ids)
            raise ValueError(
                f"[storage] url: needed when a process runs only some shards ([discord] "
                f"shard_ids = [{ids}] of shard_count = {discord.shard_count}): every process "
                "of a sharded bot must share one PostgreSQL store"
            )
        return self

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets shown as ``**********``."""
        data = json.loads(self.model_dump_json())
        return data | {"tools": masked_tools(data["tools"], "**********")}


def thinks(extra_body: Mapping[str, Any]) -> bool:
    """Whether ``extra_body`` turns Anthropic's extended thinking on."""
    thinking = extra_body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") != "disabled"


def _check_summary_model(where: str, config: Config, models: Mapping[str, NamedModel]) -> None:
    """``summary_model`` names a ``[models.NAME]`` that the channel's ``[model]`` settings can
    be sent to (the summaries are written with them, over that endpoint)."""
    writer = config.context.summary_model
    if writer is None:
        return
    if writer not in models:
        named = ", ".join(sorted(models)) or "none"
        raise ValueError(
            f"{where}[context] summary_model: {writer!r} is no [models.NAME] table "
            f"(named models: {named})"
        )
    try:
        model_with(config.model, {"use": writer}, models[writer])
    except ValidationError as error:
        problem = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise ValueError(
            f"{where}[context] summary_model: {writer!r} cannot write with this [model]: {problem}"
        ) from None


def _numbered(channels: list[Config]) -> list[tuple[str, Config]]:
    return [(f"[[channels]] {n} ", config) for n, config in enumerate(channels, start=1)]


def load_config(
    path: Path | str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    content: bytes | None = None,
    model_keys_required: bool = True,
) -> Config:
    """Read, merge the environment into, and validate the config file (``content``: its bytes,
    already read by the reload watcher, so each change is read once).

    No ``path`` means ``THREADWISE_CONFIG``, else ``./config.toml`` if it exists, else the
    defaults; a named file that does not exist is an error (a typo there must not silently run
    on defaults). A relative ``[storage] path`` is relative to ``THREADWISE_DATA_DIR`` if set,
    else to the config file; an MCP server's relative ``command`` and ``args`` paths are
    relative to the config file. Every problem is reported at once, in one ``ConfigError``.

    ``model_keys_required``: a ``[models.NAME] api_key_env`` variable that is not set is an
    error; commands that never call a model pass False (``unset_key_variables`` then tells).
    """
    env = os.environ if env is None else env
    source = locate_config(path, env)
    path = source.path
    data: dict[str, Any] = {}
    if source.exists or source.explicit:
        data = _read_toml(path, content)
    if env.get("DISCORD_TOKEN"):
        data.setdefault("discord", {})["token"] = env["DISCORD_TOKEN"]
    if env.get("MODEL_API_KEY"):
        data.setdefault("model", {})["api_key"] = env["MODEL_API_KEY"]
    unset = keys_from_env(data, env)
    problems = [f"{path}: {line}" for line in unset] if model_keys_required else []
    try:
        config = _validated(data)
    except ValidationError as error:
        raise ConfigError(*every_problem(path, data, error), *problems) from error
    problems += [
        f"{path}: {line}" for server in config.tools.mcp for line in server.unsafe_values(env)
    ]
    if problems:
        raise ConfigError(*problems)
    anchor = _data_folder(source, env)
    if not config.storage.path.is_absolute() and anchor is not None:
        anchored = anchor / config.storage.path
        config = config.model_copy(
            update={"storage": config.storage.model_copy(update={"path": anchored})}
        )
    if source.exists and config.tools.mcp:
        folder = source.path.resolve().parent
        servers = [server.anchored(folder) for server in config.tools.mcp]
        config = config.model_copy(
            update={"tools": config.tools.model_copy(update={"mcp": servers})}
        )
    return config


def _validated(data: dict[str, Any]) -> Config:
    # Through JSON so that strict mode still takes TOML arrays as tuples and strings as
    # paths, while refusing a boolean for a number or a string for a boolean.
    return Config.model_validate_json(json.dumps(data, default=str), strict=True)


def every_problem(path: Path, data: dict[str, Any], error: ValidationError) -> list[str]:
    """Each problem's line, including those pydantic reports only once the keys are known:
    checks across keys and tables (a ``[[channels]]`` table's model, the shards' store) run
    only on a table whose keys are all known, so an unknown or misplaced key would hide them
    until the next round trip. They are found by checking again without the unknown keys (which
    change nothing when left out, so what the second check finds is a problem of its own)."""
    lines = describe_errors(path, error, Config)
    unknown = [detail["loc"] for detail in error.errors() if detail["type"] == "extra_forbidden"]
    if not unknown:
        return lines
    trimmed = copy.deepcopy(data)
    for location in unknown:
        _drop(trimmed, location)
    try:
        _validated(trimmed)
    except ValidationError as again:
        lines.extend(line for line in describe_errors(path, again, Config) if line not in lines)
    return lines


def _drop(data: Any, location: tuple[int | str, ...]) -> None:
    """Remove the key at ``location`` (table keys and array places) from the raw TOML data."""
    *parents, last = location
    for part in parents:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(data, dict):
        data.pop(last, None)


def unset_key_variables(config: Config, path: Path | str | None) -> list[str]:
    """One line for each ``[models.NAME] api_key_env`` variable that is not set (loaded with
    ``model_keys_required=False``): what ``check-config`` warns about."""
    where = locate_config(path).path
    return [
        f"{where}: [models.{name}] api_key_env: the environment variable {model.api_key_env} "
        "is not set (run and replay refuse to start without it)"
        for name, model in config.models.items()
        if model.api_key_env is not None and model.api_key is None
    ]


def _data_folder(source: ConfigSource, env: Mapping[str, str]) -> Path | None:
    """What a relative ``[storage] path`` is relative to: ``THREADWISE_DATA_DIR`` if set (the
    image's writable volume, while the config is mounted read-only elsewhere), else the config
    file's folder, else the current folder (None: left relative)."""
    if env.get(DATA_DIR_VARIABLE):
        return Path(env[DATA_DIR_VARIABLE]).resolve()
    return source.path.resolve().parent if source.exists else None


def _read_toml(path: Path, content: bytes | None = None) -> dict[str, Any]:
    text = ""
    try:
        data = read_config_bytes(path) if content is None else content
        # utf-8-sig: editors on Windows start files with a byte-order mark; newlines as a text
        # file reads them.
        text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        return tomllib.loads(text)
    except NotAConfigFile as error:
        raise ConfigError(f"{path}: {error}") from error
    except FileNotFoundError as error:
        raise ConfigError(f"{path}: config file not found") from error
    except tomllib.TOMLDecodeError as error:
        hint = clash_hint(text, error)
        advice = f"; {hint}" if hint else ""
        raise ConfigError(f"{path}: not valid TOML: {error}{advice}") from error
    except RecursionError as error:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from error
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (at byte {error.start})") from error


def require_token(config: Config, path: Path | str | None) -> str:
    """The Discord token, or a ConfigError saying where to put it."""
    if config.discord.token is None:
        raise ConfigError(
            f"{locate_config(path).path}: [discord] token: missing; set the DISCORD_TOKEN "
            "environment variable or [discord] token"
        )
    return without_bot_prefix(config.discord.token.get_secret_value())


def without_bot_prefix(token: str) -> str:
    """The token as nextcord sends it (it adds ``Bot `` itself): one copied from an
    ``Authorization: Bot ...`` header would otherwise be refused. A token has no spaces, so
    the prefix cannot be part of it."""
    token = token.strip()
    prefix, space, rest = token.partition(" ")
    return rest.strip() if space and prefix.lower() == "bot" else token
