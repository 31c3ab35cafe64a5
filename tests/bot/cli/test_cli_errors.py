"""Hostile or broken input files end the CLI with one line and exit code 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.harness import EXAMPLE, run_cli_here

TOO_BIG = str(2**70)


def assert_one_line(result, *expected: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in expected:
        assert part in lines[0]


def log_with(tmp_path: Path, change) -> Path:
    export = json.loads(EXAMPLE.read_text())
    change(export)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(export))
    return path


@pytest.mark.parametrize("command", ["replay", "contexts"])
def test_a_message_id_beyond_a_snowflake_is_one_line(tmp_path, command):
    path = log_with(tmp_path, lambda export: export["messages"][-1].update(id=TOO_BIG))
    assert_one_line(run_cli_here(command, str(path)), str(path), TOO_BIG)


def test_a_reference_beyond_a_snowflake_is_one_line(tmp_path):
    path = log_with(
        tmp_path, lambda export: export["messages"][-1].update(reference={"messageId": TOO_BIG})
    )
    assert_one_line(run_cli_here("replay", str(path), "--no-model"), str(path), "Discord id")


def test_json_nested_thousands_deep_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 50_000 + "]" * 50_000)
    assert_one_line(run_cli_here("replay", str(path), "--no-model"), str(path), "nested too deeply")


def test_json_nested_just_below_the_parser_limit_is_one_line(tmp_path):
    # Parsed by json, and possibly too deep for what walks the result afterwards (where the
    # limit bites depends on the interpreter): either way, one line naming the file.
    path = tmp_path / "deep.json"
    path.write_text('{"messages": [], "x": ' + "[" * 990 + "]" * 990 + "}")
    assert_one_line(run_cli_here("contexts", str(path)), str(path))


def test_toml_nested_thousands_deep_is_one_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    result = run_cli_here("replay", str(EXAMPLE), "--no-model", "--config", str(config))
    assert_one_line(result, str(config), "nested too deeply")


def test_a_deep_page_index_is_one_line(tmp_path):
    path = log_with(tmp_path, lambda export: None)
    (tmp_path / "pages").mkdir()
    index = tmp_path / "pages" / "index.json"
    index.write_text("[" * 50_000 + "]" * 50_000)
    assert_one_line(run_cli_here("replay", str(path), "--no-model"), str(index))
