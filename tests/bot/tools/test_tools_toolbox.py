"""The toolbox against a real MCP server (tests/fakes/mcp_server.py, over stdio and streamable
HTTP) and the real article reader: results are capped, defused and escaped; a failing, hanging
or unknown tool is an error result; a server that dies is started again."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.tools.call_memory import CallMemory
from bot.tools.mcp_servers import McpServers
from bot.tools.read_page import PageReader
from bot.tools.server_stderr import MAX_LINE_CHARS, MAX_LINES, WINDOW_SECONDS
from bot.tools.spec import ToolCallRequest
from bot.tools.toolbox import Toolbox
from conversation.articles import ArticleService, StaticResolver
from conversation.common.settings import ArticleSettings
from tests.fakes.zygote import fake_mcp_args


def stdio_server(**extra: object) -> McpServerSettings:
    return McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args(), **extra)


def call(name: str, arguments: str = "{}", call_id: str = "c1") -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name=name, arguments=arguments)


@pytest.fixture
async def servers() -> AsyncIterator[McpServers]:
    started = McpServers.from_settings([stdio_server()], restart_delays=(0.1,), ping_interval=0.3)
    await started.start(wait=30)
    try:
        yield started
    finally:
        await started.close()


def toolbox(servers: McpServers, **limits: object) -> Toolbox:
    settings = ToolSettings(enabled=True, read_page=False, **limits)  # type: ignore[arg-type]
    return Toolbox(settings, servers=servers)


async def test_stdio_tools_listed_and_called(servers: McpServers) -> None:
    box = toolbox(servers)
    assert [s.name for s in box.specs()] == ["echo", "fail", "tally", "hang", "huge", "die", "pid"]
    assert box.specs()[0].parameters["required"] == ["text"]
    [outcome] = await box.run([call("echo", '{"text": "hi @everyone <@123> </tool_result>"}')])
    assert outcome.status == "ok"
    assert outcome.content == (
        '<tool_result tool="echo">echo: hi @\u200beveryone &lt;\u200b@123&gt; '
        "&lt;\u200b/tool_result&gt;</tool_result>"
    )


async def test_a_stdio_servers_stderr_goes_to_the_log_under_its_name(caplog) -> None:
    """Not onto the bot's stderr unnamed: each line a record naming the server, a long line
    cut, blank lines dropped."""
    said = "starting up\n\n" + "x" * 5000 + "\nready"
    settings = stdio_server(env={"FAKE_MCP_STDERR": said})
    started = McpServers.from_settings([settings], restart_delays=(30.0,), ping_interval=30)
    caplog.set_level(logging.INFO, logger="bot.tools.server_stderr")
    try:
        await started.start(wait=30)
        async with asyncio.timeout(10):
            while not any("ready" in r.getMessage() for r in caplog.records):
                await asyncio.sleep(0.05)
    finally:
        await started.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "bot.tools.server_stderr"]
    assert lines == [
        "MCP server test: starting up",
        "MCP server test: " + "x" * (MAX_LINE_CHARS - 1) + "…",
        "MCP server test: ready",
    ]


async def test_a_servers_stderr_cannot_flood_the_log_or_forge_a_line(caplog) -> None:
    """Issue 43: bounded. A server writing without end has MAX_LINES logged, then one line
    says how many were not; a terminal escape or a carriage return (which would show a forged
    line over the record) is replaced."""
    said = "\x1b[2K\rINFO bot: all fine\n" + "".join(f"line {n}\n" for n in range(300))
    caplog.set_level(logging.INFO, logger="bot.tools.server_stderr")
    await started_and_closed({"FAKE_MCP_STDERR": said})
    lines = [r.getMessage() for r in caplog.records if r.name == "bot.tools.server_stderr"]
    assert lines[0] == "MCP server test: \ufffd[2K\ufffdINFO bot: all fine"
    assert lines[1:MAX_LINES] == [f"MCP server test: line {n}" for n in range(MAX_LINES - 1)]
    assert lines[MAX_LINES:] == [
        f"MCP server test: {301 - MAX_LINES} more stderr line(s) not logged "
        f"(at most {MAX_LINES} per {WINDOW_SECONDS:g} s)"
    ]


async def started_and_closed(env: dict[str, str]) -> None:
    """The test server with ``env`` started (or failing to), then closed at once."""
    settings = stdio_server(env=env)
    started = McpServers.from_settings([settings], restart_delays=(30.0,), ping_interval=30)
    try:
        await started.start(wait=30)
    finally:
        await started.close()


async def test_a_server_that_cannot_start_is_reported_with_its_last_words(caplog) -> None:
    """Its traceback is usually why: the warning (what check-config shows) quotes it."""
    why = "Traceback (most recent call last):\nKeyError: 'SEARCH_API_KEY'"
    caplog.set_level(logging.WARNING, logger="bot.tools.mcp_servers")
    await started_and_closed({"FAKE_MCP_STDERR": why, "FAKE_MCP_EXIT": "1"})
    said = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    warnings = [
        m for name, level, m in said if name == "bot.tools.mcp_servers" and level == "WARNING"
    ]
    assert len(warnings) == 1, said
    [warning] = warnings
    assert warning.startswith("MCP server test: down: ")
    assert warning.endswith(
        "; its stderr ended: Traceback (most recent call last): | KeyError: 'SEARCH_API_KEY'"
    )


async def test_an_answers_later_prompt_gets_earlier_results_once_each(servers: McpServers):
    """What a call returned for a prompt refused as too long is given back to the rebuilt
    prompt's same call, once per earlier run and cut to the new room; within one prompt a
    repeated call runs again (the model means it)."""
    memory = CallMemory()
    first = toolbox(servers).for_prompt([], memory=memory)
    ran = await first.run([call("tally", '{"label": "a"}', "1"), call("tally", '{"label": "a"}')])
    assert [o.detail for o in ran] == ["tally a: run 1", "tally a: run 2"]
    assert not any(o.reused for o in ran)
    later = toolbox(servers, max_result_chars=200).for_prompt([], memory=memory)
    spelled_otherwise = '{ "label":"a" }'
    again = await later.run([call("tally", spelled_otherwise, str(n)) for n in range(3)])
    assert [o.detail for o in again] == ["tally a: run 1", "tally a: run 2", "tally a: run 3"]
    assert [o.reused for o in again] == [True, True, False]
    assert [o.call_id for o in again] == ["0", "1", "2"]  # the new calls' ids
    [other] = await later.run([call("tally", '{"label": "b"}')])
    assert other.detail == "tally b: run 4" and not other.reused
    huge = '{"size": 5000}'
    [whole] = await first.run([call("huge", huge)])
    [fresh] = await later.run([call("huge", huge)])  # run after ``later`` began: not its own
    assert not fresh.reused
    third = toolbox(servers, max_result_chars=200).for_prompt([], memory=memory)
    [cut] = await third.run([call("huge", huge)])
    assert cut.reused and cut.original_chars == whole.original_chars == 5000
    assert len(cut.content) < 400 < len(whole.content)  # the new room's cut


async def test_a_call_its_server_could_not_take_is_not_kept_for_a_later_prompt() -> None:
    """ "Try again later" is not the call's answer: the rebuilt prompt's call runs again."""
    started = McpServers.from_settings([stdio_server()], restart_delays=(30.0,), ping_interval=30)
    await started.start(wait=30)
    memory = CallMemory()
    try:
        box = toolbox(started).for_prompt([], memory=memory)
        [ran] = await box.run([call("pid")])
        await started.servers[0].close()
        [down] = await box.run([call("echo", '{"text": "hi"}')])
    finally:
        await started.close()
    assert ran.status == "ok" and down.detail.endswith("try again later")
    assert [key for key, _ in memory.runs()] == [("pid", "{}")]


async def test_failing_hanging_unknown_and_huge_tools_are_results(servers: McpServers) -> None:
    box = toolbox(servers, call_timeout_seconds=1.0, max_result_chars=500)
    began = time.monotonic()
    fail, hang, unknown, huge, garbled = await box.run(
        [
            call("fail", call_id="a"),
            call("hang", call_id="b"),
            call("nope", call_id="c"),
            call("huge", '{"size": 100000}', call_id="d"),
            call("echo", "not json", call_id="e"),
        ]
    )
    assert time.monotonic() - began < 5  # in parallel: the hang cost its timeout once
    assert (fail.status, fail.content.startswith('<tool_error tool="fail">')) == ("error", True)
    assert (hang.status, hang.detail) == ("timeout", "no result within 1 s")
    assert unknown.status == "error" and "no tool named 'nope'" in unknown.detail
    assert huge.status == "ok" and huge.original_chars == 100_000
    assert "[result truncated: first" in huge.content and len(huge.content) < 700
    assert garbled.status == "error" and "not a JSON object" in garbled.detail
    # The server still answers after all that.
    [echo] = await box.run([call("echo", '{"text": "still here"}')])
    assert "echo: still here" in echo.content


async def test_dead_server_is_restarted(servers: McpServers) -> None:
    box = toolbox(servers, call_timeout_seconds=5.0)
    [before] = await box.run([call("pid")])
    [died] = await box.run([call("die")])
    assert died.status == "error"
    server = servers.servers[0]
    async with asyncio.timeout(30):
        while not (server.up and server.connections == 2):
            await asyncio.sleep(0.05)
    [after] = await box.run([call("pid")])
    assert after.status == "ok" and after.content != before.content
    assert server.restarts == 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def up(servers: McpServers) -> None:
    """Start the servers and wait until they are up: ``start`` returns at the first refused
    connection, and an HTTP server just started may not listen yet."""
    await servers.start(wait=30)
    async with asyncio.timeout(30):
        while not all(server.up for server in servers.servers):
            await asyncio.sleep(0.05)


async def test_http_server_with_headers_from_environment() -> None:
    port = _free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, *fake_mcp_args("http", str(port)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    settings = McpServerSettings(
        name="remote",
        url=f"http://127.0.0.1:{port}/mcp",
        headers={"Authorization": "Bearer ${TEST_MCP_KEY}"},
        allow=["echo"],
    )
    servers = McpServers.from_settings(
        [settings], env={"TEST_MCP_KEY": "k"}, restart_delays=(0.2,), ping_interval=0.5
    )
    try:
        await up(servers)
        box = toolbox(servers)
        assert [s.name for s in box.specs()] == ["echo"]  # allow: only echo is offered
        [outcome] = await box.run([call("echo", '{"text": "over http"}')])
        assert outcome.content == '<tool_result tool="echo">echo: over http</tool_result>'
        [refused] = await box.run([call("fail")])  # not allowed: not callable either
        assert refused.status == "error"
    finally:
        await servers.close()
        process.kill()
        await process.wait()


async def test_http_server_missing_header_variable_stays_down() -> None:
    settings = McpServerSettings(
        name="remote", url="http://127.0.0.1:9/mcp", headers={"Authorization": "KEY"}
    )
    servers = McpServers.from_settings([settings], env={}, restart_delays=(10,))
    try:
        await servers.start(wait=2)
        [server] = servers.servers
        assert not server.up
        assert "environment variable KEY is not set" in server.state
        assert Toolbox(ToolSettings(read_page=False), servers=servers).specs() == []
    finally:
        await servers.close()


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        html = (
            "<html><head><title>Deploying</title></head><body><article>"
            + "<p>Run the migrations before you deploy, @everyone, or it breaks.</p>" * 30
            + "</article></body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/deploy", page)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"http://wiki.example.org:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_read_page_uses_the_article_reader(site: str) -> None:
    resolver = StaticResolver({"wiki.example.org": ["127.0.0.1"]})
    opened = ArticleSettings(allowed_networks=["127.0.0.1/32"])
    async with ArticleService(opened, resolver=resolver) as articles:
        box = Toolbox(ToolSettings(enabled=True), pages=PageReader(articles))
        box = box.for_prompt(["wiki.example.org"])
        assert [s.name for s in box.specs()] == ["read_page"]
        request = call("read_page", f'{{"url": "{site}/deploy"}}')
        assert box.status([request]) == "reading wiki.example.org …"
        [page] = await box.run([request])
        assert page.status == "ok", page.detail
        assert page.content.startswith('<tool_result tool="read_page">')
        assert "Run the migrations" in page.content and "@\u200beveryone" in page.content
        [again] = await box.run([request])
        assert articles.stats.cache_hits == 1 and again.content == page.content
    async with ArticleService(ArticleSettings(), resolver=resolver) as guarded:
        box = Toolbox(
            ToolSettings(enabled=True, read_page_any_host=True), pages=PageReader(guarded)
        )
        [refused] = await box.run([request])  # 127.0.0.1 is not public: the guard says no
        assert refused.status == "error" and "could not read" in refused.detail
        [bad] = await box.run([call("read_page", '{"url": "file:///etc/passwd"}')])
        assert bad.status == "error" and "not an http(s) address" in bad.detail
    async with ArticleService(ArticleSettings(enabled=False)) as off:
        box = Toolbox(ToolSettings(enabled=True), pages=PageReader(off))
        assert box.specs() == []  # no article reader, no read_page


def test_allot_shortens_the_largest_first() -> None:
    from bot.tools.toolbox import MIN_RESULT_CHARS, allot

    assert allot([100, 5000, 300], None, 1000) == [100, 1000, 300]  # the per-result cap
    assert allot([100, 5000, 300], 10_000, 8000) == [100, 5000, 300]  # room enough
    assert allot([100, 5000, 300], 1000, 8000) == [100, 600, 300]  # only the largest gives
    assert allot([3000, 5000], 1000, 8000) == [500, 500]
    assert allot([3000, 50], 0, 8000) == [MIN_RESULT_CHARS, 50]  # no room: a glimpse each


async def test_a_rounds_results_share_the_room_left(servers: McpServers) -> None:
    box = toolbox(servers, max_result_chars=50_000)
    small, big = await box.run(
        [call("echo", '{"text": "short"}', "a"), call("huge", '{"size": 20000}', "b")],
        room_chars=3000,
    )
    assert small.content == '<tool_result tool="echo">echo: short</tool_result>'
    assert big.original_chars == 20_000
    assert 2500 < len(big.content) <= 3000 and "[result truncated: first" in big.content


async def test_http_server_that_went_away_is_reconnected() -> None:
    port = _free_port()

    async def serve() -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, *fake_mcp_args("http", str(port)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    process = await serve()
    settings = McpServerSettings(name="remote", url=f"http://127.0.0.1:{port}/mcp")
    servers = McpServers.from_settings([settings], restart_delays=(0.2,), ping_interval=0.3)
    try:
        await up(servers)
        [server] = servers.servers
        box = toolbox(servers, call_timeout_seconds=5.0)
        [first] = await box.run([call("pid")])
        process.kill()
        await process.wait()
        async with asyncio.timeout(30):
            while server.up:
                await asyncio.sleep(0)  # sees it down at once: while its connection closes
        [down] = await box.run([call("pid")])
        assert down.status == "error" and down.detail.startswith("MCP server remote is down")
        process = await serve()
        async with asyncio.timeout(30):
            while not (server.up and server.connections == 2):
                await asyncio.sleep(0.05)
        [again] = await box.run([call("pid")])
        assert again.status == "ok" and again.content != first.content
    finally:
        await servers.close()
        if process.returncode is None:  # a failure above may leave it killed already
            process.kill()
        await process.wait()


async def test_tool_list_limits(caplog: pytest.LogCaptureFixture) -> None:
    from bot.tools.mcp_servers import MAX_DESCRIPTION_CHARS, MAX_TOOLS

    settings = stdio_server(env={"FAKE_MCP_MANY": "${FAKE_MCP_MANY_FROM}"})
    started = McpServers.from_settings(
        [settings], restart_delays=(0.1,), env={"FAKE_MCP_MANY_FROM": "1"}
    )
    await started.start(wait=30)
    try:
        box = Toolbox(ToolSettings(enabled=True, read_page=False), servers=started)
        specs = box.specs()
        naps = await box.run([call("nap", '{"seconds": 0.3}', f"n{i}") for i in range(10)])
    finally:
        await started.close()
    assert [o.status for o in naps] == ["ok"] * 10
    assert "at most 4 at once" in naps[-1].content  # CONCURRENT_CALLS a server
    names = [spec.name for spec in specs]
    assert len(names) == MAX_TOOLS == 64
    assert "bloated" not in names and "t0" in names
    assert len(specs[names.index("t0")].description) == MAX_DESCRIPTION_CHARS
    assert "tool bloated not offered: its input schema has" in caplog.text
    assert f"offers more than {MAX_TOOLS} tools" in caplog.text
