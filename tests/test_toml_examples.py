"""Every TOML example an operator may copy loads: each ```toml block of README.md and docs/, as
written, and each commented example of config.toml once uncommented, goes through the config
loader and check-config's printout without an error.

The environment variables a block names (``api_key_env = "X"``, ``${X}``) are set, as they would
be where the bot runs. The MCP servers of a ``[[tools.mcp]]`` example are not connected to (they
are examples: ``search.internal`` resolves nowhere), so the check stops short of check-config's
live tool lines. A block that is deliberately a fragment is marked in its page by
``<!-- toml: partial (why) -->`` on the line before it, and the skip says why.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bot.config.report import render_config
from bot.config.schema import ConfigError, load_config, locate_config

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- toml: partial \((?P<why>.+?)\) -->\n)?```toml\n(?P<body>.*?)```", re.S)
# What an example needs beside itself, said by its own comment in config.toml: the endpoint
# that ``use = "big"`` names, the shared store a process running some shards must have.
NAMED_MODEL = "# [models.big]"
SHARED_STORE = ('path = "data/threadwise.sqlite3"', 'url = "postgresql://tw:pw@db:5432/threadwise"')
NEEDS = {
    '# use = "big"': NAMED_MODEL,
    '# summary_model = "big"': NAMED_MODEL,
    "# [[channels]]": NAMED_MODEL,
    "# shard_count = 4": SHARED_STORE,
}


def variables(text: str) -> dict[str, str]:
    """The environment an example expects: every variable it names, set."""
    names = re.findall(r'api_key_env\s*=\s*"(\w+)"', text) + re.findall(r"\$\{(\w+)\}", text)
    return dict.fromkeys(names, "set-for-the-example")


def check(tmp_path: Path, text: str) -> None:
    """What check-config does with ``text`` before it asks the MCP servers for their tools."""
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path, env=variables(text))
    render_config(config, locate_config(path))


def page_blocks() -> list[object]:
    params: list[object] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for number, found in enumerate(BLOCK.finditer(text), start=1):
            name = f"{page.relative_to(ROOT)} block {number}"
            marks = [pytest.mark.skip(reason=f"partial: {found['why']}")] if found["why"] else []
            params.append(pytest.param(found["body"], id=name, marks=marks))
    return params


@pytest.mark.parametrize("body", page_blocks())
def test_each_toml_block_of_the_readme_and_docs_loads_as_written(tmp_path, body):
    check(tmp_path, body)


def commented_examples(lines: list[str]) -> list[list[int]]:
    """config.toml's commented examples, as line numbers (0-based): a commented table header
    with the commented settings under it (up to a blank comment or an uncommented line), or a
    run of commented settings. Prose comments are not TOML and stay comments."""

    def setting(line: str) -> bool:
        if not line.startswith("# ") or "=" not in line:
            return False
        try:
            tomllib.loads(line[2:])
        except tomllib.TOMLDecodeError:
            return False
        return True

    def header(line: str) -> bool:
        return re.fullmatch(r"# \[\[?[\w.-]+\]\]?", line) is not None

    examples: list[list[int]] = []
    index = 0
    while index < len(lines):
        if header(lines[index]):
            example = [index]
            index += 1
            while index < len(lines) and lines[index].startswith("# "):
                if lines[index] == lines[example[0]]:
                    break  # the next table of an array is the next example
                if setting(lines[index]) or header(lines[index]):
                    example.append(index)
                index += 1
            examples.append(example)
        elif setting(lines[index]):
            example = []
            while index < len(lines) and setting(lines[index]):
                example.append(index)
                index += 1
            examples.append(example)
        else:
            index += 1
    return examples


CONFIG_LINES = (ROOT / "config.toml").read_text(encoding="utf-8").splitlines()
EXAMPLES = commented_examples(CONFIG_LINES)


def uncommented(example: list[int]) -> str:
    lines = list(CONFIG_LINES)
    need = NEEDS.get(CONFIG_LINES[example[0]])
    if need == NAMED_MODEL:
        example = [*example, *next(e for e in EXAMPLES if CONFIG_LINES[e[0]] == NAMED_MODEL)]
    for number in example:
        lines[number] = lines[number][2:]
    text = "\n".join(lines) + "\n"
    return text.replace(*need) if isinstance(need, tuple) else text


@pytest.mark.parametrize(
    "example",
    EXAMPLES,
    ids=[f"config.toml line {e[0] + 1}: {CONFIG_LINES[e[0]]}" for e in EXAMPLES],
)
def test_each_commented_example_of_config_toml_loads_once_uncommented(tmp_path, example):
    check(tmp_path, uncommented(example))


def test_the_examples_are_found():
    """The collection itself: the pages' blocks, the config's examples, and a clash caught."""
    assert len(page_blocks()) >= 5
    marked = BLOCK.search("<!-- toml: partial (one table of a file) -->\n```toml\nx = 1\n```")
    assert marked is not None and marked["why"] == "one table of a file"
    firsts = {CONFIG_LINES[e[0]] for e in EXAMPLES}
    assert {"# [[channels]]", "# [models.big]", "# [[tools.mcp]]", '# token = ""'} <= firsts
    assert sum(CONFIG_LINES[e[0]] == "# [[tools.mcp]]" for e in EXAMPLES) == 2


def test_an_example_that_does_not_load_fails_the_check(tmp_path):
    with pytest.raises(ConfigError, match="Cannot overwrite a value"):
        check(
            tmp_path, '[[channels]]\nmatch = { guild_ids = [1] }\nmodel = "a"\n[channels.model]\n'
        )
