"""Config errors are one clear line naming the file and the key; secrets never print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.schema import ConfigError, load_config, require_token
from tests.fakes.harness import run_cli_here

ROOT = Path(__file__).resolve().parents[3]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m bot ...`` as an operator runs it, from a shell."""
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_repository_config_is_the_defaults():
    """config.toml documents every default: loading it equals loading nothing at all."""
    from_file = load_config(ROOT / "config.toml", env={})
    from bot.config.schema import Config

    built_in = Config()
    assert from_file.model_dump(exclude={"storage"}) == built_in.model_dump(exclude={"storage"})
    assert from_file.storage.path == ROOT / "data" / "threadwise.sqlite3"


def test_every_setting_is_written_in_config_toml():
    import tomllib

    from bot.config.channels import ChannelMatch
    from bot.config.named_models import NamedModel
    from bot.config.schema import Config

    written = tomllib.loads((ROOT / "config.toml").read_text())
    text = (ROOT / "config.toml").read_text()
    tables = {"models": "[models.big]", "channels": "[[channels]]"}  # commented examples
    for section, model in Config.model_fields.items():
        if section in tables:
            assert f"# {tables[section]}\n" in text, f"{tables[section]} missing from config.toml"
            continue
        assert section in written, f"[{section}] missing from config.toml"
        for key in model.annotation.model_fields:
            assert f"{key} =" in text, f"[{section}] {key} is not documented in config.toml"
    for key in NamedModel.model_fields:
        assert f"# {key} =" in text, f"[models.NAME] {key} is not documented in config.toml"
    for key in ChannelMatch.model_fields:
        assert key in text, f"[[channels]] match {key} is not documented in config.toml"


