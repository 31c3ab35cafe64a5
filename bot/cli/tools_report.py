"""``check-config``'s lines about tools: what the model may call, each MCP server connected to
once (started, for a command) and its tools listed, or why it could not be. As TOML comments,
so the printout stays a valid config file."""

from __future__ import annotations

import asyncio

from bot.config.tool_settings import ToolSettings
from bot.tools.mcp_servers import McpServers, response_limit
from bot.tools.read_page import READ_PAGE

CHECK_WAIT_SECONDS = 20.0


def tool_lines(
    settings: ToolSettings, *, articles_on: bool = True, wait: float = CHECK_WAIT_SECONDS
) -> list[str]:
    if not settings.enabled:
        return ["# tools: off ([tools] enabled = false): the model calls nothing"]
    lines = [
        f"# tools: the model may call tools, at most {settings.max_steps} rounds per answer, "
        f"{settings.call_timeout_seconds:g} s per call"
        + ("" if settings.in_dms else ", not in DMs ([tools] in_dms)")
    ]
    if settings.read_page and articles_on:
        lines.append(f"#   {READ_PAGE.name}: built-in, through the article reader ([articles])")
    elif settings.read_page:
        lines.append(f"#   {READ_PAGE.name}: not offered, the article reader is off ([articles])")
    if settings.mcp:
        lines.extend(asyncio.run(_servers(settings, wait)))
    return lines


async def _servers(settings: ToolSettings, wait: float) -> list[str]:
    servers = McpServers.from_settings(
        settings.mcp,
        restart_delays=(wait * 2,),
        max_response_bytes=response_limit(settings.max_result_chars),
    )
    try:
        await servers.start(wait=wait)
        return [f"#   {line}" for line in servers.summary()]
    finally:
        await servers.close()
