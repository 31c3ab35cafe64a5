"""``[[channels]]`` and ``[models.NAME]`` in config.toml: what they put in effect where, and one
clear line for each mistake (from the loader, as ``check-config`` and a reload say it)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bot.config.channels import ChannelSettings, Place
from bot.config.schema import ConfigError, load_config
from tests.fakes.harness import run_cli_here

MODELS = """
[model]
name = "small"
system_prompt = "You are the default."
[models.big]
base_url = "http://127.0.0.1:9/v1"
name = "big-model"
context_tokens = 32768
api_key_env = "BIG_KEY"
[models.claude]
provider = "anthropic"
name = "claude-x"
"""
TABLES = """
[[channels]]
match = { channel_ids = [11] }
model = "big"
[channels.context]
max_total = 12

[[channels]]
match = { category_ids = [22], guild_ids = [33] }
[channels.model]
system_prompt = "You are relaxed in #{channel}."
temperature = 0.3
[channels.triggers]
burst_window_seconds = 4.0
"""
ENV = {"BIG_KEY": "sk-big-secret"}


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path, env=ENV if env is None else env)


def test_the_most_specific_table_wins_and_threads_follow_their_parent(tmp_path):
    table = ChannelSettings(load(tmp_path, MODELS + TABLES))
    support = table.settings_at(Place(11, 22, 33))  # its own table beats its category's
    assert support.model.name == "big-model" and support.model.base_url == "http://127.0.0.1:9/v1"
    assert support.model.api_key.get_secret_value() == "sk-big-secret"
    assert support.model.context_tokens == 32768 and support.context.max_total == 12
    assert support.model.system_prompt == "You are the default."  # not set by its table
    assert support.triggers.burst_window_seconds == 1.5  # the top level's
    casual = table.settings_at(Place(44, 22, 33))  # the category's table
    assert casual.model.name == "small" and casual.model.temperature == 0.3
    assert casual.triggers.burst_window_seconds == 4.0 and casual.context.max_total == 50
    assert table.settings_at(Place(55, None, 33)) is casual  # the server, by the same table
    elsewhere = table.settings_at(Place(66, None, 77))
    assert elsewhere is table.top and elsewhere.model.temperature is None


def test_a_named_model_keeps_the_other_endpoints_secrets(tmp_path):
    config = load(
        tmp_path,
        MODELS.replace(
            'name = "small"',
            'name = "small"\napi_key = "sk-small"\nextra_headers = { X-Key = "h" }',
        )
        + '[[channels]]\nmatch = { channel_ids = [1] }\nmodel = "claude"\n',
        env={"BIG_KEY": "b"},
    )
    claude = ChannelSettings(config).settings_at(Place(1, None, None)).model
    assert claude.provider == "anthropic" and claude.base_url == "https://api.anthropic.com"
    assert claude.api_key is None  # [model]'s key is never sent to another endpoint
    assert claude.extra_headers == {} and config.model.extra_headers["X-Key"].get_secret_value()
    assert config.model.api_key.get_secret_value() == "sk-small"


def test_model_use_at_the_top_level_picks_the_endpoint_for_every_channel(tmp_path):
    config = load(tmp_path, MODELS.replace('name = "small"', 'name = "small"\nuse = "big"'))
    top = ChannelSettings(config).top
    assert top.model.name == "big-model" and top.model.use == "big"


@pytest.mark.parametrize(
    "tables, expected",
    [
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n[channels.context]\nmax_totl = 3\n",
            "config.toml: [[channels]] 1 [context] max_totl: unknown key",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n[channels.storage]\npath = 'x'\n",
            "config.toml: [[channels]] 1 storage: unknown key (a channel sets match, model, "
            "context, triggers, tools, status, threads, catchup)",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\nmodel = 'huge'\n",
            "config.toml: [[channels]] 1 [model] use: no [models.huge] table (the named models: "
            "big, claude)",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n[channels.model]\n"
            "base_url = 'http://x/v1'\n",
            "config.toml: [[channels]] 1 [model] base_url: set per endpoint",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n[channels.model]\ntemperature = 9\n",
            "config.toml: [[channels]] 1 [model] temperature: at most 2, got 9",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n[channels.context]\nmin_linear = 60\n",
            "config.toml: [[channels]] 1 [context] min_linear: must not exceed max_total",
        ),
        (
            "[[channels]]\nmatch = { }\n",
            "config.toml: [[channels]] 1 match: needs channel_ids, category_ids or guild_ids",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = ['1'] }\n",
            "(write ids without quotes)",
        ),
        (
            "[[channels]]\nmatch = { channel_ids = [1] }\n"
            "[[channels]]\nmatch = { channel_ids = [1] }\n",
            "config.toml: [[channels]] 2 match channel_ids: 1 is already matched by [[channels]] 1",
        ),
        (
            "[channels]\nmatch = { channel_ids = [1] }\n",
            "config.toml: [channels]: write each channel table as [[channels]] (two brackets)",
        ),
        (
            "[[channels]]\nmatch = { guild_ids = [1] }\n[channels.triggers]\n"
            "max_concurrent_answers = 2\n",
            "config.toml: [[channels]] 1 [triggers] max_concurrent_answers: set only at the top "
            "level, [triggers] (a limit across all channels)",
        ),
        (
            "[[channels]]\nmatch = { guild_ids = [1] }\n[channels.tools]\nenabled = true\n",
            "config.toml: [[channels]] 1 [tools] enabled: needs [tools] enabled = true at the top",
        ),
        (
            "[[channels]]\nmatch = { guild_ids = [1] }\n[channels.tools]\nmcp = []\n",
            "config.toml: [[channels]] 1 [tools] mcp: set only at the top level, [tools]",
        ),
        ("[models.big.extra]\nx = 1\n", "config.toml: [models.big] extra: unknown key"),
        ("[metrics]\nport = 70000\n", "config.toml: [metrics] port: at most 65535, got 70000"),
    ],
)
def test_each_mistake_is_one_line_naming_the_table_and_key(tmp_path, tables, expected):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, MODELS + tables)
    assert len(raised.value.lines) == 1, raised.value.lines
    line = raised.value.lines[0]
    assert expected in line and line.startswith(str(tmp_path)), line


def test_a_channel_naming_its_model_and_giving_it_a_table_is_told_to_write_use(tmp_path):
    """TOML forbids ``model = "big"`` and then ``[channels.model]`` in one table; tomllib says
    only "Cannot overwrite a value", so the line says what to write instead."""
    path = tmp_path / "config.toml"
    path.write_text(
        MODELS + '[[channels]]\nmatch = { channel_ids = [1] }\nmodel = "big"  # the endpoint\n'
        "[channels.model]\ntemperature = 0.2\n"
    )
    done = run_cli_here("check-config", "--config", str(path), env={"BIG_KEY": "k", "PATH": "/bin"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {path}: not valid TOML: Cannot overwrite a value (at line 16, column 16); "
        'a [[channels]] table sets model both as a name (model = "big") and as a table; '
        'write use = "big" inside [channels.model] instead'
    ]
    fixed = path.read_text().replace('model = "big"', "").replace("0.2", '0.2\nuse = "big"')
    path.write_text(fixed)
    assert run_cli_here("check-config", "--config", str(path), env={"BIG_KEY": "k"}).returncode == 0


CHANNEL_HINT = 'write use = "big" inside [channels.model] instead'
GENERIC_HINT = "x is given both as a value and as a table (context.x); give it one of the two"


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('[[channels]]\nmodel = "big"\nmodel.temperature = 0.2\n', CHANNEL_HINT),
        ('[[channels]]\nmodel.temperature = 0.2\nmodel = "big"\n', CHANNEL_HINT),
        (
            '[[channels]]\nmodel = "big"\n[[channels]]\nmodel = "big"\n[channels.model]\n',
            CHANNEL_HINT,
        ),
        ("[context]\nx = 1\n[context.x]\ny = 2\n", GENERIC_HINT),
        ("[context]\nx = 1\nx = 2\n", None),  # a key twice: tomllib's own line says it
        ("[context]\nx = 1\n[context]\n", None),  # a table twice: the same
        ("[context\n", None),
    ],
)
def test_a_value_and_a_table_for_one_key_get_the_hint_in_any_order(tmp_path, text, hint):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    message = str(raised.value)
    assert "not valid TOML" in message
    if hint is None:
        assert "; " not in message.split("not valid TOML: ", 1)[1]
    else:
        assert message.endswith(hint)


def test_a_key_variable_that_is_not_set_is_named(tmp_path):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, MODELS, env={})
    assert raised.value.lines == (
        f"{tmp_path / 'config.toml'}: [models.big] api_key_env: the environment variable BIG_KEY "
        "is not set",
    )


def test_check_config_prints_each_tables_effective_settings_and_loads_back(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(MODELS + TABLES)
    import os

    result = run_cli_here("check-config", "--config", str(path), env={**os.environ, **ENV})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "sk-big-secret" not in out
    first = out[out.index("# [[channels]] 1:") :]
    assert first.startswith("# [[channels]] 1: in effect where it matches (channel_ids = [11]):")
    assert '#   [model] name = "big-model"' in first
    assert "#   [context] max_total = 12" in first
    second = out[out.index("# [[channels]] 2:") :]
    assert "(category_ids = [22], guild_ids = [33])" in second.splitlines()[0]
    assert "#   [triggers] burst_window_seconds = 4.0" in second
    # The printout is a config again, with the same tables in effect.
    printed = tomllib.loads(out)
    assert [table["match"]["channel_ids"] for table in printed["channels"]] == [[11], []]
    reprinted = tmp_path / "printed.toml"
    reprinted.write_text(out.replace('"**********"', '"sk-big-secret"'))
    again = ChannelSettings(load_config(reprinted, env=ENV))
    original = ChannelSettings(load(tmp_path, MODELS + TABLES))
    for place in (Place(11, None, None), Place(1, 22, None), Place(1, None, 33)):
        skip = {"storage", "channels"}  # the path is anchored; the tables' spelling differs
        assert again.settings_at(place).model_dump(exclude=skip) == original.settings_at(
            place
        ).model_dump(exclude=skip)


def test_replay_answers_as_the_bot_would_in_the_logs_channel(tmp_path):
    """The bundled log is #ops-help (1300000000000000001) of Acme Ops (1300000000000000000)."""
    path = tmp_path / "config.toml"
    log = "examples/support-channel.json"
    path.write_text(
        "[[channels]]\nmatch = { channel_ids = [1300000000000000001] }\n"
        '[channels.model]\nsystem_prompt = "You are the ops persona of {server}."\n'
        "[channels.context]\nmin_linear = 2\n"
        "[[channels]]\nmatch = { guild_ids = [1300000000000000000] }\n"
        '[channels.model]\nsystem_prompt = "You are the server persona."\n'
    )
    result = run_cli_here("replay", "--no-model", "--config", str(path), log)
    assert result.returncode == 0, result.stderr
    assert "You are the ops persona of Acme Ops." in result.stdout
    assert "(6 of 21 earlier messages selected" in result.stdout  # min_linear = 2 there
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    default = run_cli_here("replay", "--no-model", "--config", str(empty), log)
    assert default.returncode == 0, default.stderr
    assert "You are the ops persona" not in default.stdout
    assert "(5 of 21 earlier messages selected" in default.stdout  # min_linear = 1


