"""``check-config``'s lines about tools: what the model may call, each MCP server connected to
once (started, for a command) and its tools listed, or why it could not be. As TOML comments,
so the printout stays a valid config file."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.answering.catchup_tool import CATCH_UP
from bot.config.tool_settings import ToolSettings
from bot.tools.mcp_servers import McpServers, block_limit, response_limit
from bot.tools.read_page import READ_PAGE

CHECK_WAIT_SECONDS = 20.0


@dataclass
class ToolReport:
    lines: list[str]
    down: list[str] = field(default_factory=list)
    """The MCP servers that could not be connected to (``check-config --probe`` fails then)."""


def tool_lines(
    settings: ToolSettings,
    *,
    articles_on: bool = True,
    catch_up: bool = False,
    wait: float = CHECK_WAIT_SECONDS,
) -> list[str]:
    return tool_report(settings, articles_on=articles_on, catch_up=catch_up, wait=wait).lines


def tool_report(
    settings: ToolSettings,
    *,
    articles_on: bool = True,
    catch_up: bool = False,
    wait: float = CHECK_WAIT_SECONDS,
    start_servers: bool = False,
) -> ToolReport:
    """``catch_up``: the top level's ``[catchup]`` offers the tool; ``start_servers``: connect
    to the MCP servers even with tools off (a ``[[channels]]`` table may turn them on;
    ``--probe`` tries every server)."""
    if not settings.enabled:
        report = ToolReport(["# tools: off ([tools] enabled = false): the model calls nothing"])
        if start_servers and settings.mcp:
            report = asyncio.run(_servers(settings, wait, report.lines))
        return report
    lines = [
        f"# tools: the model may call tools, at most {settings.max_steps} rounds per answer, "
        f"{settings.call_timeout_seconds:g} s per call"
        + ("" if settings.in_dms else ", not in DMs ([tools] in_dms)")
    ]
    if settings.read_page and articles_on:
        lines.append(f"#   {READ_PAGE.name}: built-in, through the article reader ([articles])")
    elif settings.read_page:
        lines.append(f"#   {READ_PAGE.name}: not offered, the article reader is off ([articles])")
    if catch_up:
        lines.append(f"#   {CATCH_UP.name}: built-in, /catchup for the member asking ([catchup])")
    if settings.mcp:
        return asyncio.run(_servers(settings, wait, lines))
    return ToolReport(lines)


async def _servers(settings: ToolSettings, wait: float, lines: list[str]) -> ToolReport:
    servers = McpServers.from_settings(
        settings.mcp,
        restart_delays=(wait * 2,),
        max_response_bytes=response_limit(settings.max_result_chars),
        max_content_blocks=block_limit(settings.max_result_chars),
    )
    try:
        await servers.start(wait=wait)
        down = [server.name for server in servers.servers if not server.up]
        return ToolReport([*lines, *(f"#   {line}" for line in servers.summary())], down)
    finally:
        await servers.close()
