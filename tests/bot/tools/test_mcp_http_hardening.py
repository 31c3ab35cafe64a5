"""An MCP server over HTTP, through a local proxy in front of the real test server
(tests/fakes/mcp_server.py): the url's secrets reach the server but no log line (the HTTP
client's and the SDK's included, at every level), the server state or its summary; an answer
that never ends (to a call, to the DELETE that ends a session, or as a GET's redirect) is cut
at the byte limit, and the bot goes on; a server that turns to
redirecting elsewhere is an error the model reads, without the url's secrets."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web

from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.tools.mcp_servers import McpServers
from bot.tools.spec import ToolCallRequest
from bot.tools.toolbox import Toolbox
from tests.fakes.zygote import fake_mcp_args

PASSWORD, QUERY_KEY, HEADER_KEY = "pw-S3CRET-one", "qk-S3CRET-two", "hk-S3CRET-three"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Proxy:
    """What the proxy saw, and what it does instead of forwarding."""

    url: str = ""
    seen: list[tuple[str, str, str]] = field(default_factory=list)  # url, authorization, key
    endless_tool: str = "echo"  # a call of it is answered with a JSON body that never ends
    endless: bool = False
    redirect_to: str | None = None  # answer every POST with a 307 there
    sent_bytes: int = 0
    fail_listing: bool = False  # answer a tools/list with a 500: the bot connects again
    endless_delete: bool = False  # the DELETE that ends a session gets a body that never ends
    endless_get: bool = False  # every GET is redirected to itself with a body that never ends
    legacy: bool = False  # the server does not know the 2026 protocol's ``server/discover``


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    port = free_port()
    upstream = await asyncio.create_subprocess_exec(
        sys.executable, *fake_mcp_args("http", str(port)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    state = Proxy()
    session = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        state.seen.append(
            (
                str(request.url),
                request.headers.get("Authorization", ""),
                request.query.get("key", ""),
            )
        )
        if request.method == "POST" and state.redirect_to is not None:
            raise web.HTTPTemporaryRedirect(state.redirect_to)
        if request.method == "DELETE" and state.endless_delete:
            return await endless(request, web.StreamResponse(), b"")
        if request.method == "GET" and state.endless_get:
            redirect = web.StreamResponse(status=307, headers={"Location": str(request.url)})
            return await endless(request, redirect, b"")
        message = json.loads(body) if body else {}
        called = message.get("params", {}).get("name") if isinstance(message, dict) else None
        if state.endless and message.get("method") == "tools/call" and called == state.endless_tool:
            return await endless_json(request, message.get("id"))
        if state.fail_listing and message.get("method") == "tools/list":
            raise web.HTTPInternalServerError()
        if state.legacy and message.get("method") == "server/discover":
            raise web.HTTPNotFound()  # a server of the 2025 protocol: sessions, GET, DELETE
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        async with session.request(
            request.method, f"http://127.0.0.1:{port}{request.path}", data=body, headers=headers
        ) as upstream_response:
            response = web.StreamResponse(status=upstream_response.status)
            for key, value in upstream_response.headers.items():
                if key.lower() not in ("content-length", "transfer-encoding", "date", "server"):
                    response.headers[key] = value
            await response.prepare(request)
            async for chunk in upstream_response.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def endless_json(request: web.Request, call_id: object) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        start = json.dumps({"jsonrpc": "2.0", "id": call_id, "result": {"content": [
            {"type": "text", "text": ""}]}})[:-5]  # fmt: skip
        return await endless(request, response, start.encode())

    async def endless(
        request: web.Request, response: web.StreamResponse, start: bytes
    ) -> web.StreamResponse:
        await response.prepare(request)
        await response.write(start)
        chunk = b"x" * 65536
        try:
            while state.sent_bytes < 100_000_000:
                await response.write(chunk)
                state.sent_bytes += len(chunk)
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass  # the bot stopped reading: what this test wants
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield state
    finally:
        await runner.cleanup()
        await session.close()
        upstream.kill()
        await upstream.wait()


def secret_settings(proxy: Proxy, **extra: object) -> McpServerSettings:
    return McpServerSettings(
        name="remote",
        url=f"http://bot:{PASSWORD}@{proxy.url.removeprefix('http://')}/mcp?key=${{QUERY_KEY}}",
        headers={"X-Api-Key": "HEADER_KEY"},
        **extra,  # type: ignore[arg-type]
    )


async def started(settings: McpServerSettings, **options: object) -> McpServers:
    servers = McpServers.from_settings(
        [settings],
        env={"QUERY_KEY": QUERY_KEY, "HEADER_KEY": HEADER_KEY},
        restart_delays=(0.2,),
        ping_interval=0.3,
        **options,
    )
    await servers.start(wait=30)
    async with asyncio.timeout(30):
        while not servers.servers[0].up:
            await asyncio.sleep(0.05)
    return servers


def call(name: str, arguments: str = "{}") -> ToolCallRequest:
    return ToolCallRequest(id="c1", name=name, arguments=arguments)


def no_secret_in(text: str) -> None:
    for secret in (PASSWORD, QUERY_KEY, HEADER_KEY):
        assert secret not in text


async def test_url_secrets_reach_the_server_and_no_log_line(
    proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level: httpx2's and the SDK's too
    servers = await started(secret_settings(proxy))
    try:
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
        [outcome] = await box.run([call("echo", '{"text": "hello"}')])
        summary = "\n".join(servers.summary())
        state = servers.servers[0].state
    finally:
        await servers.close()
    assert outcome.status == "ok" and "echo: hello" in outcome.content
    # The server got them all: the password as Basic auth, the query, the header.
    assert proxy.seen and all(key == QUERY_KEY for _url, _auth, key in proxy.seen)
    assert all(auth.startswith("Basic ") for _, auth, _ in proxy.seen)
    assert any("POST" in r.getMessage() for r in caplog.records if r.name == "httpx2")
    for record in caplog.records:
        if record.name == "aiohttp.access":
            continue  # the proxy's own log, standing in for the server's: it got the key
        no_secret_in(record.getMessage())
        if record.exc_info:
            no_secret_in(logging.Formatter().formatException(record.exc_info))
    no_secret_in(summary + state)


async def test_an_answer_that_never_ends_is_cut_at_the_byte_limit(
    proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    proxy.endless = True
    servers = await started(secret_settings(proxy), max_response_bytes=1_000_000)
    try:
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
        async with asyncio.timeout(15):  # the endless body is 100 MB: this is far less
            [cut] = await box.run([call("echo", '{"text": "hello"}')])
        [other] = await box.run([call("pid")])  # the connection goes on
    finally:
        await servers.close()
    assert cut.status == "error" and "over 1000000 bytes" in cut.detail
    assert other.status == "ok"
    assert proxy.sent_bytes < 50_000_000
    no_secret_in(cut.content)


@pytest.mark.parametrize("answer", ["endless_delete", "endless_get"])
async def test_no_other_answer_is_read_past_the_byte_limit(proxy: Proxy, answer: str) -> None:
    """The DELETE that ends a session (the bot connects again after a failed listing) and a
    redirect of the stream of the server's own messages (GET) are read whole by the SDK."""
    setattr(proxy, answer, True)
    proxy.legacy = True
    servers = await started(secret_settings(proxy), max_response_bytes=1_000_000)
    [server] = servers.servers
    try:
        proxy.fail_listing = True
        async with asyncio.timeout(30):
            while server.up:
                await asyncio.sleep(0.05)
        proxy.fail_listing = False
        async with asyncio.timeout(30):
            while not server.up:
                await asyncio.sleep(0.05)
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
        [outcome] = await box.run([call("echo", '{"text": "hello"}')])
    finally:
        await servers.close()
    assert outcome.status == "ok"
    assert proxy.sent_bytes < 50_000_000  # each such answer is 100 MB: this is far less


async def test_a_server_that_turns_to_redirecting_is_an_error_without_secrets(
    proxy: Proxy,
) -> None:
    servers = await started(secret_settings(proxy))
    try:
        proxy.redirect_to = "http://169.254.169.254/latest/meta-data/?token=abc"
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
        [outcome] = await box.run([call("echo", '{"text": "hello"}')])
    finally:
        await servers.close()
    assert outcome.status == "error" and "not followed" in outcome.detail
    assert "token=abc" not in outcome.content
    no_secret_in(outcome.content)
