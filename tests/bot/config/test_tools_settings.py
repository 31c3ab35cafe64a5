"""[tools] and [[tools.mcp]]: a mistake is one line naming the key; header secrets stay in the
environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_config
from tests.fakes.zygote import fake_mcp_args


def load(tmp_path: Path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path, env={})


def test_tools_are_off_by_default(tmp_path: Path) -> None:
    tools = load(tmp_path, "").tools
    assert (tools.enabled, tools.max_steps, tools.in_dms, tools.mcp) == (False, 4, False, [])


def test_both_transports_read(tmp_path: Path) -> None:
    tools = load(
        tmp_path,
        """
[tools]
enabled = true
[[tools.mcp]]
name = "fetch"
command = "python3"
args = ["-m", "fetch_server"]
allow = ["fetch"]
[[tools.mcp]]
name = "search"
url = "http://search.internal:8080/mcp"
headers = { Authorization = "Bearer ${SEARCH_KEY}", X-Team = "TEAM" }
""",
    ).tools
    fetch, search = tools.mcp
    assert (fetch.transport, fetch.allow, search.transport) == ("stdio", ["fetch"], "http")
    env = {"SEARCH_KEY": "s3cret", "TEAM": "blue"}
    assert search.header_values(env) == {"Authorization": "Bearer s3cret", "X-Team": "blue"}
    with pytest.raises(ValueError, match=r"SEARCH_KEY is not set \(named in headers.Authorization"):
        search.header_values({"TEAM": "blue"})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[tools]\nmax_steps = 0", "[tools] max_steps"),
        ('[[tools.mcp]]\nname = "a"', "set command (stdio) or url (HTTP)"),
        ('[[tools.mcp]]\nname = "a"\ncommand = "x"\nurl = "http://h/mcp"', "not both"),
        ('[[tools.mcp]]\nname = "a"\ncommand = ""\nurl = "http://h/mcp"', "not both"),
        ('[[tools.mcp]]\nname = "a"\ncommand = ""', "[tools] mcp.0.command"),
        ('[[tools.mcp]]\nname = "a"\ncommand = "  "', "[tools] mcp.0.command"),
        ('[[tools.mcp]]\nname = "a b"\ncommand = "x"', "[tools] mcp.0.name"),
        ('[[tools.mcp]]\nname = "a"\nurl = "ftp://h"', "must start with http://"),
        (
            '[[tools.mcp]]\nname = "a"\nurl = "http://h/mcp"\nheaders = {A = "abc def"}',
            "secrets do not belong in the file",
        ),
        ('[[tools.mcp]]\nname = "a"\ncommand = "x"\nheaders = {A = "B"}', "for url servers only"),
        (
            '[[tools.mcp]]\nname = "a"\ncommand = "x"\n[[tools.mcp]]\nname = "a"\ncommand = "y"',
            "two servers are named 'a'",
        ),
        ('[[tools.mcp]]\nname = "a"\ncommand = "x"\nallow = ["no spaces"]', "not a tool name"),
        ('[[tools.mcp]]\nname = "a"\ncommand = "x"\ncolour = 1', "colour"),
    ],
)
def test_mistakes_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    message = str(raised.value)
    assert expected in message and "\n" not in message, message


def test_secret_header_value_never_printed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, '[[tools.mcp]]\nname = "a"\nurl = "http://h/mcp"\nheaders = {A = "sk live"}')
    assert "secrets do not belong" in str(raised.value)
    assert "sk live" not in str(raised.value)


def test_check_config_lists_each_server_with_its_tools(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[tools]
enabled = true
[[tools.mcp]]
name = "test"
command = {json_string(sys.executable)}
args = [{", ".join(map(json_string, fake_mcp_args()))}]
allow = ["echo", "huge"]
[[tools.mcp]]
name = "remote"
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "Bearer ${{NOT_SET_ANYWHERE}}" }}
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--config", str(path)],
        capture_output=True, text=True, cwd=root, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "#   MCP test (stdio): up; tools: echo, huge" in lines
    assert (
        "#   MCP remote (http): down: [[tools.mcp]] remote: environment variable NOT_SET_ANYWHERE "
        "is not set (named in headers.Authorization); tools: none"
    ) in lines
    assert "#   read_page: built-in, through the article reader ([articles])" in lines


def json_string(text: str) -> str:
    import json

    return json.dumps(text)


def test_tool_limits_apply_live_servers_at_restart() -> None:
    from bot.config.reload import is_live

    assert is_live(("tools", "max_steps")) and is_live(("tools", "in_dms"))
    assert not is_live(("tools", "enabled")) and not is_live(("tools", "mcp"))


def test_check_config_masks_mcp_env_and_url_secrets_and_still_loads(tmp_path: Path) -> None:
    import subprocess
    import sys
    import tomllib

    root = Path(__file__).resolve().parents[3]
    path = tmp_path / "config.toml"
    path.write_text(
        """
[[tools.mcp]]
name = "local"
command = "/bin/false"
env = { API_KEY = "sk-live-123", FROM_ENV = "${SEARCH_KEY}" }
[[tools.mcp]]
name = "remote"
url = "https://bob:hunter2@search.example.com/mcp?key=abc123&ref=${REF_KEY}"
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--config", str(path)],
        capture_output=True, text=True, cwd=root, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for secret in ("sk-live-123", "hunter2", "abc123", "bob"):
        assert secret not in done.stdout
    printed = tomllib.loads(done.stdout)
    local, remote = printed["tools"]["mcp"]
    assert local["env"] == {"API_KEY": "**********", "FROM_ENV": "${SEARCH_KEY}"}
    assert remote["url"] == (
        "https://**********:**********@search.example.com/mcp?key=**********&ref=${REF_KEY}"
    )
    again = tmp_path / "printed.toml"
    again.write_text(done.stdout)
    assert load_config(again, env={}).tools.mcp[1].url == remote["url"]


