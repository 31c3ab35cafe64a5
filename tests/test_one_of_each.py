"""One way of doing each small thing, so a newcomer who finds one has found them all."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    path
    for package in ("bot", "conversation", "bench", "lab")
    for path in sorted((ROOT / package).rglob("*.py"))
]


def test_every_logger_is_named_after_its_module() -> None:
    named = re.compile(r"getLogger\((?!__name__\)|\))")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in SOURCES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if named.search(line)
    ]
    assert not offenders, f"use logging.getLogger(__name__): {offenders}"


def test_discords_message_length_is_said_once() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in SOURCES
        # storage never speaks to Discord (its 2000s are batch sizes); the stand-in Discord
        # (bot/demo) states Discord's limit on its own, so a wrong constant of the bot shows
        if path.parts[len(ROOT.parts)] == "bot"
        and "storage" not in path.parts
        and "demo" not in path.parts
        and path.relative_to(ROOT).as_posix() != "bot/discord/limits.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value == 2000
    ]
    assert not offenders, f"use bot.discord.limits.DISCORD_MESSAGE_LIMIT: {offenders}"


def test_model_attempt_records_are_built_in_one_place() -> None:
    builders = [
        str(path.relative_to(ROOT))
        for path in SOURCES
        if re.search(r"(?<!class )\bAttempt\(", path.read_text(encoding="utf-8"))
    ]
    assert builders == ["bot/model/client.py"], builders