def test_the_follow_keys_stay_triggers_keys_in_config_toml_order():
    """[triggers] composes conversation's follow section: its keys stay flat [triggers] keys,
    check-config prints them where config.toml writes them, and the Follower takes the section
    as it is."""
    import tomllib

    from bot.config.schema import Config, TriggerSettings
    from conversation.common.settings import FollowSettings

    written = list(tomllib.loads((ROOT / "config.toml").read_text())["triggers"])
    printed = list(Config().masked()["triggers"])
    assert [key for key in printed if key in written] == written
    assert printed[-len(FollowSettings.model_fields) :] == list(FollowSettings.model_fields)
    assert isinstance(TriggerSettings(), FollowSettings)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[context]\nmin_lineer = 4\n", "[context] min_lineer: unknown key"),
        ("[contxt]\nmin_linear = 4\n", "[contxt]: unknown section"),
        ('[context]\nmax_total = "many"\n', "[context] max_total: Input should be a valid integer"),
        ("[context]\ntime_threshold_minutes = -5\n", "[context] time_threshold_minutes:"),
        ("[context]\nmin_linear = -1\n", "[context] min_linear: at least 0, got -1"),
        (
            "[triggers]\nfollow_threshold = 2\n",
            "[triggers] follow_threshold: at most 1, got 2",
        ),
        ("[triggers]\nfollow_minutes = 0\n", "[triggers] follow_minutes: more than 0, got 0"),
        (
            "[context]\nmin_linear = 60\n",
            "[context] min_linear: must not exceed max_total "
            "(min_linear = 60 > max_total = 50 (the default))",
        ),
        ("[context]\nrelevance_threshold = 1.5\n", "[context] relevance_threshold:"),
        ("[context]\ncandidate_window = 0\n", "[context] candidate_window:"),
        (
            "[context]\nmin_linear = 5\nmax_total = 3\n",
            "[context] min_linear: must not exceed max_total (min_linear = 5 > max_total = 3)",
        ),
        ("[context]\nmin_linear = true\n", "[context] min_linear: Input should be a valid integer"),
        ('[model]\nstream = "no"\n', "[model] stream: Input should be a valid boolean (got 'no')"),
        ("[model]\nstream = 0\n", "[model] stream: Input should be a valid boolean (got 0)"),
        (
            '[model]\nsystem_prompt = "I am {bot_nam} in {channel}"\n',
            "[model] system_prompt: unknown placeholder {bot_nam}; the allowed ones are "
            "{bot_name}, {server}, {channel}, {now}",
        ),
        (
            'token = "abc"\n',
            "token: key outside any section: every setting goes under a [section]; "
            "did you mean [discord] token?",
        ),
        ('[logging]\nlevel = "verbose"\n', "[logging] level:"),
        ('[model]\nbase_url = "localhost:1234"\n', "[model] base_url:"),
        ("[model]\ncontext_tokens = 100\n", "[model] context_tokens: at least 256, got 100"),
        (
            "[model]\nreserve_tokens = 9000\n",
            "[model] reserve_tokens: 9000 leaves no room for the prompt in context_tokens=8192",
        ),
        (
            "[model]\ncontext_tokens = 4096\nmax_tokens = 4096\n",
            "[model] max_tokens: 4096 leaves no room",
        ),
        ('[discord]\napi_base = "ftp://x"\n', "[discord] api_base:"),
        ("[context\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    message = str(error.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_check_config_explains_the_token_budget(tmp_path, capsys):
    path = write(tmp_path, "[model]\ncontext_tokens = 4096\nmax_tokens = 512\n")
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "context_tokens = 4096" in out and "reserve_tokens = 1024" in out
    assert "prompts are cut to 3584 tokens" in out and "[model] max_tokens" in out


def test_explicit_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml", env={})


def test_environment_wins_over_the_file(tmp_path):
    path = write(tmp_path, '[discord]\ntoken = "file-token"\n[model]\napi_key = "file-key"\n')
    config = load_config(path, env={"DISCORD_TOKEN": "env-token", "MODEL_API_KEY": "env-key"})
    assert require_token(config, path) == "env-token"
    assert config.model.api_key.get_secret_value() == "env-key"


def test_missing_token_when_running_is_one_line(tmp_path, capsys):
    path = write(tmp_path, "[context]\nmin_linear = 5\n")
    with pytest.raises(ConfigError, match=r"\[discord\] token: missing; set the DISCORD_TOKEN"):
        require_token(load_config(path, env={}), path)


def test_check_config_masks_secrets(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.delenv("MODEL_API_KEY", raising=False)
    path = write(tmp_path, '[discord]\ntoken = "sekrit-token-123"\n[model]\napi_key = "sk-999"\n')
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sekrit-token-123" not in out and "sk-999" not in out
    assert 'token = "**********"' in out
    assert "min_linear = 1" in out


def test_broken_config_exits_non_zero_without_traceback(tmp_path):
    path = write(tmp_path, "[context]\nmin_linear = 60\n")
    result = run_cli_here("check-config", "--config", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"error: {path}: [context] min_linear: must not exceed max_total "
        "(min_linear = 60 > max_total = 50 (the default))"
    )


def test_run_without_token_exits_with_one_line(tmp_path):
    path = write(tmp_path, "")
    env = {k: v for k, v in __import__("os").environ.items() if k != "DISCORD_TOKEN"}
    result = run_cli("run", "--config", str(path), env=env)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "[discord] token: missing" in result.stderr


def test_config_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes('[model]\nname = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"not UTF-8 text"):
        load_config(path, env={})


def test_a_mistyped_secret_is_not_echoed(tmp_path):
    path = write(tmp_path, "[discord]\ntoken = 12345678\n")
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    assert "[discord] token:" in str(error.value) and "12345678" not in str(error.value)


@pytest.mark.parametrize("bad", ["²", "99999999999999999999999", "-5", "12a", "9" * 5000])
def test_bad_ids_on_the_command_line_are_one_line(tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", bad, "--config", str(write(tmp_path, ""))])
    assert exit_.value.code == 2
    assert "not a Discord id" in capsys.readouterr().err


def test_unopenable_store_is_one_line(tmp_path):
    path = write(tmp_path, '[storage]\npath = "/proc/nope/store.sqlite3"\n')
    result = run_cli_here("export", "--config", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def test_unreachable_discord_is_one_line(tmp_path):
    path = write(
        tmp_path,
        '[discord]\napi_base = "http://127.0.0.1:9/api/v10"\n'
        f'[storage]\npath = "{tmp_path / "store.sqlite3"}"\n',
    )
    env = {**__import__("os").environ, "DISCORD_TOKEN": "not-a-real-token"}
    result = run_cli("run", "--config", str(path), env=env)
    assert result.returncode == 3
    assert "Traceback" not in result.stderr
    assert "error: cannot reach Discord at http://127.0.0.1:9/api/v10" in result.stderr
    assert "not-a-real-token" not in result.stderr + result.stdout


def test_every_problem_is_shown_one_line_each(tmp_path):
    path = write(
        tmp_path,
        '[context]\nmin_linear = true\nmax_totl = 3\n[model]\nstream = "no"\n[contxt]\n',
    )
    result = run_cli_here("check-config", "--config", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 4, lines
    assert all(line.startswith(f"error: {path}: ") for line in lines)
    joined = "\n".join(lines)
    for where in ("[context] min_linear:", "[context] max_totl:", "[model] stream:", "[contxt]:"):
        assert where in joined


def test_literal_values_that_are_only_spelt_differently_are_accepted(tmp_path):
    path = tmp_path / "config.toml"
    # A byte-order mark (Windows editors) and a lower-case log level.
    path.write_bytes(b"\xef\xbb\xbf" + b'[logging]\nlevel = "debug"\n[model]\ntemperature = 1\n')
    config = load_config(path, env={})
    assert config.logging.level == "DEBUG" and config.model.temperature == 1.0


def test_system_prompt_keeps_other_braces(tmp_path):
    path = write(tmp_path, '[model]\nsystem_prompt = "Answer as JSON like {\\"a\\": 1}, {now}"\n')
    assert '{"a": 1}' in load_config(path, env={}).model.system_prompt


def test_check_config_prints_valid_toml_and_what_the_bot_reads_and_keeps(tmp_path):
    import tomllib

    path = write(
        tmp_path,
        '[model]\nname = "caf\u00e9 \U0001f600"\n'
        'extra_body = { reasoning = { effort = "low" }, "odd key" = [1, 2.5, "x"] }\n'
        'extra_headers = { "X-Title" = "secret-header" }\n'
        '[storage]\nretention_days = 7\n[discord]\ntoken = "sekrit"\n',
    )
    result = run_cli_here("check-config", "--config", str(path))
    assert result.returncode == 0, result.stderr
    printed = tomllib.loads(result.stdout)
    config = load_config(path, env={})
    expected = config.masked()
    expected["model"] = {k: v for k, v in expected["model"].items() if v is not None}
    expected["discord"] = {k: v for k, v in expected["discord"].items() if v is not None}
    for section, values in expected.items():
        if section in ("models", "channels"):  # none here: no table printed
            assert not values and section not in printed
            continue
        for key, value in values.items():
            if value is None:
                assert key not in printed[section]
            else:
                assert printed[section][key] == value, (section, key)
    assert "sekrit" not in result.stdout and "secret-header" not in result.stdout
    assert printed["model"]["extra_body"] == {
        "reasoning": {"effort": "low"},
        "odd key": [1, 2.5, "x"],
    }
    comments = [line for line in result.stdout.splitlines() if line.startswith("# ")]
    assert any("people who never addressed the bot" in line for line in comments)
    assert any(f"{config.storage.path}, for 7 days" in line for line in comments)


def test_config_named_by_the_environment_is_used_by_every_command(tmp_path):
    """THREADWISE_CONFIG is how the Docker image gives all commands one config file."""
    import os

    store = tmp_path / "elsewhere.sqlite3"
    path = write(tmp_path, f'[storage]\npath = "{store}"\n[model]\nname = "from-env-config"\n')
    env = {**os.environ, "THREADWISE_CONFIG": str(path)}
    checked = run_cli_here("check-config", env=env)
    assert checked.returncode == 0 and 'name = "from-env-config"' in checked.stdout
    exported = run_cli_here("export", env=env)
    assert exported.returncode == 2 and str(store) in exported.stderr
    missing = run_cli_here(
        "check-config", env={**env, "THREADWISE_CONFIG": str(tmp_path / "no.toml")}
    )
    assert missing.returncode == 2 and "config file not found" in missing.stderr


def test_running_on_defaults_is_said_once(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "THREADWISE_CONFIG"}
    result = run_cli_here("export", cwd=tmp_path, env=env)
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1
    assert "built-in defaults" in notes[0] and "data/threadwise.sqlite3" in notes[0]


def test_version():
    result = run_cli_here("--version")
    assert result.returncode == 0 and result.stdout.startswith("threadwise ")


def test_every_key_in_config_toml_has_its_own_comment():
    """A key shares a comment with its neighbours only when that comment names it."""
    import re
    import tomllib

    lines = (ROOT / "config.toml").read_text().splitlines()
    pattern = re.compile(r"^(?:# )?(\w+) = ")

    class KeyLine:
        """A setting, or a commented-out one (``# key = value`` that is valid TOML)."""

        @staticmethod
        def match(line: str) -> re.Match[str] | None:
            found = pattern.match(line)
            if found is None:
                return None
            try:
                tomllib.loads(line.removeprefix("# "))
            except tomllib.TOMLDecodeError:
                return None  # prose about a key, e.g. '# provider = "openai": ...'
            return found

    key_line = KeyLine
    undocumented = []
    index = 0
    while index < len(lines):
        if not key_line.match(lines[index]):
            index += 1
            continue
        block = []
        while index < len(lines) and key_line.match(lines[index]):
            block.append(key_line.match(lines[index]).group(1))
            index += 1
        above = []
        back = index - len(block) - 1
        while back >= 0 and lines[back].startswith("#") and not key_line.match(lines[back]):
            above.append(lines[back])
            back -= 1
        comment = " ".join(above)
        if not comment:
            undocumented.extend(block)
        elif len(block) > 1:
            undocumented.extend(key for key in block if key not in comment)
    assert not undocumented, f"keys without their own comment in config.toml: {undocumented}"


@pytest.mark.parametrize(
    "section",
    sorted(
        set(__import__("bot.config.schema").config.schema.Config.model_fields)
        - {"models", "channels"}
    ),
)
def test_every_section_loads_from_an_empty_table(tmp_path, section):
    """Defaults are validated as strictly as the file: each must be writable in TOML."""
    from bot.config.schema import Config

    config = load_config(write(tmp_path, f"[{section}]\n"), env={})
    assert getattr(config, section).model_dump(exclude={"path"}) == getattr(
        Config(), section
    ).model_dump(exclude={"path"})


def test_a_data_folder_from_the_environment_holds_a_relative_store(tmp_path):
    """The image mounts config.toml read-only in /config and keeps the store on /data."""
    config = load_config(ROOT / "config.toml", env={"THREADWISE_DATA_DIR": str(tmp_path)})
    assert config.storage.path == tmp_path / "data" / "threadwise.sqlite3"
    absolute = write(tmp_path, '[storage]\npath = "/srv/store.sqlite3"\n')
    config = load_config(absolute, env={"THREADWISE_DATA_DIR": str(tmp_path)})
    assert config.storage.path == Path("/srv/store.sqlite3")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[model]\nbase_url = "http://bot:pw-S3CRET@gateway.internal/v1"', "[model] base_url"),
        ('[models.big]\nname = "m"\nbase_url = "https://bot:pw-S3CRET@x/v1"', "[models.big]"),
        ('[model]\nbase_url = "htp://bot:pw-S3CRET@gateway.internal/v1"', "[model] base_url"),
    ],
)
def test_credentials_in_a_model_base_url_are_refused_without_quoting_them(tmp_path, text, key):
    """The HTTP client logs each request's url at INFO, and errors quote it."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    message = str(raised.value)
    assert key in message and "pw-S3CRET" not in message and "\n" not in message, message