def test_env_and_url_take_variables_from_the_environment(tmp_path: Path) -> None:
    local, remote = load(
        tmp_path,
        """
[[tools.mcp]]
name = "local"
command = "run"
env = { KEY = "${SEARCH_KEY}", MODE = "fast" }
[[tools.mcp]]
name = "remote"
url = "https://search.example.com/mcp?key=${SEARCH_KEY}"
""",
    ).tools.mcp
    env = {"SEARCH_KEY": "s3cret"}
    assert local.env_values(env) == {"KEY": "s3cret", "MODE": "fast"}
    assert remote.url_value(env) == "https://search.example.com/mcp?key=s3cret"
    with pytest.raises(ValueError, match=r"SEARCH_KEY is not set \(named in env\.KEY\)"):
        local.env_values({})


async def test_check_config_reports_a_server_failing_at_once_at_once(tmp_path: Path) -> None:
    """A missing program and a refused port: "down: <why>" at once, not after the wait for a
    slow server: with an hour's wait, the check still ends within the minute (in-process, so
    that no interpreter start-up counts, and no timing on a busy machine flakes)."""
    import asyncio
    import socket

    from bot.cli.tools_report import tool_report

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the probe is closed
    for name, where in (
        ("gone", 'command = "/nonexistent/mcp-server"'),
        ("refused", f'url = "http://127.0.0.1:{port}/mcp"'),
    ):
        settings = load(
            tmp_path, f'[tools]\nenabled = true\n[[tools.mcp]]\nname = "{name}"\n{where}\n'
        ).tools
        async with asyncio.timeout(60):
            report = await asyncio.to_thread(tool_report, settings, wait=3600)
        [line] = [line for line in report.lines if line.startswith("#   MCP ")]
        why = "FileNotFoundError" if name == "gone" else "ConnectError"
        assert line.startswith(f"#   MCP {name} ") and f": down: {why}" in line, line
        assert report.down == [name]


@pytest.mark.parametrize(
    ("written", "where"),
    [
        ('headers = { Authorization = "Bearer ${SEARCH_KEY}" }', "headers.Authorization"),
        ('headers = { X-Api-Key = "SEARCH_KEY" }', "headers.X-Api-Key"),
        ("", "url"),
    ],
)
def test_a_secret_with_a_line_break_is_refused_at_load_by_its_key(
    tmp_path: Path, written: str, where: str
) -> None:
    """A .env with Windows line endings leaves a CR at the end of each value: the HTTP
    client's error (and the warning quoting it) would print the secret."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[[tools.mcp]]\nname = "search"\n'
        f'url = "https://search.example.com/mcp?key=${{URL_KEY}}"\n{written}\n'
    )
    env = {"SEARCH_KEY": "sk-live-1234", "URL_KEY": "uk-5678"}
    bad = "URL_KEY" if where == "url" else "SEARCH_KEY"
    env[bad] += "\r"
    with pytest.raises(ConfigError) as raised:
        load_config(path, env=env)
    message = str(raised.value)
    assert f"[[tools.mcp]] search: {where}" in message and "line break" in message
    assert "sk-live" not in message and "uk-5678" not in message and "\n" not in message
    server = load_config(path, env={}).tools.mcp[0]  # not set at load: refused when connecting
    with pytest.raises(ValueError, match=rf"{where}.*line break"):
        server.header_values(env)
        server.url_value(env)


def test_a_url_refused_for_its_scheme_is_not_quoted_when_it_holds_a_secret(
    tmp_path: Path,
) -> None:
    for url in ("htp://bot:pw-S3CRET@h/mcp", "ftp://h/mcp?key=pw-S3CRET"):
        with pytest.raises(ConfigError) as raised:
            load(tmp_path, f'[[tools.mcp]]\nname = "a"\nurl = "{url}"')
        assert "must start with http://" in str(raised.value)
        assert "pw-S3CRET" not in str(raised.value)


def test_url_credentials_and_an_authorization_header_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load(
            tmp_path,
            '[[tools.mcp]]\nname = "a"\nurl = "https://bot:${PW}@h/mcp"\n'
            'headers = { authorization = "Bearer ${KEY}" }',
        )
    message = str(raised.value)
    assert "user:password" in message and "Authorization" in message and "\n" not in message


THINKING = 'extra_body = { thinking = { type = "enabled", budget_tokens = 2048 } }\n'


@pytest.mark.parametrize(
    ("tables", "refused"),
    [
        (THINKING + "[tools]\nenabled = true\n", "[model] extra_body.thinking"),
        (
            "[tools]\nenabled = true\n[[channels]]\nmatch = { channel_ids = [5] }\n"
            "[channels.model]\n" + THINKING,
            "[[channels]] 1 [model] extra_body.thinking",
        ),
        (THINKING + "[tools]\nenabled = false\n", None),
    ],
)
def test_extended_thinking_with_tools_is_refused_in_one_line(
    tmp_path: Path, tables: str, refused: str | None
) -> None:
    """Anthropic wants the signed thinking blocks back in every tool round; the bot does not
    keep them, so every answer that used a tool would fail: refused at load instead."""
    text = '[model]\nprovider = "anthropic"\nname = "claude"\n' + tables
    if refused is None:
        assert load(tmp_path, text).model.extra_body["thinking"]["type"] == "enabled"
        return
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    message = str(raised.value)
    assert refused in message and "tools" in message and "\n" not in message, message
