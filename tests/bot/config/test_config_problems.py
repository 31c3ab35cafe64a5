"""A config's problems told once and whole: every problem in one report, hints that fit the key,
key variables asked for only by the commands that call that model, MCP paths read from the
config file's folder, and a printout and start-up log that say when the bot answers."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.schema import ConfigError, ConfigSource, load_config
from bot.serve.startup import log_configuration

FAKE_MCP = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"
LOG = Path(__file__).resolve().parents[2] / "logs" / "follow_up.json"
NAMED = """
[models.big]
base_url = "http://127.0.0.1:9/v1"
name = "big-model"
api_key_env = "THREADWISE_TEST_BIG_KEY"
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "config.toml"
    path.write_text(text)
    return path


def test_a_missing_key_variable_does_not_hide_a_misplaced_key(tmp_path):
    path = write(tmp_path, "follow = false\n" + NAMED)
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    assert raised.value.lines == (
        f"{path}: follow: key outside any section: every setting goes under a [section]; "
        "did you mean [triggers] follow?",
        f"{path}: [models.big] api_key_env: the environment variable THREADWISE_TEST_BIG_KEY "
        "is not set",
    )


def test_an_unknown_key_does_not_hide_a_check_across_tables(tmp_path):
    # The shards' store is checked across sections, which pydantic does only once every key
    # is known: a typo elsewhere used to hide it until the typo was fixed.
    path = write(tmp_path, "[context]\nmax_totl = 5\n[discord]\nshard_count = 2\nshard_ids = [0]\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    lines = raised.value.lines
    assert (
        lines[0]
        == f"{path}: [context] max_totl: unknown key (check its spelling against config.toml)"
    )
    assert len(lines) == 2 and lines[1].startswith(f"{path}: [storage] url: needed when"), lines


def test_a_quoted_port_is_told_to_write_a_number_not_an_id(tmp_path):
    path = write(tmp_path, '[metrics]\nport = "9100"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    (line,) = raised.value.lines
    assert line.startswith(f"{path}: [metrics] port: ")
    assert line.endswith("(write numbers without quotes)"), line


def test_a_quoted_id_in_a_channel_table_still_says_ids(tmp_path):
    path = write(tmp_path, "[[channels]]\nmatch = { channel_ids = ['15'] }\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    assert raised.value.lines[0].endswith("(write ids without quotes)")


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("THREADWISE_TEST_BIG_KEY", raising=False)
    monkeypatch.delenv("MODEL_API_KEY", raising=False)


@pytest.mark.usefixtures("no_key")
def test_commands_that_call_no_model_do_not_ask_for_its_key(tmp_path, capsys):
    path = write(tmp_path, f'[storage]\npath = "{tmp_path / "store.sqlite3"}"\n' + NAMED)
    messages = json.loads(LOG.read_text())["messages"]
    bot_id = messages[0]["author"]["id"]
    assert main(["follow", str(LOG), "--bot-id", bot_id, "--config", str(path)]) == 0
    assert main(["replay", "--no-model", str(LOG), "--config", str(path)]) == 0
    assert main(["explain", "123", "--config", str(path)]) == 2  # no store yet: not the key
    err = capsys.readouterr().err
    assert "THREADWISE_TEST_BIG_KEY" not in err and "error: " in err


@pytest.mark.usefixtures("no_key")
def test_replay_asking_the_model_still_needs_the_key(tmp_path, capsys):
    path = write(tmp_path, NAMED)
    assert main(["replay", str(LOG), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "[models.big] api_key_env: the environment variable THREADWISE_TEST_BIG_KEY" in err


@pytest.mark.usefixtures("no_key")
def test_check_config_warns_of_an_unset_key_variable_and_passes(tmp_path, capsys):
    path = write(tmp_path, NAMED)
    assert main(["check-config", "--config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"warning: {path}: [models.big] api_key_env: the environment variable "
        "THREADWISE_TEST_BIG_KEY is not set (run and replay refuse to start without it)"
    ]
    assert "# api_key: read from the environment variable THREADWISE_TEST_BIG_KEY (NOT SET)" in out


def test_the_printout_shows_no_masked_key_beside_its_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("THREADWISE_TEST_BIG_KEY", "sk-from-the-variable")
    path = write(tmp_path, NAMED)
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    big = out[out.index("[models.big]") :].split("\n\n")[0]
    assert "api_key =" not in big and "sk-from-the-variable" not in out
    assert 'api_key_env = "THREADWISE_TEST_BIG_KEY"' in big
    assert "# api_key: read from the environment variable THREADWISE_TEST_BIG_KEY (set)" in big


def test_mcp_paths_are_read_from_the_config_files_folder(tmp_path):
    folder = tmp_path / "conf"
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "server.py").write_text("")
    path = write(
        folder,
        "[[tools.mcp]]\nname = 'local'\ncommand = './bin/serve'\n"
        "args = ['tools/server.py', '-m', '@scope/package', '../shared', 'plain']\n"
        "[[tools.mcp]]\nname = 'on-path'\ncommand = 'python'\nargs = ['/abs/server.py']\n",
    )
    local, on_path = load_config(path, env={}).tools.mcp
    root = folder.resolve()
    assert local.command == str(root / "bin" / "serve")
    assert local.args == [
        str(root / "tools" / "server.py"),
        "-m",
        "@scope/package",  # no such file beside the config: a package name, as written
        str(root / "../shared"),
        "plain",
    ]
    assert (on_path.command, on_path.args) == ("python", ["/abs/server.py"])


def test_an_mcp_server_beside_the_config_starts_from_any_folder(tmp_path, capsys, monkeypatch):
    shutil.copy(FAKE_MCP, tmp_path / "server.py")
    path = write(
        tmp_path,
        f"[tools]\nenabled = true\n[[tools.mcp]]\nname = 'beside'\n"
        f"command = {json.dumps(sys.executable)}\nargs = ['server.py']\nallow = ['echo']\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["check-config", "--config", str(path)]) == 0
    assert "#   MCP beside (stdio): up; tools: echo" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "",
            "answers: mentions of it, replies to its messages, direct messages ([triggers] "
            "allow_dms) and follow-ups without a mention for 30 minutes after it answers in a "
            "channel ([triggers] follow, follow_minutes)",
        ),
        (
            "[triggers]\nfollow = false\nallow_dms = false\n",
            "answers: mentions of it, replies to its messages and no follow-ups without a "
            "mention ([triggers] follow = false)",
        ),
        (
            "[triggers]\nfollow_minutes = 5\nfollow_off_channels = [7]\n",
            "follow-ups without a mention for 5 minutes after it answers in a channel, except in "
            "1 channel ([triggers] follow, follow_minutes)",
        ),
    ],
)
def test_check_config_and_the_start_up_log_say_when_the_bot_answers(
    tmp_path, capsys, caplog, text, said
):
    path = write(tmp_path, text)
    assert main(["check-config", "--config", str(path)]) == 0
    header = capsys.readouterr().out.split("\n\n")[0]
    assert f"# {said}" in header or said in header, header
    with caplog.at_level(logging.INFO, logger="bot.serve.startup"):
        log_configuration(load_config(path, env={}), ConfigSource(path, explicit=True))
    assert any(said in record.getMessage() for record in caplog.records)