def test_contexts_selects_as_the_bot_would_in_the_logs_channel(tmp_path, capsys):
    """The same table as replay's above: contexts (and its prompts) follow it too."""
    from bot.cli.main import main
    from tests.fakes.harness import EXAMPLE

    path = tmp_path / "config.toml"
    path.write_text(
        "[[channels]]\nmatch = { channel_ids = [1300000000000000001] }\n"
        '[channels.model]\nsystem_prompt = "You are the ops persona of {server}."\n'
        "[channels.context]\nmin_linear = 2\n"
    )
    empty = tmp_path / "empty.toml"
    empty.write_text("")

    def last_line(config: Path) -> dict:
        assert main(["contexts", str(EXAMPLE), "--prompts", "--config", str(config)]) == 0
        return json.loads(capsys.readouterr().out.splitlines()[-1])

    channel, default = last_line(path), last_line(empty)
    assert len(channel["context"]) == 6 and len(default["context"]) == 5  # as replay says
    assert channel["prompt"][0]["content"].startswith("You are the ops persona of Acme Ops.")
    assert "ops persona" not in default["prompt"][0]["content"]


def test_a_changed_endpoint_waits_for_a_restart_and_a_channel_edit_applies(
    tmp_path, caplog, monkeypatch
):
    import logging

    from bot.config.reload import ConfigWatcher

    monkeypatch.setenv("BIG_KEY", ENV["BIG_KEY"])  # the watcher reads the real environment
    path = tmp_path / "config.toml"
    path.write_text(MODELS + TABLES)
    running = load_config(path, env=ENV)
    applied = []
    watcher = ConfigWatcher(path, running, lambda old, new: applied.append(new))
    path.write_text(MODELS.replace('"big-model"', '"bigger-model"') + TABLES)
    with caplog.at_level(logging.INFO, logger="bot.config.reload"):
        assert not watcher.check()  # nothing live changed
        assert "[models.big] changed: takes effect after a restart" in caplog.text
        path.write_text(
            MODELS.replace('"big-model"', '"bigger-model"')
            + TABLES.replace("max_total = 12", "max_total = 14")
        )
        assert watcher.check()
    assert "reloaded: [[channels]] changed (2 table(s))" in caplog.text
    (new,) = applied
    effective = ChannelSettings(new).settings_at(Place(11, None, None))
    assert effective.context.max_total == 14
    assert effective.model.name == "big-model"  # the endpoint as it was opened, until a restart


def test_check_config_says_where_model_use_sends_answers_and_budgets_for_it(tmp_path):
    import os

    path = tmp_path / "config.toml"
    path.write_text(MODELS.replace('name = "small"', 'name = "small"\nuse = "big"'))
    result = run_cli_here("check-config", "--config", str(path), env={**os.environ, **ENV})
    assert result.returncode == 0, result.stderr
    assert '# use = "big": answers go to [models.big], big-model at http://127.0.0.1:9/v1' in (
        result.stdout
    )
    assert "prompts are cut to 31744 tokens = [model] context_tokens 32768" in result.stdout
