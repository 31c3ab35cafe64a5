"""The bot's toolbox for its whole run: the MCP servers started with the bot (and stopped
with it), ``read_page`` on the bot's article service, listed in the start-up log."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from bot.config.tool_settings import ToolSettings
from bot.tools.mcp_servers import McpServers, block_limit, response_limit
from bot.tools.read_page import PageReader
from bot.tools.toolbox import Toolbox
from conversation.articles import ArticleService

log = logging.getLogger(__name__)

START_WAIT_SECONDS = 15.0
"""How long the start waits for the MCP servers to connect (one that fails does not hold it
up); a slower one, or one that failed, joins when it is up."""


@contextlib.asynccontextmanager
async def open_toolbox(
    settings: ToolSettings, articles: ArticleService | None
) -> AsyncIterator[Toolbox | None]:
    """None when ``[tools] enabled`` is off (no server is started)."""
    if not settings.enabled:
        yield None
        return
    servers = McpServers.from_settings(
        settings.mcp,
        max_response_bytes=response_limit(settings.max_result_chars),
        max_content_blocks=block_limit(settings.max_result_chars),
    )
    toolbox = Toolbox(
        settings, pages=PageReader(articles) if articles is not None else None, servers=servers
    )
    try:
        await servers.start(wait=START_WAIT_SECONDS)
        offered = ", ".join(spec.name for spec in toolbox.specs()) or "none"
        log.info("tools: %s (at most %d rounds per answer)", offered, settings.max_steps)
        for line in servers.summary():
            log.info("%s", line)
        yield toolbox
    finally:
        await servers.close()
