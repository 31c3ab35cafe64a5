"""``check-config --probe``: each model endpoint and MCP server tried once, against the local
fake OpenAI server, the fake MCP server and a closed port; the exit status says if one is down."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

from bot.cli.main import main
from bot.demo.openai_server import FakeOpenAI
from tests.fakes.zygote import fake_mcp_args


def closed_port() -> int:
    """A local port nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config(tmp_path: Path, model_url: str, *, named_url: str | None = None, mcp_exits=False):
    text = f'[model]\nbase_url = "{model_url}"\nname = "fake-model"\n'
    if named_url is not None:
        text += f'[models.spare]\nbase_url = "{named_url}"\nname = "fake-model"\n'
    env = "{ FAKE_MCP_EXIT = '1' }" if mcp_exits else "{}"
    text += (
        f"[[tools.mcp]]\nname = 'tools'\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(fake_mcp_args())}\nenv = {env}\n"
    )
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


async def check(path: Path, *extra: str) -> int:
    # In a thread: the command runs its own event loop while this one serves the fake model.
    return await asyncio.to_thread(main, ["check-config", "--config", str(path), *extra])


async def test_everything_up_passes_and_says_so(tmp_path, capsys):
    async with FakeOpenAI() as model:
        assert await check(config(tmp_path, model.url, named_url=model.url), "--probe") == 0
        assert [r.path for r in model.requests] == ["/v1/models", "/v1/models"]
    lines = capsys.readouterr().out.splitlines()
    assert f"#   [model] fake-model at {model.url}: up" in lines
    assert f"#   [models.spare] fake-model at {model.url}: up" in lines
    assert "#   MCP tools (stdio): up; tools: " in "\n".join(lines)
    assert lines[-1] == "# probe: all up"


async def test_a_named_endpoint_on_a_closed_port_fails_the_probe(tmp_path, capsys):
    down = f"http://127.0.0.1:{closed_port()}/v1"
    async with FakeOpenAI() as model:
        path = config(tmp_path, model.url, named_url=down)
        assert await check(path, "--probe") == 1
        out = capsys.readouterr().out
        assert f"#   [model] fake-model at {model.url}: up" in out
        assert f"#   [models.spare] fake-model at {down}: DOWN: ClientConnectorError" in out
        assert out.splitlines()[-1] == "# probe: something is down (exit status 1)"
        # Without --probe, nothing is asked of the endpoints: a config check passes offline.
        assert await check(path) == 0
        assert "# probe" not in capsys.readouterr().out


async def test_an_mcp_server_that_cannot_start_fails_the_probe(tmp_path, capsys):
    async with FakeOpenAI() as model:
        assert await check(config(tmp_path, model.url, mcp_exits=True), "--probe") == 1
    out = capsys.readouterr().out
    assert "#   MCP tools: DOWN (see its line above)" in out
    assert "#   MCP tools (stdio): down" in out  # started although [tools] is off: a probe
