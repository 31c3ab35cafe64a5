"""``forget-user`` through the command line, on SQLite and on PostgreSQL, while another process
writes: afterwards no text column of any table and no exported line holds the person's names,
nicknames or id in any spelling (``<@id>``, ``<@!id>``, ``"user_id": id``, a name JSON-escaped
as ``Chlo\\u00e9``), in the work log's tool lines, the tool calls' arguments and results, the
bot's answers and its errors. Id columns kept as bookkeeping are the only exception."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli.main import main as cli_main
from bot.storage import ContextEntry, InteractionRecord, Store, WorkLogEntry
from bot.storage.postgres import connect_postgres

ROOT = Path(__file__).resolve().parents[3]
NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CHLOE, BOB = 312345678901234567, 498765432109876543
NAMES = ("Chloé", "chloe_b", "Clo-Bear")  # shown name, username, nickname


def spellings() -> list[str]:
    """What must be gone: each name as shown, folded, JSON-escaped, and the id every way."""
    return [
        "Chloé", "Chloe", "chloe", "Chlo\\u00e9", "Chlo\\\\u00e9", "chloe_b", "Clo-Bear",
        str(CHLOE), f"<@{CHLOE}>", f"<@!{CHLOE}>",
    ]  # fmt: skip


def bot_record(trigger: int) -> InteractionRecord:
    """What the bot writes for an answer that called a tool about Chloé, as the bot spells it:
    the arguments as the model sent them (escaped), the result as the server gave it."""
    arguments = f'{{"user_id": {CHLOE}, "q": "Chlo\\u00e9 deploy"}}'
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": arguments}}]}  # fmt: skip
    result = {
        "role": "tool",
        "tool_call_id": "c1",
        "content": f'<tool_result tool="lookup">{{"user_id": {CHLOE}, "name": "Chlo\\u00e9", '
        f'"mention": "<@{CHLOE}>", "nick": "Clo-Bear"}}</tool_result>',
    }
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Chloé: when is the deploy?", "name": "Chlo"},
        {"role": "user", "content": f"Bob: <@{CHLOE}> asked, can you look it up?", "name": "Bob"},
        call,
        result,
    ]
    context = [
        None,
        ContextEntry(message_id=trigger - 1, author_id=CHLOE, name="Chloé", reasons=["linear"]),
        ContextEntry(
            message_id=trigger,
            author_id=BOB,
            name="Bob",
            reasons=["trigger"],
            named={CHLOE: "Chloé"},
        ),
        ContextEntry(reasons=["tool call: lookup"]),
        ContextEntry(reasons=["tool result: lookup"]),
    ]
    detail = (
        f"round 1: lookup {arguments}: error in 0.20 s, 31 characters "
        f'(no profile for "Chlo\\u00e9" (<@!{CHLOE}>))'
    )
    return InteractionRecord(
        guild_id=1, channel_id=10, trigger_message_id=trigger, trigger_author_id=BOB,
        started_at=NOW, ended_at=NOW + timedelta(seconds=1), model="m",
        parameters={"temperature": 0.5}, request_messages=messages, context=context,
        answer=f"<@!{CHLOE}> (Chloé, Clo-Bear) deploys at 16:00.",
        answer_message_ids=[trigger + 1], outcome="partial",
        error=f"tool lookup failed for user_id {CHLOE}",
        work_log=[WorkLogEntry(action="tool_call", detail=detail, status="failure")],
        people={CHLOE: list(NAMES), BOB: ["Bob"]},
    )  # fmt: skip


# Another process recording interactions of other people all along (as the running bot does).
WRITER = r"""
import asyncio, sys
from bot.storage import Store
from tests.bot.storage.test_storage import make_record

async def main(where, total):
    store = Store.open_url(where) if "://" in where else Store.open(where)
    async with store:
        for n in range(total):
            await store.record(make_record(900_000 + n, [(800_000 + n, 5, f"other {n}")]))
            print(n, flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def text_cells(where: str) -> list[str]:
    """Every text value of every table of the store at ``where`` (a file or a server's url)."""
    if "://" in where:
        conn = connect_postgres(where)
        listing = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    else:
        conn = sqlite3.connect(where)
        listing = "SELECT name FROM sqlite_master WHERE type = 'table'"
    try:
        tables = [name for (name,) in conn.execute(listing).fetchall()]
        return [
            value
            for table in tables
            for row in conn.execute(f'SELECT * FROM "{table}"').fetchall()
            for value in row
            if isinstance(value, str)
        ]
    finally:
        conn.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "store.sqlite3")


def test_forget_user_leaves_no_spelling_anywhere(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def seed() -> None:
        store = Store.open_url(where) if "://" in where else Store.open(Path(where))
        async with store:
            await store.record(bot_record(1000))
            await store.record(bot_record(2000).model_copy(update={"trigger_author_id": CHLOE}))

    asyncio.run(seed())
    config = tmp_path / "config.toml"
    key = "url" if "://" in where else "path"
    config.write_text(f"[storage]\n{key} = {json.dumps(where)}\n")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, where, "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert writer.stdout is not None
        writer.stdout.readline()  # it is writing
        assert cli_main(["forget-user", "--config", str(config), str(CHLOE)]) == 0
    finally:
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert "1 interaction emptied" in capsys.readouterr().out
    assert cli_main(["export", "--config", str(config)]) == 0
    exported = capsys.readouterr().out
    cells = text_cells(where)
    assert any("deploy" in cell for cell in cells)  # the rest stays
    assert "other 59" in exported  # and the other process's interactions were all kept
    for spelling in spellings():
        assert spelling not in exported, spelling
        found = [cell for cell in cells if spelling in cell]
        assert not found, (spelling, found)
