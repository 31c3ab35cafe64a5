"""The store on a real PostgreSQL 16: what only a shared server brings (several writing
processes, its own schema bookkeeping, 64-bit ids, connection errors), and an export that is
byte for byte the SQLite one. The behaviour both databases share is tested in test_storage.py
against each of them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main as cli_main
from bot.storage import MIGRATIONS, Store, StoreError
from bot.storage.mutations import FORGOTTEN, repoint_theirs
from bot.storage.postgres import POSTGRES, connect_postgres
from bot.storage.schema import migrate, schema_version
from tests.bot.storage.test_storage import NODE_INDEXES, NOW, make_record

ROOT = Path(__file__).resolve().parents[3]

# A process recording interactions whose histories overlap with the other process's (the same
# new nodes inserted from both sides at once), printing each id once it is committed.
WRITER = r"""
import asyncio, sys
from bot.storage import Store
from tests.bot.storage.test_storage import make_record

async def main(url, who, total):
    async with Store.open_url(url) as store:
        async def channel(c):
            for n in range(total // 10):
                history = [(c * 10_000 + k, k % 4, f"c{c} m{k}") for k in range(n, n + 20)]
                rec = make_record(c * 10_000 + n + 20 + who * 5000, history, channel=c)
                await store.record(rec)
                print(rec.id, flush=True)
        await asyncio.gather(*(channel(c) for c in range(10)))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


@pytest.mark.slow
def test_two_processes_write_at_once_without_losing_or_doubling(postgres_url: str) -> None:
    Store.open_url(postgres_url).close()  # migrate once, as the first bot to start does
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, str(who), "100"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for who in (1, 2)
    ]
    printed: list[str] = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        printed.extend(out.split())
    assert len(printed) == 200
    with Store.open_url(postgres_url) as store:
        counts = store.counts()
        assert counts["interactions"] == 200
        assert counts["context"] == 200 * 21
        # Both processes sent the same messages: each is stored once (plus the system prompt).
        assert counts["nodes"] == 1 + 10 * 29
        assert counts["message_versions"] == 10 * 29
        exported = list(store.export_lines())
        assert len(exported) == 200
        assert {store.get_interaction(i).id for i in printed} == set(printed)


async def test_export_is_byte_for_byte_the_sqlite_export(postgres_url: str, tmp_path: Path) -> None:
    records = [
        make_record(3, [(1, 1, 'héllo ✓ "quoted" \\ back'), (3, 2, "🙂 emoji")], answer="Ré"),
        make_record(5, [(1, 1, 'héllo ✓ "quoted" \\ back'), (5, 2, "next")], channel=11),
        make_record(6, [(6, 2, "failed one")], outcome="failure"),
        make_record(2**62 + 7, [(2**62 + 7, 2**61, "snowflake-sized ids")], answer_ids=(2**62,)),
    ]
    exports = []
    for store in (Store.open(tmp_path / "s.sqlite3"), Store.open_url(postgres_url)):
        async with store:
            for rec in records:
                await store.record(rec)
            exports.append(list(store.export_lines()))
            assert store.get_interaction(records[3].id) == records[3]
            assert store.explain(2**62).trigger_message_id == 2**62 + 7
    assert exports[0] == exports[1]
    assert len(exports[0]) == 3


def test_migrations_are_tracked_in_the_database(postgres_url: str) -> None:
    Store.open_url(postgres_url).close()
    Store.open_url(postgres_url).close()  # re-open: nothing to apply, nothing breaks
    conn = connect_postgres(postgres_url)
    try:
        assert schema_version(conn) == len(MIGRATIONS)
        assert migrate(conn) == 0
        extra = (*MIGRATIONS, ("CREATE TABLE later (x INTEGER)",))
        assert migrate(conn, extra) == 1
        assert schema_version(conn) == len(MIGRATIONS) + 1
        kind = conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = 'context' AND column_name = 'message_id'"
        ).fetchone()[0]
        assert kind == "bigint"
    finally:
        conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open_url(postgres_url)


