"""What the interaction store costs: write throughput, bytes per interaction, export speed.

100k interactions (``--quick``: 5k) of 30 request messages each, spread over 20 channels; as in
real use, each answer in a channel sends the previous answer's context shifted by one message,
so 29 of its 30 messages are shared with the one before. The baseline, computed in the same
run over the same interactions, is what storing each interaction's message list as one JSON
blob would take (the payload bytes alone, a lower bound: no row or index overhead counted).

Then the newest migration (the node indexes) against the schema before it, on 3k of the same
interactions each: writing them, forget-user of one of the seven authors, and retention
dropping the older half.

Run: ``python bench/store.py [--quick]`` from the repository root. Figures vary by machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.storage import (  # noqa: E402
    MIGRATIONS,
    ContextEntry,
    ForgetResult,
    InteractionRecord,
    PruneResult,
    Store,
    WorkLogEntry,
)
from bot.storage.schema import Migration  # noqa: E402

CHANNELS = 20
WINDOW = 30
IN_FLIGHT = 64
SYSTEM = {"role": "system", "content": "You are threadwise, a helpful assistant. " * 6}
SENTENCE = "the build fails on arm64 since the last update of the toolchain and nobody knows why"
WORDS = SENTENCE.split(" ")
START = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA_INTERACTIONS = 3_000
FORGOTTEN = 3  # an author of a seventh of every channel's messages


def text(channel: int, k: int) -> str:
    words = [WORDS[(channel * 7 + k * 3 + i) % len(WORDS)] for i in range(30)]
    return f"message {k} in {channel}: " + " ".join(words)


@functools.lru_cache(maxsize=CHANNELS * WINDOW * 2)
def message(channel: int, k: int) -> tuple[dict[str, str], int]:
    """A channel message as the model is sent it, and its JSON size; consecutive answers of a
    channel send the same message objects, as the bot's shared graph nodes would."""
    sent = {
        "role": "user",
        "content": f'<message author="user{k % 7}">{text(channel, k)}</message>',
    }
    return sent, len(json.dumps(sent, ensure_ascii=False, separators=(",", ":")).encode())


@functools.lru_cache(maxsize=CHANNELS * WINDOW * 4)
def entry(channel: int, k: int, linear: bool) -> ContextEntry:
    base = (channel + 1) * 10_000_000
    reasons = ["linear"] if linear else [f"reference via {base + k + 1}"]
    return ContextEntry(message_id=base + k, author_id=k % 7, name=f"user{k % 7}", reasons=reasons)


SYSTEM_SIZE = len(json.dumps(SYSTEM, separators=(",", ":")).encode())


def records(total: int, start: datetime = START) -> Iterator[tuple[InteractionRecord, int]]:
    """The interactions, one a second, each with the size its messages would take as one JSON
    blob."""
    for n in range(total):
        channel, step = n % CHANNELS, n // CHANNELS
        ks = range(step, step + WINDOW - 1)
        base = (channel + 1) * 10_000_000
        sent = [message(channel, k) for k in ks]
        answer = f"Answer number {n}: " + " ".join(WORDS)
        assistant = {"role": "assistant", "content": answer}
        blob = (
            2  # [ ]
            + SYSTEM_SIZE
            + sum(size + 1 for _, size in sent)  # each with its comma
            + 1
            + len(json.dumps(assistant, separators=(",", ":")).encode())
        )
        when = start + timedelta(seconds=n)
        # model_construct: the bot validates its records; here we time the store, not pydantic.
        rec = InteractionRecord.model_construct(
            channel_id=base,
            guild_id=1,
            trigger_message_id=base + step + WINDOW - 2,
            trigger_author_id=(step + WINDOW - 2) % 7,
            started_at=when,
            ended_at=when + timedelta(seconds=3),
            model="llama3.1",
            parameters={"temperature": 0.7},
            request_messages=[SYSTEM] + [m for m, _ in sent],
            context=[None] + [entry(channel, k, k > step + 18) for k in ks],
            answer=answer,
            answer_message_ids=[base + 5_000_000 + step],
            usage={"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540},
            latency_seconds=2.5,
            outcome="success",
            error=None,
            work_log=[
                WorkLogEntry(action="history_page", detail="cache", count=50),
                WorkLogEntry(action="model_attempt", detail="ok"),
            ],
            articles=[],
        )
        yield rec, blob


async def write_all(store: Store, total: int, start: datetime = START) -> tuple[float, float, int]:
    """Returns (seconds building records, seconds in the store, baseline blob bytes)."""
    build = 0.0
    blob = 0
    pending: set[asyncio.Task[str]] = set()
    made = records(total, start)
    began = time.perf_counter()
    while True:
        t = time.perf_counter()
        item = next(made, None)
        build += time.perf_counter() - t
        if item is None:
            break
        rec, size = item
        blob += size
        pending.add(asyncio.create_task(store.record(rec)))
        if len(pending) >= IN_FLIGHT:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
    if pending:
        await asyncio.gather(*pending)
    return build, time.perf_counter() - began - build, blob


def file_size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.exists(p))


