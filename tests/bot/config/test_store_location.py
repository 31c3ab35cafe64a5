"""Where the store is, as the operator is shown it: a PostgreSQL URL never with its password
(even one holding an unencoded @), never a SQLite file the bot does not use, and a check-config
printout that loads again as a config."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.schema import ConfigError, ConfigSource, load_config
from bot.serve.startup import log_configuration
from bot.storage import Store, StoreError
from bot.storage.postgres import redact_url

PASSWORD_PIECES = ("p@ss", "ss:w", "w/rd", "rd@")
RAW_AT_URL = "postgresql://threadwise:p@ss:w/rd@127.0.0.1:5999/threadwise"
ENCODED_URL = "postgresql://threadwise:p%40ss%3Aw%2Frd@127.0.0.1:5999/threadwise"


def test_a_password_with_an_at_sign_is_hidden_whole():
    shown = redact_url(RAW_AT_URL)
    assert not any(piece in shown for piece in PASSWORD_PIECES), shown
    assert shown.endswith("@127.0.0.1:5999/threadwise")
    assert redact_url(ENCODED_URL) == "postgresql://threadwise:***@127.0.0.1:5999/threadwise"


def test_the_config_refuses_an_unencoded_at_in_one_line_without_the_password(tmp_path, capsys):
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\nurl = "{RAW_AT_URL}"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    (line,) = raised.value.lines
    assert "[storage] url" in line and "%40 %3A %2F" in line
    assert main(["check-config", "--config", str(path)]) == 2
    printed = capsys.readouterr()
    assert not any(piece in printed.err + printed.out for piece in PASSWORD_PIECES)


def test_the_store_refuses_such_a_url_before_connecting():
    with pytest.raises(StoreError) as raised:
        Store.open_url(RAW_AT_URL).close()
    assert not any(piece in str(raised.value) for piece in PASSWORD_PIECES)
    assert "%40" in str(raised.value)


def _postgres_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\nurl = "{ENCODED_URL}?sslmode=disable"\nretention_days = 7\n')
    return path


def test_check_config_with_a_url_names_it_and_loads_again(tmp_path, capsys):
    assert main(["check-config", "--config", str(_postgres_config(tmp_path))]) == 0
    printed = capsys.readouterr().out
    assert "sqlite3" not in printed and "\npath =" not in printed
    assert "in postgresql://threadwise:***@127.0.0.1:5999/threadwise?…," in printed
    assert "p%40ss" not in printed
    again = tmp_path / "printed.toml"
    again.write_text(printed)
    reloaded = load_config(again)
    assert reloaded.storage.url_text == (
        "postgresql://threadwise:**********@127.0.0.1:5999/threadwise?sslmode=disable"
    )
    assert reloaded.storage.retention_days == 7


def test_the_start_up_log_names_the_server_not_a_file(tmp_path, caplog):
    path = _postgres_config(tmp_path)
    with caplog.at_level(logging.INFO, logger="bot.serve.startup"):
        log_configuration(load_config(path), ConfigSource(path, explicit=True))
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("store:")]
    assert line.startswith("store: postgresql://threadwise:***@127.0.0.1:5999/threadwise?…")
    assert "sqlite3" not in line and "p%40ss" not in line