async def test_a_database_of_the_version_before_gains_the_node_indexes(postgres_url: str) -> None:
    rec = make_record(3, [(1, 1, "hello"), (3, 2, "hi")], answer_ids=(600,))
    async with Store.open_url(postgres_url, migrations=MIGRATIONS[:NODE_INDEXES]) as store:
        await store.record(rec)
    async with Store.open_url(postgres_url) as store:
        assert store.get_interaction(rec.id) == rec
    conn = connect_postgres(postgres_url)
    try:
        assert schema_version(conn) == len(MIGRATIONS)
        names = {
            name
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            )
        }
        assert {"context_node", "message_versions_node"} <= names
        # On a table this small the planner rightly scans; told not to, it shows what fits.
        conn.execute("SET enable_seqscan = off")
        conn.execute(POSTGRES.ddl(FORGOTTEN))
        for table in ("context", "message_versions"):
            plan = " ".join(
                line for (line,) in conn.execute("EXPLAIN " + repoint_theirs(table), (2, 1, 1))
            )
            assert f"{table}_node" in plan, plan
    finally:
        conn.close()


def test_unreachable_server_is_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://bot:hunter2@/threadwise?host={tmp_path}&port=1"
    with pytest.raises(StoreError) as caught:
        Store.open_url(url)
    message = str(caught.value)
    assert "hunter2" not in message and "\n" not in message
    assert "cannot connect to PostgreSQL" in message


def test_cli_reads_the_server_named_in_the_config(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = make_record(42, [(41, 1, "cli context"), (42, 2, "cli question ZEBRA-PG")])

    async def seed() -> None:
        async with Store.open_url(postgres_url) as store:
            await store.record(rec)

    asyncio.run(seed())
    config = tmp_path / "config.toml"
    config.write_text(f"[storage]\nurl = {json.dumps(postgres_url)}\n")
    assert cli_main(["export", "--config", str(config)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["messages"][:-1] == rec.request_messages
    assert cli_main(["forget-user", "--config", str(config), "2"]) == 0
    assert "1 interaction emptied" in capsys.readouterr().out
    assert cli_main(["export", "--config", str(config)]) == 0
    assert capsys.readouterr().out == ""
    config.write_text('[storage]\nurl = "postgresql://bot:hunter2@/x?host=/nonexistent"\n')
    assert cli_main(["export", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "cannot connect" in err and "hunter2" not in err and len(err.splitlines()) == 1


async def test_the_writer_reconnects_after_the_server_dropped_it(postgres_url: str) -> None:
    import psycopg

    async with Store.open_url(postgres_url) as store:
        await store.record(make_record(1, [(1, 1, "before")]))
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            # Every other session on this schema: the store's writer among them.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                "AND query NOT ILIKE '%pg_stat_activity%' AND backend_type = 'client backend'"
            )
        with pytest.raises(psycopg.OperationalError):
            await store.record(make_record(2, [(2, 1, "lost with the connection")]))
        await store.record(make_record(3, [(3, 1, "after")]))
        texts = "\n".join(store.export_lines())
    assert "before" in texts and "after" in texts and "lost with" not in texts


async def test_an_edit_racing_a_first_sighting_takes_the_next_version(postgres_url: str) -> None:
    """Another process records the message's first version while an edit of it comes in: the
    edit waits for it and becomes version 2 instead of failing on a taken number."""
    import psycopg

    async with Store.open_url(postgres_url) as store:
        other = psycopg.connect(postgres_url)  # a transaction, as another process's writer
        try:
            other.execute(
                "INSERT INTO message_versions (message_id, version, channel_id, author_id, "
                "node_id, content, state, superseded_by, edited_at, recorded_at) "
                "VALUES (77, 1, 10, 1, NULL, NULL, 'active', NULL, NULL, '2025-01-01')"
            )
            edit = asyncio.create_task(store.record_edit(77, 10, 1, "edited", NOW))
            await asyncio.sleep(0.5)
            assert not edit.done()  # waiting on the uncommitted first version
            other.commit()
            assert await asyncio.wait_for(edit, 10) == 2
        finally:
            other.close()
        states = [(v.version, v.state) for v in store.message_versions(77)]
    assert states == [(1, "superseded"), (2, "active")]
