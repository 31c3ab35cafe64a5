"""Config mistakes a new operator makes, each refused in one line that says the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.schema import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_a_partial_shard_set_on_sqlite_is_refused_naming_the_url(tmp_path, capsys):
    path = write(tmp_path, "[discord]\nshard_count = 2\nshard_ids = [0]\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    (line,) = raised.value.lines
    assert line.startswith(f"{path}: [storage] url: ")
    assert "shard_ids = [0] of shard_count = 2" in line and "PostgreSQL" in line
    assert main(["check-config", "--config", str(path)]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(
    "text",
    [
        "[discord]\nshard_count = 2\nshard_ids = [0, 1]\n",  # every shard in this process
        "[discord]\nshard_count = 2\n",  # the same: no shard_ids is all of them
        '[discord]\nshard_count = 2\nshard_ids = [1]\n[storage]\nurl = "postgresql://b@db/t"\n',
    ],
)
def test_shard_settings_that_keep_one_store_are_accepted(tmp_path, text):
    load_config(write(tmp_path, text), env={})


# follow_off_channels is a key of conversation's FollowSettings, which [triggers] composes.
@pytest.mark.parametrize("key", ["always_on_channels", "follow_off_channels"])
def test_an_id_written_in_quotes_says_to_drop_them(tmp_path, key):
    path = write(tmp_path, f'[triggers]\n{key} = ["123"]\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    (line,) = raised.value.lines
    assert f"[triggers] {key}" in line and "(write ids without quotes)" in line


def test_a_word_for_a_number_gets_no_quotes_hint(tmp_path):
    path = write(tmp_path, '[context]\nmax_total = "many"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    assert "without quotes" not in str(raised.value)
