"""A stdio MCP server cannot exhaust the bot's memory (bot/tools/mcp_stdio.py), against the real
test server (tests/fakes/mcp_server.py): a message over the limit, whole or never ending, drops
the connection with one warning, the call in flight says why, and the server is started again
and answers the next call. The limit here is small (64 KB) so that the SDK's own reader, which
kept any line whole, fails these tests: it returned the long answer, and hung on the endless
line while it buffered it."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator

import pytest

from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.tools.mcp_servers import McpServers
from bot.tools.server_stderr import MAX_LINE_CHARS
from bot.tools.spec import ToolCallRequest
from bot.tools.toolbox import Toolbox
from tests.fakes.zygote import fake_mcp_args

LIMIT = 64_000
OVER = f"sent a message over the {LIMIT}-byte limit: connection dropped, it restarts"


@pytest.fixture
async def servers() -> AsyncIterator[McpServers]:
    settings = McpServerSettings(
        name="test", command=sys.executable, args=fake_mcp_args(), env={"FAKE_MCP_SPILL": "1"}
    )
    started = McpServers.from_settings(
        [settings], restart_delays=(0.1,), ping_interval=30, max_response_bytes=LIMIT
    )
    await started.start(wait=30)
    try:
        yield started
    finally:
        await started.close()


def call(name: str, arguments: str = "{}") -> ToolCallRequest:
    return ToolCallRequest(id="c1", name=name, arguments=arguments)


async def up_again(servers: McpServers) -> None:
    [server] = servers.servers
    async with asyncio.timeout(30):
        while not (server.up and server.connections == 2):
            await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("huge", '{"size": 200000}'), ("spill", "{}")],
    ids=["an answer over the limit", "a line that never ends"],
)
async def test_a_message_over_the_limit_drops_the_connection_and_the_server_restarts(
    servers: McpServers, caplog: pytest.LogCaptureFixture, tool: str, arguments: str
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.tools.mcp_servers")
    box = Toolbox(
        ToolSettings(enabled=True, read_page=False, call_timeout_seconds=20), servers=servers
    )
    [before] = await box.run([call("pid")])
    async with asyncio.timeout(30):  # no hang: the call ends well within its own timeout
        [over] = await box.run([call(tool, arguments)])
    assert over.status == "error"
    assert over.detail == f"MCP server test {OVER}; try again later"
    await up_again(servers)
    [after] = await box.run([call("pid")])
    [echo] = await box.run([call("echo", '{"text": "still here"}')])

    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [f"MCP server test {OVER}"]  # one line, no second "connection broke"
    assert after.status == "ok" and before.status == "ok"
    assert after.detail != before.detail  # a new process
    assert echo.status == "ok" and "echo: still here" in echo.content


async def test_an_answer_within_the_limit_keeps_the_connection(servers: McpServers) -> None:
    box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
    [outcome] = await box.run([call("huge", '{"size": 25000}')])
    [server] = servers.servers
    assert outcome.status == "ok" and outcome.original_chars == 25_000
    assert server.up and server.connections == 1


async def test_a_tool_listing_over_the_limit_is_a_server_down_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before it is up (its first listing is too long) the server is down with the reason, and
    retried in the background without a warning at every attempt."""
    settings = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    servers = McpServers.from_settings([settings], restart_delays=(0.1,), max_response_bytes=500)
    caplog.set_level(logging.WARNING, logger="bot.tools.mcp_servers")
    [server] = servers.servers
    try:
        await servers.start(wait=30)
        async with asyncio.timeout(30):
            while server.connections == 0 and server.state == "connecting":
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # a few attempts more
        assert not server.up and server.state == "down: it " + OVER.replace(str(LIMIT), "500")
    finally:
        await servers.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"MCP server test: down: it {OVER.replace(str(LIMIT), '500')} (trying again"
    )


async def test_a_stderr_line_that_never_ends_is_logged_cut_once_and_the_server_goes_on(
    servers: McpServers, caplog: pytest.LogCaptureFixture
) -> None:
    """Its stderr is the server's log, not a message: no limit drops it, and the line is held
    to a few KB (bot/tools/server_stderr.py) while the connection goes on."""
    caplog.set_level(logging.INFO, logger="bot.tools.server_stderr")
    box = Toolbox(
        ToolSettings(enabled=True, read_page=False, call_timeout_seconds=1), servers=servers
    )
    [spilling] = await box.run([call("spill", '{"to": "stderr"}')])
    await asyncio.sleep(1.0)  # some tens of MB more of it
    [echo] = await box.run([call("echo", '{"text": "still here"}')])
    [server] = servers.servers
    assert spilling.status == "timeout"
    assert echo.status == "ok" and server.connections == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "bot.tools.server_stderr"]
    assert lines == ['MCP server test: {"jsonrpc": "2.0", "method": "notifications/message", '
                     '"params": "' + "x" * (MAX_LINE_CHARS - 66) + "…"]  # fmt: skip


async def test_an_sdk_without_the_bounded_readers_helpers_still_runs_the_server(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A later mcp that renamed the private helpers fails the bounded reader's import: the
    # server runs on the SDK's own reader, and the log says the limit does not hold.
    monkeypatch.setitem(sys.modules, "bot.tools.mcp_stdio", None)
    caplog.set_level(logging.WARNING, logger="bot.tools.mcp_servers")
    settings = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    started = McpServers.from_settings(
        [settings], restart_delays=(0.1,), ping_interval=30, max_response_bytes=LIMIT
    )
    await started.start(wait=30)
    try:
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=started)
        [echo] = await box.run([call("echo", '{"text": "unbounded"}')])
    finally:
        await started.close()
    assert echo.status == "ok" and "echo: unbounded" in echo.content
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [w for w in warnings if "read without the 64000-byte limit" in w] == [
        "MCP server test: this mcp version's stdio messages are read without the 64000-byte "
        "limit (import of bot.tools.mcp_stdio halted; None in sys.modules)"
    ]
