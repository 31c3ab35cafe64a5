"""An MCP server's changes of state, against the real test server (tests/fakes/mcp_server.py):
what stays the same is logged once (a down server retried every few seconds, an ``allow`` name
the server does not offer, listed every ``ping_interval``), and a server that fails at once
does not hold up the start."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time

import pytest

from bot.config.tool_settings import McpServerSettings
from bot.tools.mcp_servers import McpServer, McpServers
from tests.fakes.zygote import fake_mcp_args

LOGGER = "bot.tools.mcp_servers"


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(
        1
        for r in caplog.records
        if r.name == LOGGER and r.levelno >= logging.WARNING and text in r.getMessage()
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_a_missing_allow_name_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    settings = McpServerSettings(
        name="test", command=sys.executable, args=fake_mcp_args(), allow=["echo", "nosuch"]
    )
    servers = McpServers.from_settings([settings], restart_delays=(0.1,), ping_interval=0.05)
    caplog.set_level(logging.INFO, logger=LOGGER)
    try:
        await servers.start(wait=30)
        [server] = servers.servers
        assert server.up and [t.name for t in server.tools] == ["echo"]
        await asyncio.sleep(1.5)  # some 30 listings
        assert server.up and server.connections == 1
    finally:
        await servers.close()
    assert warnings(caplog, "does not offer ['nosuch'] (listed in allow)") == 1


async def test_a_server_that_stays_down_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    settings = McpServerSettings(name="gone", command="/nonexistent/mcp-server")
    servers = McpServers.from_settings([settings], restart_delays=(0.02,))
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    try:
        await servers.start(wait=30)
        await asyncio.sleep(1.0)
        [server] = servers.servers
        assert "FileNotFoundError" in server.state
    finally:
        await servers.close()
    attempts = sum(1 for r in caplog.records if "FileNotFoundError" in r.getMessage())
    assert attempts >= 10  # retried all along, at debug level
    assert warnings(caplog, "FileNotFoundError") == 1


async def test_down_up_down_is_warned_once_each_time(caplog: pytest.LogCaptureFixture) -> None:
    """A refused port answers at once (the start does not wait for it); when the server comes
    and goes again, each change of state is one line."""
    port = free_port()
    settings = McpServerSettings(name="remote", url=f"http://127.0.0.1:{port}/mcp")
    servers = McpServers.from_settings([settings], restart_delays=(0.05,), ping_interval=0.2)
    caplog.set_level(logging.INFO, logger=LOGGER)
    [server] = servers.servers
    process = None
    try:
        began = time.monotonic()
        await servers.start(wait=30)
        assert time.monotonic() - began < 5  # not the 30 s the start would wait for "up"
        assert not server.up and server.state.startswith("down: ConnectError")
        await asyncio.sleep(0.5)
        process = await asyncio.create_subprocess_exec(
            sys.executable, *fake_mcp_args("http", str(port)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        async with asyncio.timeout(30):
            while not server.up:
                await asyncio.sleep(0.05)
        process.kill()
        await process.wait()
        async with asyncio.timeout(30):
            while server.up:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert not server.up
    finally:
        await servers.close()
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
    assert warnings(caplog, "down: ConnectError") == 2  # before it was up, after it went away


class SwallowsOneCancel(McpServer):
    """A connection attempt that swallows the cancellation it gets, as the SDK's task groups
    may when the cancel comes while they connect; then it fails as a refused port does."""

    swallowed = 0

    async def _connection(self) -> None:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            self.swallowed += 1
        raise ConnectionRefusedError("refused")


async def test_close_stops_a_supervisor_that_swallowed_its_cancellation() -> None:
    """Closing the bot must not hang on an MCP server whose connect ate the cancel."""
    settings = McpServerSettings(name="remote", url="http://127.0.0.1:9/mcp")
    server = SwallowsOneCancel(settings, restart_delays=(0.0,))
    server.start()
    await asyncio.sleep(0.2)  # attempts come and go, each swallowing what it gets
    async with asyncio.timeout(10):
        await server.close()
    assert server.swallowed >= 1 and server.state == "stopped"
