"""The ``[tools]`` section and its ``[[tools.mcp]]`` tables.

``ToolSettings`` is one settings model so that per-channel settings can override it as a whole
(``enabled``, ``max_steps``...) the way they override other sections. Secrets never sit in the
file: an HTTP server's headers name environment variables, read when the server is connected;
a command server's ``env`` values and a ``url`` may name them as ``${VAR}`` too. check-config
prints every ``env`` value, and the user, password and query values of a ``url``, masked
unless they are just a ``${VAR}`` reference (``masked_tools``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from conversation.common import StrictSection

# What OpenAI and Anthropic accept as a function name (Anthropic: 1-64 of these characters).
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# In a header or a url a line break splits the request (HTTP clients refuse it, quoting the
# value in their error): a .env with Windows line endings leaves a CR on every value.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Read for each answer, so an edit applies while running; enabled and the servers are read
# when the bot starts (the servers are started then).
LIVE_KEYS = frozenset({"read_page", "max_steps", "call_timeout_seconds", "max_result_chars",
                       "in_dms", "max_calls_per_round", "max_calls_per_answer",
                       "read_page_any_host", "max_images_per_answer",
                       "max_image_bytes"})  # fmt: skip


class McpServerSettings(StrictSection):
    """One MCP server: a command the bot starts (stdio) or a URL it connects to (HTTP)."""

    name: str = Field(description="Short name, shown in logs and check-config.")
    command: str | None = Field(
        None, min_length=1, description="Program to start (stdio transport)."
    )
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables for the program; ${VAR} takes the bot's own.",
    )
    url: str | None = Field(
        None, description="Streamable HTTP endpoint, e.g. http://host/mcp (${VAR} expanded)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP header -> the environment variable holding its value (SEARCH_KEY), "
        'or a text naming it ("Bearer ${SEARCH_KEY}").',
    )
    allow: list[str] = Field(
        default_factory=list, description="Tools the model may call; empty: all of them."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SERVER_NAME.fullmatch(value):
            raise ValueError(f"must be 1-32 letters, digits, _ or -, got {value!r}")
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError(f"must name the program to start, got {value!r}")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            secret = "@" in value or "?" in value  # a password or a key: never quoted
            raise ValueError(
                f"must start with http:// or https://{'' if secret else f', got {value!r}'}"
            )
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for header, variable in value.items():
            if not HEADER_NAME.fullmatch(header):
                raise ValueError(f"{header!r} is not an HTTP header name")
            if not ENV_NAME.fullmatch(variable) and not ENV_REFERENCE.search(variable):
                raise ValueError(
                    f"{header}: the value names an environment variable (SEARCH_KEY, or "
                    f'"Bearer ${{SEARCH_KEY}}"), not the value itself: secrets do not belong '
                    "in the file"
                )
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        for name in value:
            if not TOOL_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a tool name")
        return value

    @model_validator(mode="before")
    @classmethod
    def _not_both(cls, data: Any) -> Any:
        """Before the fields are read, so that ``command = ""`` beside a ``url`` is told it is
        one too many, not that it is empty."""
        both = isinstance(data, dict) and None not in (data.get("command"), data.get("url"))
        if both:
            name = data.get("name")
            server = f"server {name!r}: " if isinstance(name, str) else ""
            raise ValueError(f"{server}set either command (stdio) or url (HTTP), not both")
        return data

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if self.command is None and self.url is None:
            raise ValueError(f"server {self.name!r}: set command (stdio) or url (HTTP)")
        if self.url is None and self.headers:
            raise ValueError(f"server {self.name!r}: headers are for url servers only")
        if self.command is None and (self.args or self.env):
            raise ValueError(f"server {self.name!r}: args and env are for command servers only")
        if self._url_has_credentials and any(h.lower() == "authorization" for h in self.headers):
            raise ValueError(
                f"server {self.name!r}: the url's user:password and headers.Authorization would "
                "both authorize; keep one"
            )
        return self

    def anchored(self, folder: Path) -> McpServerSettings:
        """This server with its relative paths taken from ``folder`` (the config file's), as
        ``[storage] path`` is: a ``command`` with a slash in it (``./tools/search``; a bare
        ``python`` or ``npx`` is looked up in PATH), and each argument that starts with ``./``
        or ``../`` or names a file or folder there (``tools/server.py``). Other arguments
        (flags, package names) stay as written."""
        command = self.command
        if command is not None and "/" in command and not Path(command).is_absolute():
            command = str(folder / command)
        args = [_anchored_arg(arg, folder) for arg in self.args]
        return self.model_copy(update={"command": command, "args": args})

    @property
    def _url_has_credentials(self) -> bool:
        """The url as written has ``user[:password]@`` (sent as Basic auth). A url taken whole
        from a variable is not known here: an ``Authorization`` header then wins."""
        return self.url is not None and "@" in urlsplit(self.url).netloc

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def env_values(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """``env`` with each ``${VAR}`` taken from the bot's environment; ``ValueError`` names
        the first variable that is not set."""
        return {key: self._expand(value, env, f"env.{key}") for key, value in self.env.items()}

    def url_value(self, env: Mapping[str, str] | None = None) -> str:
        assert self.url is not None
        return self._sendable(self._expand(self.url, env, "url"), "url")

    def unsafe_values(self, env: Mapping[str, str] | None = None) -> list[str]:
        """A line for the url and each header that, with the variables set now, would hold a
        line break or another control character; naming the key, never the value. Checked at
        load, so that such a secret never reaches the HTTP client (whose error quotes it)."""
        env = os.environ if env is None else env
        texts = {"url": self.url} if self.url is not None else {}
        texts |= {f"headers.{header}": value for header, value in self.headers.items()}
        lines = []
        for where, text in texts.items():
            whole = where != "url" and ENV_NAME.fullmatch(text)
            names = [text] if whole else ENV_REFERENCE.findall(text)
            if CONTROL.search(text) or any(CONTROL.search(env.get(name) or "") for name in names):
                lines.append(self._unsafe(where))
        return lines

    def _sendable(self, value: str, where: str) -> str:
        if CONTROL.search(value):
            raise ValueError(self._unsafe(where))
        return value

    def _unsafe(self, where: str) -> str:
        return (
            f"[[tools.mcp]] {self.name}: {where} holds a line break or another control "
            "character once its environment variables are read (a .env file with Windows "
            "line endings?); remove it from the variable"
        )

    def _expand(self, value: str, env: Mapping[str, str] | None, where: str) -> str:
        env = os.environ if env is None else env
        missing = [name for name in ENV_REFERENCE.findall(value) if not env.get(name)]
        if missing:
            raise ValueError(
                f"[[tools.mcp]] {self.name}: environment variable {missing[0]} is not set "
                f"(named in {where})"
            )
        return ENV_REFERENCE.sub(lambda m: env[m[1]], value)

    def header_values(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers with their values from the environment (a value that is a bare variable
        name stands for ``${NAME}``); ``ValueError`` names the first variable that is not set, or
        a value that would hold a line break."""
        return {
            header: self._sendable(
                self._expand(
                    f"${{{value}}}" if ENV_NAME.fullmatch(value) else value,
                    env,
                    f"headers.{header}",
                ),
                f"headers.{header}",
            )
            for header, value in self.headers.items()
        }


class ToolSettings(StrictSection):
    """Whether and how the model may call tools while answering."""

    enabled: bool = Field(False, description="Offer the tools to the model at all.")
    read_page: bool = Field(True, description="Offer the built-in read_page(url).")
    max_steps: int = Field(
        4, ge=1, le=16, description="Rounds of tool calls per answer; then it must answer."
    )
    max_calls_per_round: int = Field(
        8, ge=1, le=64, description="Tool calls run per round; the model's extra calls are not."
    )
    max_calls_per_answer: int = Field(
        24, ge=1, le=256, description="Tool calls run per answer, all rounds together."
    )
    call_timeout_seconds: float = Field(
        20, gt=0, le=600, description="A tool call taking longer gives the model an error."
    )
    max_result_chars: int = Field(
        8000, ge=200, le=1_000_000, description="Each tool result is cut to this many characters."
    )
    in_dms: bool = Field(False, description="Offer tools in direct messages too.")
    max_images_per_answer: int = Field(
        4,
        ge=0,
        le=10,
        description="Images from tools attached to one answer (0: none).",
        json_schema_extra={"bound_note": "a Discord message holds 10 files"},
    )
    max_image_bytes: int = Field(
        8 * 1024 * 1024,
        ge=1024,
        le=10 * 1024 * 1024,
        description="Largest image from a tool that is attached.",
        json_schema_extra={"bound_note": "Discord's upload limit, 10 MiB"},
    )
    read_page_any_host: bool = Field(
        False,
        description="read_page may read any public host, not only those named in the "
        "conversation (a page's hidden instructions could then send conversation text anywhere).",
    )
    mcp: list[McpServerSettings] = Field(
        default_factory=list, description="The MCP servers ([[tools.mcp]] tables)."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> ToolSettings:
        seen: set[str] = set()
        for server in self.mcp:
            if server.name in seen:
                raise ValueError(f"mcp: two servers are named {server.name!r}")
            seen.add(server.name)
        return self


def _anchored_arg(arg: str, folder: Path) -> str:
    if not arg or arg.startswith("-") or Path(arg).is_absolute():
        return arg
    if arg.startswith(("./", "../")) or _exists(folder / arg):
        return str(folder / arg)
    return arg


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for a path, a NUL in it
        return False


def masked_tools(values: dict[str, Any], mask: str) -> dict[str, Any]:
    """The ``[tools]`` section as check-config prints it: each server's ``env`` values and its
    ``url``'s user, password and query values shown as ``mask`` (they may be secrets written in
    the file), unless one is just a ``${VAR}`` reference. Still a config that loads."""
    servers = []
    for server in values.get("mcp") or ():
        server = dict(server)
        if server.get("env"):
            server["env"] = {key: _shown(value, mask) for key, value in server["env"].items()}
        if isinstance(server.get("url"), str):
            server["url"] = masked_http_url(server["url"], mask)
        servers.append(server)
    return values | {"mcp": servers} if "mcp" in values else values


def masked_http_url(url: str, mask: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{url.partition('://')[0]}://{mask}"
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        shown = _shown(user, mask) + (f":{_shown(password, mask)}" if colon else "")
        netloc = f"{shown}@{host}"
    query = "&".join(
        f"{key}={_shown(value, mask)}" if sep else _shown(key, mask)
        for key, sep, value in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _shown(value: str, mask: str) -> str:
    return value if ENV_REFERENCE.fullmatch(value) else mask
