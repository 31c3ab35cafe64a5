"""The toolbox an answer uses: which tools are offered, and running one round of calls.

A round's calls run in parallel, each under ``call_timeout_seconds``; whatever goes wrong (an
unknown tool, arguments that are not a JSON object, a server that is down, a tool that raises
or hangs) becomes an error result the model reads, never an exception for the answer. Each
result is cut to ``max_result_chars``, defused and escaped (``defuse``) before the model sees
it.

The prompt's token budget counts the results: given the room left in the window, a round's
results share it, the largest shortened first (each keeps ``MIN_RESULT_CHARS`` at least, so
the model learns what the tool said, if not all of it). A result is never shortened after the
model has read it: the next rounds' turns keep the prefix they were sampled from. A call the
answer already ran for a prompt refused as too long is not run again (``call_memory``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from bot.config.tool_settings import TOOL_NAME, ToolSettings
from bot.tools.call_memory import AttemptMemory, CallMemory, RawResult
from bot.tools.defuse import cap, wrap
from bot.tools.mcp_servers import McpServer, McpServers, ServerDown, describe
from bot.tools.page_hosts import normal_host
from bot.tools.read_page import READ_PAGE, PageReader, ToolFailed, host_of, page_url
from bot.tools.spec import (
    AnswerTool,
    ToolCallRequest,
    ToolOutcome,
    ToolSpec,
    ToolStatus,
    parse_arguments,
)
from bot.tools.tool_images import ImageShelf

log = logging.getLogger(__name__)

MIN_RESULT_CHARS = 200
WRAP_CHARS = 100  # the element around a result, and the note saying it was cut


def allot(sizes: Sequence[int], room: int | None, cap: int) -> list[int]:
    """How many characters each result keeps: at most ``cap`` each, and together at most
    ``room`` (None: no limit), the largest shortened first (water-filling); never below
    ``MIN_RESULT_CHARS`` unless the result is shorter."""
    kept = [min(size, cap) for size in sizes]
    if room is None or sum(kept) <= room:
        return kept
    left, order = max(room, 0), sorted(range(len(kept)), key=lambda i: kept[i])
    for done, index in enumerate(order):
        share = left // (len(order) - done)
        kept[index] = max(min(kept[index], share), min(kept[index], MIN_RESULT_CHARS))
        left -= kept[index]
    return kept


class Toolbox:
    """The built-in tools and the MCP servers' tools, under one ``[tools]`` settings."""

    def __init__(
        self,
        settings: ToolSettings,
        *,
        pages: PageReader | None = None,
        servers: McpServers | None = None,
    ) -> None:
        self.settings = settings
        self.pages = pages
        self.servers = servers or McpServers([])
        self._warned: set[tuple[str, str]] = set()
        self.hosts: set[str] = set()  # read_page may read these (see bot/tools/page_hosts.py)
        self._offered: list[ToolSpec] | None = None  # fixed for one answer (``for_prompt``)
        self._memory: AttemptMemory | None = None  # the answer's earlier results (``for_prompt``)
        self._images: ImageShelf | None = None  # the answer's images (``for_prompt``)
        self._own: tuple[AnswerTool, ...] = ()  # the answer's own built-ins (``for_prompt``)

    def apply_settings(self, settings: ToolSettings) -> None:
        """A reloaded config's limits, from the next round on (servers stay as started)."""
        self.settings = settings

    def for_prompt(
        self,
        hosts: Iterable[str] = (),
        *,
        settings: ToolSettings | None = None,
        specs: Sequence[ToolSpec] | None = None,
        memory: CallMemory | None = None,
        images: ImageShelf | None = None,
        own: Sequence[AnswerTool] = (),
    ) -> Toolbox:
        """The toolbox for one answer, the shared one unchanged under the answers running with
        it: read_page may read the ``hosts`` people named in its prompt
        (``bot.tools.page_hosts``), unless ``read_page_any_host``; ``settings``: other limits
        (a channel's own; None: these); ``specs``: the tools it offers, fixed for the answer
        (None: those offered now), so the room its prompt keeps for them and every request
        agree when a server comes or goes;
        ``memory``: what the answer's calls returned for its earlier prompts, given back instead
        of running them again (``bot.tools.call_memory``); ``images``: where the images its MCP
        tools return are kept to be attached (``bot.tools.tool_images``); ``own``: built-ins
        bound to the answer (``catch_up``), offered after read_page."""
        settings = self.settings if settings is None else settings
        view = Toolbox(settings, pages=self.pages, servers=self.servers)
        view._warned, view.hosts = self._warned, {normal_host(host) for host in hosts}
        view._offered = None if specs is None else list(specs)
        view._memory = None if memory is None else memory.for_attempt()
        view._images = images
        view._own = tuple(own)
        return view

    def _refused_host(self, arguments: dict[str, Any]) -> str | None:
        """The host of a read_page call when it may not be read (``bot.tools.page_hosts``);
        None when it may, or when the address is not one (the reader says why)."""
        if self.settings.read_page_any_host:
            return None
        try:
            host = normal_host(urlsplit(page_url(arguments)).hostname or "")
        except (ToolFailed, ValueError):
            return None
        return None if host in self.hosts else host

    def _check_host(self, arguments: dict[str, Any]) -> None:
        host = self._refused_host(arguments)
        if host is not None:
            raise ToolFailed(
                f"refused: read_page reads only pages on hosts the members named in this "
                f"conversation (not those named by a page or an article), and {host[:100]} is "
                "not one; ask the member to post the link if they want it read"
            )

    @property
    def _reads_pages(self) -> bool:
        """read_page is offered: on in [tools], and the article reader is on ([articles])."""
        pages = self.pages
        return pages is not None and self.settings.read_page and pages.articles.settings.enabled

    def specs(self) -> list[ToolSpec]:
        """The tools offered now: read_page first, the answer's own built-ins (``catch_up``),
        then each connected server's, in config order; a name already taken is left out (and
        logged). An answer's toolbox offers the
        tools taken when its prompt was budgeted (``for_prompt``)."""
        if self._offered is not None:
            return list(self._offered)
        specs: list[ToolSpec] = []
        if self._reads_pages:
            specs.append(READ_PAGE)
        specs.extend(tool.spec for tool in self._own if tool.spec.name != READ_PAGE.name)
        taken = {spec.name for spec in specs}
        for server in self.servers.servers:
            if not server.up:
                continue
            for spec in server.tools:
                if spec.name in taken:
                    if (server.name, spec.name) not in self._warned:
                        self._warned.add((server.name, spec.name))
                        log.warning("tool %s of MCP server %s: name taken, not offered",
                                    spec.name, server.name)  # fmt: skip
                    continue
                taken.add(spec.name)
                specs.append(spec)
        return specs

    def status(self, calls: Sequence[ToolCallRequest]) -> str:
        """What the streamed message says while the calls run ("reading wiki.example.org …")."""
        shown: list[str] = []
        for call in calls:
            if call.name == READ_PAGE.name and self._reads_pages:  # else it will not be read
                arguments = _arguments(call) or {}
                line = f"reading {host_of(arguments)}"
                if self._refused_host(arguments) is not None:  # its host is not shown either
                    line = "not reading a page nobody named"
            elif (own := self._own_tool(call.name)) is not None:
                line = own.status
            else:  # the name is the model's: shown only when it is a tool name at all
                line = f"using {call.name if TOOL_NAME.fullmatch(call.name) else 'a tool'}"
            if line not in shown:
                shown.append(line)
        return ", ".join(shown[:3]) + (" and more" if len(shown) > 3 else "") + " …"

    async def run(
        self, calls: Sequence[ToolCallRequest], room_chars: int | None = None
    ) -> list[ToolOutcome]:
        """One outcome per call, in the calls' order; the calls run in parallel. Their results
        take at most ``room_chars`` together (see the module docstring). A call the answer ran
        for a prompt refused as too long is not run again: its result is given back."""
        memory = self._memory
        earlier = [
            memory.take(call) if memory is not None and self._may_reuse(call) else None
            for call in calls
        ]
        fresh = [call for call, kept in zip(calls, earlier, strict=True) if kept is None]
        ran = iter(await asyncio.gather(*(self._one(call) for call in fresh)))
        raw: list[RawResult] = []
        for call, kept in zip(calls, earlier, strict=True):
            if kept is None:
                text, status, seconds, settled = next(ran)
                kept = (text, status, seconds)
                if memory is not None and settled:
                    memory.keep(call, kept)
            raw.append(kept)
        room = None if room_chars is None else room_chars - WRAP_CHARS * len(calls)
        sizes = allot([len(text) for text, *_ in raw], room, self.settings.max_result_chars)
        return [
            self._outcome(call, result, size, reused=kept is not None)
            for call, result, size, kept in zip(calls, raw, sizes, earlier, strict=True)
        ]

    def _may_reuse(self, call: ToolCallRequest) -> bool:
        """A page read for a refused prompt is given back only if this prompt names its host
        too: the rebuilt prompt is smaller, and the host rule holds for each prompt."""
        if call.name != READ_PAGE.name:
            return True
        arguments = _arguments(call)
        return arguments is not None and self._refused_host(arguments) is None

    def _outcome(
        self, call: ToolCallRequest, result: RawResult, size: int, *, reused: bool
    ) -> ToolOutcome:
        text, status, seconds = result
        return ToolOutcome(
            call_id=call.id,
            name=call.name,
            content=wrap(call.name, cap(text, size), error=status != "ok"),
            status=status,
            seconds=seconds,
            original_chars=len(text),
            detail=" ".join(text.split())[:200],
            reused=reused,
        )

    async def _one(self, call: ToolCallRequest) -> tuple[str, ToolStatus, float, bool]:
        """The call's text, status and time, and whether that is its answer for the rest of
        the answer: not when its server was down (the model is told to try again later)."""
        began = time.monotonic()
        settled = True
        own = self._own_tool(call.name)
        limit = self.settings.call_timeout_seconds
        if own is not None and own.timeout_seconds is not None:
            limit = own.timeout_seconds
        status: ToolStatus = "ok"
        try:
            arguments = _arguments(call)
            if arguments is None:
                raise ToolFailed("the arguments are not a JSON object")
            function = self._function(call.name)
            async with asyncio.timeout(limit):
                text, failed = await function(arguments)
            if failed:
                status = "error"
        except ToolFailed as error:
            text, status = str(error), "error"
        except ServerDown as error:
            text, status, settled = f"{error}; try again later", "error", False
        except TimeoutError:
            text, status = f"no result within {limit:g} s", "timeout"
        except Exception as error:  # a tool's bug must not end the answer
            log.warning("tool %s failed: %s", call.name, describe(error))
            text, status = f"the tool failed ({describe(error)})", "error"
        if status != "ok" and not text:
            text = "the tool failed without saying why"
        return text, status, time.monotonic() - began, settled

    def _function(self, name: str) -> Callable[[dict[str, Any]], Awaitable[tuple[str, bool]]]:
        if name == READ_PAGE.name and self._reads_pages:
            pages = self.pages

            async def read(arguments: dict[str, Any]) -> tuple[str, bool]:
                self._check_host(arguments)
                return await pages(arguments), False

            return read
        own = self._own_tool(name)
        if own is not None:

            async def run_own(arguments: dict[str, Any]) -> tuple[str, bool]:
                return await own.run(arguments), False

            return run_own
        server = self._server_of(name)
        if server is None:
            gone = [s for s in self.servers.servers if any(t.name == name for t in s.tools)]
            if gone:  # offered earlier, its server is down now (restarting)
                raise ServerDown(f"MCP server {gone[0].name} is {gone[0].state}")
            offered = ", ".join(spec.name for spec in self.specs()) or "none"
            raise ToolFailed(f"there is no tool named {name[:64]!r} (tools: {offered})")

        async def remote(arguments: dict[str, Any]) -> tuple[str, bool]:
            return await server.call(name, arguments, self._images)

        return remote

    def _own_tool(self, name: str) -> AnswerTool | None:
        """The answer's own built-in of this name (read_page's name is read_page's)."""
        if name == READ_PAGE.name:
            return None
        return next((tool for tool in self._own if tool.spec.name == name), None)

    def _server_of(self, name: str) -> McpServer | None:
        for server in self.servers.servers:
            if server.up and any(spec.name == name for spec in server.tools):
                return server
        return None


def _arguments(call: ToolCallRequest) -> dict[str, Any] | None:
    return parse_arguments(call.arguments)
