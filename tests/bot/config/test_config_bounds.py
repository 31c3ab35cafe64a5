"""Every number in the config has a bound a real deployment never passes.

The settings models are walked, not listed: a numeric field added later is covered by the same
test. Each is written as 0, -1, a huge value, ``inf`` and ``nan``; ``check-config`` either
accepts the value or refuses it in exactly one line naming the key (exit 2), never a traceback,
and the huge, infinite and undefined ones are always refused. ``run`` with such a config says
the same line; ``run`` with every number at its highest accepted value starts and stops.
"""

from __future__ import annotations

import asyncio
import math
import signal
import sys
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel

from bot.cli.main import main
from bot.config import Config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from tests.bot.serve.test_run_lifecycle import BOT_ID, EXAMPLE, bot_process, config_file

HUGE_INT = 10**30
HUGE_FLOAT = 1e300


def _number_type(annotation: Any) -> type | None:
    """int or float for a (possibly optional or constrained) number; None for anything else."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = kinds[0] if len(kinds) == 1 else None
    if annotation in (int, float):
        return annotation  # type: ignore[no-any-return]
    return None


def _list_of_numbers(annotation: Any) -> type | None:
    """The number type of a ``tuple[number, ...]`` field (lists of Discord ids, shard ids)."""
    if typing.get_origin(annotation) is not tuple:
        return None
    args = typing.get_args(annotation)
    return _number_type(args[0]) if len(args) == 2 and args[1] is Ellipsis else None


def numeric_fields() -> list[tuple[str, str, type]]:
    """Every number of every section: ``int`` and ``float`` fields, and ``tuple[int, ...]`` ones
    as ``list`` (written as a one-item array)."""
    found = []
    for section, field in Config.model_fields.items():
        if section in TABLES:
            continue  # tables of tables: test_the_numbers_of_named_models_and_channel_tables
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for key, inner in model.model_fields.items():
            kind = _number_type(inner.annotation)
            if kind is not None:
                found.append((section, key, kind))
            elif _list_of_numbers(inner.annotation) is not None:
                found.append((section, key, list))
    return found


TABLES = ("models", "channels")  # [models.NAME] and [[channels]]
FIELDS = numeric_fields()


def test_the_walk_finds_the_numbers_of_every_section() -> None:
    sections = {section for section, _, _ in FIELDS}
    assert {"discord", "model", "context", "articles", "triggers", "replies"} <= sections
    assert {"attachments", "cache", "storage"} <= sections
    assert len(FIELDS) >= 55
    assert ("permissions", "allowed_users", list) in FIELDS


def toml_value(value: int | float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, list[str]]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    code = main(["check-config", "--config", str(path)])
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(("section", "key", "kind"), FIELDS, ids=[f"{s}.{k}" for s, k, _ in FIELDS])
def test_every_number_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, key: str, kind: type
) -> None:
    huge = HUGE_FLOAT if kind is float else HUGE_INT
    for value, must_refuse in [
        (0, False),
        (-1, False),
        (huge, True),
        (math.inf, True),
        (-math.inf, True),
        (math.nan, True),
    ]:
        written = f"[{toml_value(value)}]" if kind is list else toml_value(value)
        code, lines = check(tmp_path, capsys, f"[{section}]\n{key} = {written}\n")
        said = f"{section}.{key} = {value}: exit {code}, {lines}"
        if code == 0:
            assert not must_refuse, said
            assert lines == [], said
            continue
        assert code == 2, said
        assert len(lines) == 1, said
        assert lines[0].startswith("error: ") and f"[{section}] {key}" in lines[0], said
        assert "Traceback" not in lines[0], said


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "[storage]\nretention_days = 1000000\n",
            "[storage] retention_days: at most 36500 (100 years), got 1000000",
        ),
        ("[discord]\nguild_ready_timeout = inf\n", "guild_ready_timeout: a finite number"),
        ("[discord]\nshard_count = 1000000000000\n", "[discord] shard_count: at most 10000 ("),
        ("[model]\ncontext_tokens = 1000000000000000000\n", "[model] context_tokens: at most"),
        ("[model]\nseed = 1180591620717411303424\n", "[model] seed: at most 9223372036854775807"),
        ("[articles]\ncache_ttl_seconds = 1e308\n", "cache_ttl_seconds: at most 2592000 (30 days)"),
        ("[articles]\nextract_max_workers = 3000\n", "[articles] extract_max_workers: at most 32,"),
        ("[cache]\nmax_channels = 1000000000000000\n", "[cache] max_channels: at most 1000000,"),
        ("[replies]\nedit_interval_seconds = 0.1\n", "interval_seconds: at least 0.2, got 0.1"),
    ],
)
def test_a_bound_is_stated_with_what_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str
) -> None:
    code, lines = check(tmp_path, capsys, text)
    assert code == 2
    assert len(lines) == 1 and line in lines[0], lines


async def test_run_with_an_absurd_number_says_one_line(tmp_path: Path) -> None:
    for text in ("[storage]\nretention_days = 1000000\n", "[discord]\nshard_count = inf\n"):
        path = tmp_path / "config.toml"
        path.write_text(text + '[discord]\ntoken = "x"\n' if "discord" not in text else text)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", "--config", str(path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"DISCORD_TOKEN": "x", "PATH": "/usr/bin:/bin"},
            cwd=Path(__file__).resolve().parents[3],
        )  # fmt: skip
        _, err = await asyncio.wait_for(process.communicate(), 60)
        lines = err.decode().splitlines()
        assert process.returncode == 2, lines
        assert len(lines) == 1 and lines[0].startswith("error: "), lines


def highest_accepted() -> str:
    """A config section by section with every number at its upper bound (a few left out: the
    shard count would open ten thousand connections, the bot waits guild_ready_timeout for more
    servers before it is ready, the goose3 workers are as many as the machine has cores for
    (see bench/articles.py), and the answer must fit the window)."""
    left_out = {("discord", "shard_count"), ("discord", "guild_ready_timeout"),
                ("model", "max_tokens"), ("model", "reserve_tokens"), ("model", "seed"),
                ("model", "top_k"), ("articles", "extract_max_workers")}  # fmt: skip
    sections: dict[str, list[str]] = {}
    for section, key, kind in FIELDS:
        if (section, key) in left_out or kind is list:  # ids: any real one will do
            continue
        field = Config.model_fields[section].annotation.model_fields[key]  # type: ignore[union-attr]
        bound = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
        assert bound is not None, f"[{section}] {key} has no upper bound"
        sections.setdefault(section, []).append(f"{key} = {toml_value(bound)}")
    return "".join(
        f"[{section}]\n" + "".join(f"{line}\n" for line in lines)
        for section, lines in sections.items()
    )


async def test_run_starts_and_stops_with_every_number_at_its_highest(tmp_path: Path) -> None:
    # Starting is what the highest values could break (the retention prune of 100 years, the
    # caches, the article workers); an answer would wait out a burst window of a minute.
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord, FakeOpenAI() as model:
        await discord.load_log(EXAMPLE)
        base = config_file(tmp_path, discord, model.url).read_text()
        # The base's own lines for the same keys give way to the highest values.
        highest = highest_accepted()
        data = _merge(base, highest)
        path = tmp_path / "config.toml"
        path.write_text(data)
        async with bot_process(path, discord) as bot:
            await bot.wait_for_line("connected as", within=60)
            await bot.wait_for_line("retention (36500 days)")
            bot.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(bot.process.wait(), 30)
    assert code == 0, bot.log
    assert "Traceback" not in bot.log


def _merge(base: str, highest: str) -> str:
    """``base`` TOML with ``highest``'s keys set, as one file (sections may not repeat)."""
    import tomllib

    merged: dict[str, dict[str, Any]] = tomllib.loads(base)
    for section, values in tomllib.loads(highest).items():
        merged.setdefault(section, {}).update(values)
    lines = []
    for section, values in merged.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, str):
                lines.append(f'{key} = "{value}"')
            elif isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}")
            else:
                lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('[models.big]\nname = "b"\ncontext_tokens = {}\n', "[models.big] context_tokens"),
        ("[[channels]]\nmatch = {{ channel_ids = [{}] }}\n", "[[channels]] 1 match.channel_ids"),
        ("[[channels]]\nmatch = {{ guild_ids = [{}] }}\n", "[[channels]] 1 match.guild_ids"),
        (
            "[[channels]]\nmatch = {{ guild_ids = [1] }}\n[channels.context]\nmax_total = {}\n",
            "[[channels]] 1 [context] max_total",
        ),
    ],
)
def test_the_numbers_of_named_models_and_channel_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, key: str
) -> None:
    for value in (HUGE_INT, math.inf, math.nan, -1):
        code, lines = check(tmp_path, capsys, table.format(toml_value(value)))
        said = f"{key} = {value}: exit {code}, {lines}"
        assert code == 2 and len(lines) == 1 and key in lines[0], said
        assert "Traceback" not in lines[0], said
