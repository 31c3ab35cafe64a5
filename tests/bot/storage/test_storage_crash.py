"""A writer killed with SIGKILL mid-stream leaves a sound file holding every acknowledged write.

The child process records interactions from several concurrent tasks and prints each id once
``record`` returned (i.e. after commit). We kill it at an arbitrary moment, twice on the same
file, then check: integrity, every printed id present, no interaction missing any of its rows.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")

ROOT = Path(__file__).resolve().parents[3]

CHILD = r"""
import asyncio, sys
from datetime import UTC, datetime, timedelta
from bot.storage import ArticleEntry, ContextEntry, InteractionRecord, Store, WorkLogEntry

async def channel(store, channel_id):
    n = 0
    while True:
        n += 1
        base = channel_id * 1_000_000
        msgs = [{"role": "system", "content": "sys"}] + [
            {"role": "user", "content": f"ch{channel_id} message {k} " + "x" * 200}
            for k in range(n, n + 29)
        ]
        ctx = [None] + [
            ContextEntry(message_id=base + k, author_id=k % 5, name=f"u{k % 5}", reasons=["r"])
            for k in range(n, n + 29)
        ]
        now = datetime.now(UTC)
        rec = InteractionRecord(
            channel_id=channel_id, trigger_message_id=base + n + 28, trigger_author_id=1,
            started_at=now, ended_at=now + timedelta(seconds=1), model="m",
            request_messages=msgs, context=ctx, answer="answer " * 50,
            answer_message_ids=[base + 900_000 + n], usage={"total_tokens": 3},
            outcome="success",
            work_log=[WorkLogEntry(action="a", detail=str(i)) for i in range(5)],
            articles=[ArticleEntry(url="http://e/x", status="extracted")],
        )
        await store.record(rec)
        print(rec.id, flush=True)

async def main():
    store = Store.open(sys.argv[1])
    await asyncio.gather(*(channel(store, c) for c in range(1, 9)))

asyncio.run(main())
"""


def _run_and_kill(db: Path, wanted: int) -> list[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    printed: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while len(printed) < wanted:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"child ended early: {child.stderr.read()}")  # type: ignore[union-attr]
            printed.append(line.strip())
            assert time.monotonic() < deadline, "child too slow"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=10)
    # Lines flushed between our last read and the kill were committed too.
    printed.extend(x for x in rest.split() if len(x) == 36)
    assert child.returncode == -signal.SIGKILL
    return printed


def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite3"
    printed = _run_and_kill(db, 150)
    printed += _run_and_kill(db, 150)  # recovery, then a second kill on the same file
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute("SELECT id FROM interactions")}
        missing = set(printed) - stored
        assert not missing, f"{len(missing)} acknowledged interactions lost"
        half_written = conn.execute(
            "SELECT i.id FROM interactions i WHERE "
            "i.message_count != (SELECT COUNT(*) FROM context c WHERE c.seq = i.seq) OR "
            "i.work_log_count != (SELECT COUNT(*) FROM work_log w WHERE w.seq = i.seq) OR "
            "i.article_count != (SELECT COUNT(*) FROM articles a WHERE a.seq = i.seq) OR "
            "NOT EXISTS (SELECT 1 FROM answer_messages m WHERE m.seq = i.seq)"
        ).fetchall()
        assert half_written == []
        dangling = conn.execute(
            "SELECT COUNT(*) FROM context c LEFT JOIN nodes n ON n.id = c.node_id "
            "WHERE n.id IS NULL"
        ).fetchone()[0]
        assert dangling == 0
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # And the store opens and works again.
    from bot.storage import Store

    with Store.open(db) as store:
        assert store.counts()["interactions"] == len(stored)
