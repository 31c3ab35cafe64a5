"""A stdio MCP message of many tiny content blocks (bot/tools/mcp_stdio.py): 80,000 empty
blocks fit under the 2 MB limit and cost +89 MB and 1.2 to 1.9 s of the event loop to parse,
for a result that shows at most ``max_result_chars`` characters. More blocks than a result can
show are refused before any is built (the connection dropped and the server started again, as
for a message over the bytes), and a long message is parsed off the loop.

Against a real stdio server (``fakes/mcp_blocks_server.py``, written by hand: the SDK's server
would not send such a line); the longest stall of the loop while the call runs is printed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.tools.mcp_servers import McpServers, block_limit, response_limit
from bot.tools.spec import ToolCallRequest
from bot.tools.toolbox import Toolbox

SERVER = Path(__file__).resolve().parents[2] / "fakes" / "mcp_blocks_server.py"
SETTINGS = ToolSettings(enabled=True, read_page=False, call_timeout_seconds=30)


@pytest.fixture
async def servers() -> AsyncIterator[McpServers]:
    started = McpServers.from_settings(
        [McpServerSettings(name="blocks", command=sys.executable, args=[str(SERVER)])],
        restart_delays=(0.1,),
        max_response_bytes=response_limit(SETTINGS.max_result_chars),
        max_content_blocks=block_limit(SETTINGS.max_result_chars),
    )
    await started.start(wait=30)
    try:
        yield started
    finally:
        await started.close()


async def longest_stall(work: asyncio.Future) -> float:
    """The longest the loop went without running a 5 ms ticker while ``work`` ran."""
    longest, last = 0.0, time.perf_counter()
    while not work.done():
        await asyncio.sleep(0.005)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    return longest


async def test_a_message_of_more_blocks_than_a_result_shows_is_refused_off_the_loop(
    servers: McpServers,
) -> None:
    box = Toolbox(SETTINGS, servers=servers)
    call = ToolCallRequest(id="c1", name="blocks", arguments='{"count": 80000}')
    running = asyncio.ensure_future(box.run([call]))
    stall = await longest_stall(running)
    [over] = running.result()
    print(f"the loop's longest stall while 80,000 blocks came: {stall * 1000:.0f} ms")
    assert over.status == "error"
    assert "more than 8001 content blocks" in over.detail, over.detail

    [server] = servers.servers
    async with asyncio.timeout(30):
        while not (server.up and server.connections == 2):
            await asyncio.sleep(0.05)
    few = ToolCallRequest(id="c2", name="blocks", arguments='{"count": 8001}')
    [shown] = await box.run([few])  # as many as a result can show: kept, same connection
    assert shown.status == "ok" and server.connections == 2
