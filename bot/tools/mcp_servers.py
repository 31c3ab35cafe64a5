"""The operators' MCP servers (``[[tools.mcp]]``), on the official ``mcp`` SDK.

Each server has a supervisor task that holds its connection: it starts the program (stdio) or
connects to the URL (streamable HTTP), lists the tools (only those in ``allow``, when set), then
lists them again every ``ping_interval`` (the 2026 protocol has no ping; a fresh listing also
picks up a server's changed tools); when the connection breaks (the program died, the server
went away, a call found it closed, a listing failed) it connects again after a growing pause.
Calls are made from the answering tasks on the live connection; the supervisor owning the
SDK's task group means a broken transport ends the supervisor, never an answer.

The SDK is imported only when a server is configured: it is large, and most bots have none.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.config.tool_settings import TOOL_NAME, McpServerSettings
from bot.tools.server_stderr import StderrToLog
from bot.tools.spec import ToolSpec
from bot.tools.tool_images import ImageShelf

log = logging.getLogger(__name__)

RESTART_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
PING_INTERVAL_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 30.0
CONCURRENT_CALLS = 4  # per server, all answers together: the rest wait their turn
CLOSE_SECONDS = 5.0  # how long close waits for a supervisor to stop
MAX_TOOLS = 64  # per server; the rest are not offered (the tool list is part of every prompt)
MAX_DESCRIPTION_CHARS = 1000
MAX_SCHEMA_BYTES = 8192  # a larger input schema: the tool is not offered
MIN_RESPONSE_BYTES = 2 * 1024 * 1024  # a tool listing page of 64 tools with 8 KB schemas fits
BYTES_PER_RESULT_CHAR = 12  # UTF-8, JSON-escaped, as text and as structured content
DEFAULT_BLOCK_LIMIT = 8001  # content blocks a result of [tools] max_result_chars = 8000 shows


def block_limit(max_result_chars: int) -> int:
    """The content blocks a result of ``max_result_chars`` can show: each but the first costs
    a separator at least (``result_text``), so any more are never seen by the model."""
    return max_result_chars + 1


def response_limit(max_result_chars: int) -> int:
    """The bytes read of one answer over HTTP (``bot.tools.mcp_http``), or of one message over
    stdio (``bot.tools.mcp_stdio``): room for a result of ``max_result_chars`` however it is
    spelled, never less than a full tool listing."""
    return max(MIN_RESPONSE_BYTES, BYTES_PER_RESULT_CHAR * max_result_chars)


class ServerDown(Exception):
    """The server is not connected now (starting, or restarting after it died)."""


class McpServer:
    """One configured server and its supervisor; ``call`` works while it is connected."""

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        env: Mapping[str, str] | None = None,
        restart_delays: Sequence[float] = RESTART_DELAYS,
        ping_interval: float = PING_INTERVAL_SECONDS,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        max_response_bytes: int = MIN_RESPONSE_BYTES,
        max_content_blocks: int = DEFAULT_BLOCK_LIMIT,
    ) -> None:
        self.settings, self.name = settings, settings.name
        self._env = env
        self._max_bytes = max_response_bytes
        self._max_blocks = max_content_blocks  # over stdio (``bot.tools.mcp_stdio``)
        self._delays, self._ping_interval = tuple(restart_delays), ping_interval
        self._connect_timeout = connect_timeout
        self.tools: list[ToolSpec] = []
        self.state = "not started"
        self.connections = 0  # how many times it connected (restarts = connections - 1)
        self._client: Any = None
        self._tried = asyncio.Event()  # the current attempt to connect ended, up or failed
        self._broken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False  # close asked the supervisor to stop
        self._refused: set[str] = set()  # tool names already warned about
        self._missing: frozenset[str] = frozenset()  # allow names last warned as not offered
        self._warned_down = ""  # the down state last warned about ("" while it is up)
        self._stderr: StderrToLog | None = None  # the program's stderr, this attempt (stdio)
        self._overflow = ""  # why this connection was dropped: a message over the limit
        self._warned_unbounded = False  # said that the SDK's own stdio reader is in use
        self._calls = asyncio.Semaphore(CONCURRENT_CALLS)

    @property
    def up(self) -> bool:
        return self._client is not None

    @property
    def restarts(self) -> int:
        return max(0, self.connections - 1)

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def wait_up(self, seconds: float) -> bool:
        """Wait until connected or the attempt failed, at most ``seconds``; whether it is up.
        A server that fails at once (no such program, a refused port) does not hold up the
        start or check-config: its ``state`` says why, and it keeps trying in the background."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._tried.wait()
        return self.up

    async def close(self) -> None:
        """Stop the supervisor. A cancellation that comes while an attempt is connecting can
        be swallowed inside the SDK's task groups, and one cancel then leaves the supervisor
        reconnecting for ever (and close waiting on it): it also stops at its next turn, and
        is cancelled again until it ends, for at most ``CLOSE_SECONDS``."""
        task, self._task = self._task, None
        if task is not None:
            self._stopping = True
            deadline = time.monotonic() + CLOSE_SECONDS
            while not task.done() and time.monotonic() < deadline:
                task.cancel()
                await asyncio.wait({task}, timeout=0.2)
            if not task.done():
                log.warning("MCP server %s: did not stop within %g s", self.name, CLOSE_SECONDS)
            elif not task.cancelled() and task.exception() is not None:
                log.debug("MCP server %s stopped: %s", self.name, describe(task.exception()))
        self.state = "stopped"

    async def call(
        self, name: str, arguments: dict[str, Any], images: ImageShelf | None = None
    ) -> tuple[str, bool]:
        """``(text, is_error)`` of one tool call; raises :class:`ServerDown` when there is no
        connection, and marks the connection broken when the call finds it closed. An image
        in the result goes to ``images`` (None: it is named, not kept)."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        client = self._client
        if client is None:
            raise ServerDown(f"MCP server {self.name} is {self.state}")
        try:
            async with self._calls:
                result = await client.call_tool(name, arguments)
        except MCPError as error:
            if error.code == CONNECTION_CLOSED:
                self._broken.set()
                why = self._overflow or "closed the connection"
                raise ServerDown(f"MCP server {self.name} {why}") from error
            return f"the server refused the call: {error}", True
        taken = None if images is None else functools.partial(images.take, name)
        text = result_text(result.content, result.structured_content, taken)
        return text, bool(result.is_error)

    # -- the supervisor ----------------------------------------------------------------------

    async def _target(self, stack: contextlib.AsyncExitStack) -> Any:
        """The transport: the program over stdio (its stderr into the bot's log), or HTTP."""
        from mcp import StdioServerParameters

        settings = self.settings
        if settings.command is not None:
            parameters = StdioServerParameters(
                command=settings.command,
                args=list(settings.args),
                env=settings.env_values(self._env) or None,
            )
            self._stderr = StderrToLog(self.name)
            errlog = await stack.enter_async_context(self._stderr)
            try:
                from bot.tools.mcp_stdio import bounded_stdio_client
            except ImportError as error:  # an SDK without the helpers the bounded reader uses
                return self._unbounded_stdio(parameters, errlog, error)
            return bounded_stdio_client(
                parameters,
                errlog=errlog,
                max_bytes=self._max_bytes,
                max_blocks=self._max_blocks,
                on_overflow=self._overflowed,
            )
        from mcp.client.streamable_http import streamable_http_client

        from bot.tools.mcp_http import http_client

        http, url = http_client(
            settings.url_value(self._env), settings.header_values(self._env), self._max_bytes
        )
        stack.push_async_callback(http.aclose)
        return streamable_http_client(url, http_client=http, max_sse_event_size=self._max_bytes)

    def _unbounded_stdio(self, parameters: Any, errlog: Any, error: ImportError) -> Any:
        """The SDK's own stdio reader, which keeps a message whole however long: tools keep
        working with an SDK version whose private helpers moved, and the log says the limit
        does not hold (once per server)."""
        from mcp.client.stdio import stdio_client

        if not self._warned_unbounded:
            self._warned_unbounded = True
            log.warning(
                "MCP server %s: this mcp version's stdio messages are read without the "
                "%d-byte limit (%s)",
                self.name,
                self._max_bytes,
                error,
            )
        return stdio_client(parameters, errlog=errlog)

    def _overflowed(self, why: str) -> None:
        """The program wrote a message over the limit (``why``: which one): its connection is
        dropped (the supervisor starts it again) and a call in flight says why."""
        self._overflow = why
        if self.up:  # else the failed start's warning says it
            log.warning("MCP server %s %s", self.name, self._overflow)
        self._broken.set()

    async def _supervise(self) -> None:
        failures = 0
        while not self._stopping:
            began = time.monotonic()
            try:
                await self._connection()
            except asyncio.CancelledError:
                raise
            except ValueError as error:  # a header's environment variable is not set
                self._down(f"down: {error}")
            except Exception as error:  # the transport's task group, a refused handshake...
                self._down(
                    f"down: it {self._overflow}" if self._overflow else f"down: {describe(error)}"
                )
            self._tried.set()
            if time.monotonic() - began > 60:
                failures = 0  # it ran a while: start the pauses from the shortest again
            delay = self._delays[min(failures, len(self._delays) - 1)]
            failures += 1
            log.debug("MCP server %s: connecting again in %.1f s", self.name, delay)
            await asyncio.sleep(delay)

    def _down(self, state: str) -> None:
        """A failed attempt: a warning when the state changed (it was up, or fails for another
        reason), a debug line when it fails as the time before (it is retried for as long as
        the bot runs, up to every 30 s)."""
        self.state = state
        if state == self._warned_down:
            log.debug("MCP server %s: still %s", self.name, state)
            return
        self._warned_down = state
        said = self._stderr.tail if self._stderr is not None else ()
        last_words = f"; its stderr ended: {' | '.join(said)}" if said else ""
        log.warning("MCP server %s: %s (trying again in the background)%s", self.name, state,
                    last_words)  # fmt: skip

    async def _connection(self) -> None:
        from mcp import Client

        if not self.state.startswith("down"):
            # A retry keeps saying why it is down: the start-up summary, check-config and a
            # refused call would otherwise read "connecting" whenever they met an attempt.
            self.state = "connecting"
        self._tried.clear()
        self._stderr, self._overflow = None, ""
        self._broken.clear()  # before the program starts: a message over the limit is kept
        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(self._connect_timeout):
                client = await stack.enter_async_context(Client(await self._target(stack)))
                self.tools = await self._list_tools(client)
            self._client, self.connections = client, self.connections + 1
            self.state, self._warned_down = "up", ""
            self._tried.set()
            names = ", ".join(t.name for t in self.tools) or "none"
            log.info("MCP server %s up (%s), tools: %s", self.name, self.settings.transport, names)
            if self._overflow:  # over the limit after its listing, before it was up: unsaid
                log.warning("MCP server %s %s", self.name, self._overflow)
            try:
                await self._watch(client)
            finally:
                # Together: a call in the closing window below must not read "is up".
                broke = f"it {self._overflow}" if self._overflow else "the connection broke"
                self._client, self.state = None, f"down: {broke}"
        if not self._overflow:  # else its warning said why already
            log.warning("MCP server %s: the connection broke", self.name)

    async def _watch(self, client: Any) -> None:
        """Return when the connection is found broken: by a call, or by a listing that failed."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._ping_interval):
                    await self._broken.wait()
                    return
            try:
                async with asyncio.timeout(max(5.0, self._ping_interval)):
                    self.tools = await self._list_tools(client, fresh=True)
            except Exception as error:
                log.warning("MCP server %s: listing its tools failed: %s", self.name,
                            describe(error))  # fmt: skip
                return

    def _spec(self, tool: Any) -> ToolSpec | None:
        """The tool as offered, its description cut to ``MAX_DESCRIPTION_CHARS``; None (and one
        log line) when its input schema is over ``MAX_SCHEMA_BYTES``: every request carries
        every tool's definition."""
        schema = dict(tool.input_schema or {"type": "object"})
        try:
            size = len(json.dumps(schema, ensure_ascii=False).encode())
        except (TypeError, ValueError, RecursionError):
            size = MAX_SCHEMA_BYTES + 1
        if size > MAX_SCHEMA_BYTES:
            if tool.name not in self._refused:
                self._refused.add(tool.name)
                log.warning(
                    "MCP server %s: tool %s not offered: its input schema has %d bytes (at "
                    "most %d)", self.name, tool.name, size, MAX_SCHEMA_BYTES,
                )  # fmt: skip
            return None
        return ToolSpec(
            name=tool.name,
            description=_clip(tool.description or ""),
            parameters=schema,
            source=self.name,
        )

    async def _list_tools(self, client: Any, fresh: bool = False) -> list[ToolSpec]:
        allow = set(self.settings.allow)
        specs: list[ToolSpec] = []
        cursor = None
        for _ in range(100):  # a server whose pages never end cannot hang the start
            page = await client.list_tools(cursor=cursor, cache_mode="refresh" if fresh else "use")
            for tool in page.tools:
                if allow and tool.name not in allow:
                    continue
                if not TOOL_NAME.fullmatch(tool.name):  # the model APIs would refuse the request
                    if tool.name not in self._refused:
                        self._refused.add(tool.name)
                        log.warning("MCP server %s: tool %r not offered: a name the model APIs "
                                    "refuse", self.name, tool.name[:80])  # fmt: skip
                    continue
                spec = self._spec(tool)
                if spec is not None and len(specs) < MAX_TOOLS:
                    specs.append(spec)
                elif spec is not None and "#more" not in self._refused:
                    self._refused.add("#more")
                    log.warning("MCP server %s offers more than %d tools: the rest are not "
                                "offered", self.name, MAX_TOOLS)  # fmt: skip
            cursor = page.next_cursor
            if cursor is None:
                break
        missing = frozenset(allow - {spec.name for spec in specs})
        if missing != self._missing:  # said once, and again only when it changes
            self._missing = missing
            if missing:
                log.warning(
                    "MCP server %s does not offer %s (listed in allow)", self.name, sorted(missing)
                )
            else:
                log.info("MCP server %s now offers every tool listed in allow", self.name)
        return specs


def _clip(description: str) -> str:
    if len(description) <= MAX_DESCRIPTION_CHARS:
        return description
    return description[: MAX_DESCRIPTION_CHARS - 1] + "…"


def result_text(
    content: Sequence[Any],
    structured: Any = None,
    image: Callable[[str, str], str] | None = None,
) -> str:
    """A call's content as text: text parts as they are, an image as ``image(data, type)``
    says (kept to be attached, ``bot.tools.tool_images``), other parts named, the structured
    result when there is nothing else."""
    parts: list[str] = []
    for part in content or ():
        kind = getattr(part, "type", None)
        if kind == "text":
            parts.append(part.text)
        elif kind == "resource":
            resource = part.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[link {part.uri}]")
        elif kind == "image" and image is not None:
            parts.append(image(part.data, part.mime_type))
        else:
            parts.append(f"[{kind or 'part'} not shown]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def describe(error: BaseException) -> str:
    """One line for an error, looking inside the exception groups anyio raises."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class McpServers:
    """Every configured server: started together, closed together."""

    def __init__(self, servers: Sequence[McpServer]) -> None:
        self.servers = list(servers)

    @classmethod
    def from_settings(cls, settings: Sequence[McpServerSettings], **options: Any) -> McpServers:
        return cls([McpServer(server, **options) for server in settings])

    async def start(self, wait: float = 10.0) -> None:
        """Start every server and wait (at most ``wait`` s) until each is connected or its
        first attempt failed: a slow or failed one keeps connecting in the background and its
        tools appear when it is up."""
        for server in self.servers:
            server.start()
        if self.servers:
            await asyncio.gather(*(server.wait_up(wait) for server in self.servers))

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers))

    def summary(self) -> list[str]:
        """One line per server, for the start-up log."""
        return [
            f"MCP {s.name} ({s.settings.transport}): {s.state}; tools: "
            + (", ".join(t.name for t in s.tools) or "none")
            for s in self.servers
        ]