@dataclass
class SchemaCosts:
    write: float  # seconds in the store
    size: int  # bytes of the file
    prune: float
    pruned: PruneResult
    forget: float
    forgotten: ForgetResult


async def schema_costs(folder: Path, migrations: Sequence[Migration]) -> SchemaCosts:
    """Write, then forget one author, and (on a copy) let retention drop the older half."""
    path, copy = folder / "written.sqlite3", folder / "forgotten.sqlite3"
    # One interaction a second, the first half more than a day old when retention runs.
    start = datetime.now(UTC) - timedelta(days=1, seconds=SCHEMA_INTERACTIONS // 2)
    store = Store.open(path, migrations=migrations)
    _, write, _ = await write_all(store, SCHEMA_INTERACTIONS, start)
    store.close()
    size = file_size(path)
    shutil.copy(path, copy)
    with Store.open(path, migrations=migrations) as store:
        began = time.perf_counter()
        pruned = await store.prune(1)
        prune = time.perf_counter() - began
    with Store.open(copy, migrations=migrations) as store:
        began = time.perf_counter()
        forgotten = await store.forget_user(FORGOTTEN)
        forget = time.perf_counter() - began
    return SchemaCosts(write, size, prune, pruned, forget, forgotten)


async def compare_schemas() -> None:
    """The node indexes against the same schema without them, as ratios in one run."""
    without = tuple(m for m in MIGRATIONS if not any("INDEX context_node" in s for s in m))
    runs = []
    for migrations in (without, MIGRATIONS):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(await schema_costs(Path(tmp), migrations))
    before, after = runs
    if before.forgotten != after.forgotten:
        raise SystemExit(f"forget-user differs: {before.forgotten} vs {after.forgotten}")
    n = SCHEMA_INTERACTIONS
    print(f"node indexes: {n} interactions, against the schema before them (same run)")
    print(
        f"  write: {n / after.write:,.0f} vs {n / before.write:,.0f} interactions/s "
        f"({before.write / after.write:.2f}x)"
    )
    print(
        f"  size: {after.size / n:,.0f} vs {before.size / n:,.0f} bytes/interaction "
        f"({after.size / before.size:.2f}x)"
    )
    print(
        f"  forget-user: {after.forget:.2f} s vs {before.forget:.2f} s "
        f"({before.forget / after.forget:.0f}x faster; {after.forgotten})"
    )
    print(
        f"  retention: {after.prune:.2f} s vs {before.prune:.2f} s "
        f"({before.prune / after.prune:.0f}x faster; {after.pruned})"
    )


async def main(total: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite3"
        store = Store.open(path)
        build, write, blob = await write_all(store, total)
        store.close()  # checkpoints the WAL into the main file
        size = file_size(path)
        store = Store.open(path)
        counts = store.counts()
        began = time.perf_counter()
        exported = 0
        out_bytes = 0
        for line in store.export_lines():
            exported += 1
            out_bytes += len(line) + 1
        export_s = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(200):
            store.explain(10_000_000 + 5_000_000 + 7)
        explain_ms = (time.perf_counter() - began) / 200 * 1000
        store.close()
    print(f"interactions: {total} x {WINDOW} messages over {CHANNELS} channels")
    print(f"rows: {counts['nodes']} nodes for {counts['context']} context rows")
    print(
        f"write: {total / write:,.0f} interactions/s ({write:.1f} s in the store; "
        f"building the pydantic records took another {build:.1f} s)"
    )
    print(
        f"size: {size / total:,.0f} bytes/interaction in the database vs {blob / total:,.0f} "
        f"as one JSON blob each -> {blob / size:.1f}x smaller ({size / 1e6:.1f} MB vs "
        f"{blob / 1e6:.1f} MB)"
    )
    print(
        f"export: {exported / export_s:,.0f} lines/s, {out_bytes / export_s / 1e6:.0f} MB/s "
        f"({exported} lines, {out_bytes / 1e6:.1f} MB in {export_s:.1f} s)"
    )
    print(f"explain: {explain_ms:.2f} ms per call")
    await compare_schemas()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5k interactions instead of 100k")
    options = parser.parse_args()
    asyncio.run(main(5_000 if options.quick else 100_000))
