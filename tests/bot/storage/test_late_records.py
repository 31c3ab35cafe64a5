"""What a record meets when it reaches the store late, and what comes after it, on SQLite and
PostgreSQL: a forget it missed (before or while it was answered) takes it back without moving
the moment of the forget; a deleted later part of a multi-message answer leaves the records
that hold the answer, and reads back as deleted; a record written twice (the record line
trying again) is one record."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.storage import ContextEntry, InteractionRecord, Store, mutations
from bot.storage.models import REMOVED
from bot.storage.timefmt import to_db
from conversation.sources import time_snowflake

ELI, DEV, BOT = 1300000000000000105, 1300000000000000104, 1300000000000000100
SYSTEM = {"role": "system", "content": "Be brief."}


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "postgresql":
        return Store.open_url(request.getfixturevalue("postgres_url"))
    return Store.open(tmp_path / "store.sqlite3")


def said(author: int, text: str, message_id: int) -> tuple[dict, ContextEntry]:
    return (
        {"role": "user", "content": f"{author}: {text}"},
        ContextEntry(message_id=message_id, author_id=author, reasons=["linear"]),
    )


def record(
    trigger: int,
    author: int,
    lines: list[tuple[dict, ContextEntry]],
    started: datetime,
    *,
    answer: str = "Noted.",
    answer_ids: tuple[int, ...] = (),
) -> InteractionRecord:
    return InteractionRecord(
        channel_id=7, trigger_message_id=trigger, trigger_author_id=author,
        started_at=started, ended_at=started, model="m",
        request_messages=[SYSTEM, *(message for message, _ in lines)],
        context=[None, *(entry for _, entry in lines)],
        answer=answer, answer_message_ids=list(answer_ids), outcome="success",
    )  # fmt: skip


def exported(store: Store) -> str:
    return json.dumps(list(store.export()), ensure_ascii=False)


async def test_a_late_record_taken_back_leaves_the_moment_of_the_forget(store: Store) -> None:
    """The take-back scrubs the late record, and leaves ``forgotten_at`` as forget-user set
    it: re-stamped, what Eli said between the forget and the late record would count as said
    before it everywhere (dropped from builds, scrubbed from the store)."""
    async with store:
        began = datetime.now(UTC) - timedelta(seconds=30)
        before = time_snowflake(began - timedelta(seconds=5))
        await store.forget_user(ELI)
        (stamped,) = store.forgotten_since()
        late = record(before + 1, DEV, [said(ELI, "my flat is 4B", before)], began)
        await store.record(late)
        assert store.forgotten_since() == [stamped]
        assert "my flat is 4B" not in exported(store)


async def test_a_forget_before_the_answer_the_process_had_not_read_takes_the_record_back(
    store: Store,
) -> None:
    """forget-user ran before the answer began, and the answering process had not polled it
    yet: the record holds what Eli said before the forget, and the store takes it back. A
    record of Eli's own words said after the forget keeps them: they are new."""
    async with store:
        old = time_snowflake(datetime.now(UTC) - timedelta(minutes=5))
        await store.forget_user(ELI)
        (_, at), = store.forgotten_since()  # fmt: skip
        after = datetime.now(UTC) + timedelta(seconds=1)
        new = time_snowflake(after)
        await store.record(
            record(new, DEV, [said(ELI, "call me on 0199", old), said(DEV, "ok", new)], after)
        )
        await store.record(record(new + 10, ELI, [said(ELI, "hello again", new + 10)], after))
        text = exported(store)
        assert store.forgotten_since() == [(ELI, at)]
    assert "0199" not in text
    assert "hello again" in text


async def test_a_forget_stamped_earlier_by_another_hosts_clock_is_still_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running bot polls forgets from the latest it saw: one stamped a minute earlier (the
    clock of the host that ran forget-user behind) still reaches it."""
    from bot.answering.forgotten import ForgottenPeople

    async with store:
        people = ForgottenPeople(store)
        await store.forget_user(DEV)
        assert await people.poll() == {DEV}
        behind = datetime.now(UTC) - timedelta(minutes=1)
        monkeypatch.setattr(mutations, "now_db", lambda: to_db(behind))
        await store.forget_user(ELI)
        assert await people.poll() == {ELI}
        assert await people.poll() == set()  # read again, not new again


def answer_in_parts(started: datetime) -> tuple[InteractionRecord, InteractionRecord]:
    """The bot answers Dev in two messages (500, 501); Dev's follow-up holds that answer as
    one message under its first id, as every later request does."""
    first = record(
        100, DEV, [said(DEV, "what is the plan?", 100)], started,
        answer="The plan: meet at the north gate.", answer_ids=(500, 501),
    )  # fmt: skip
    answer = (
        {"role": "assistant", "content": "The plan: meet at the north gate."},
        ContextEntry(message_id=500, author_id=BOT, reasons=["linear"]),
    )
    follow_up = record(
        600, DEV, [said(DEV, "what is the plan?", 100), answer, said(DEV, "and then?", 600)],
        started,
    )  # fmt: skip
    return first, follow_up


async def test_a_deleted_later_part_of_an_answer_leaves_the_records_that_hold_it(
    store: Store,
) -> None:
    async with store:
        first, follow_up = answer_in_parts(datetime.now(UTC))
        await store.record(first)
        await store.record(follow_up)
        assert "north gate" in exported(store)
        await store.record_delete(501)  # a moderator took down the answer's second message
        text = exported(store)
        gone = store.deleted_among({100, 500, 600})
    assert "north gate" not in text and REMOVED in text
    assert gone == {500}  # read back (after a restart): the answer it holds is gone


async def test_a_record_written_after_a_later_part_was_deleted_is_scrubbed(store: Store) -> None:
    async with store:
        first, follow_up = answer_in_parts(datetime.now(UTC))
        await store.record(first)
        await store.record_delete(501)  # while the follow-up's record waited in line
        await store.record(follow_up)
        text = exported(store)
    assert "north gate" not in text


async def test_a_record_whose_take_back_failed_is_not_written_twice(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The insert committed, then the take-back's read failed (a reader's connection refused
    while the writer's holds): the same record tried again is not inserted again, and its
    take-back runs then."""
    from bot.storage import reads

    deleted_among = reads.deleted_among
    failures = []

    def failing_once(conn, message_ids):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(message_ids)
            raise conn.dialect.database_errors[0]("the server closed the connection")
        return deleted_among(conn, message_ids)

    async with store:
        first, follow_up = answer_in_parts(datetime.now(UTC))
        await store.record(first)
        await store.record_delete(501)
        monkeypatch.setattr(reads, "deleted_among", failing_once)
        with pytest.raises(Exception, match="closed the connection"):
            await store.record(follow_up)
        await store.record(follow_up)  # the record line's next attempt
        assert store.counts()["interactions"] == 2
        assert "north gate" not in exported(store)


async def test_the_record_line_tries_a_record_again_without_writing_it_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real client answers; its record's insert commits and the take-back's read fails
    once: the line tries the same record again (not a copy with a new id), so the store and
    the export hold the answer once."""
    from bot.storage import reads
    from tests.fakes.harness import BEN, CHANNEL, running_bot, settled

    deleted_among = reads.deleted_among
    failures: list[object] = []

    def failing_once(conn, message_ids):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(message_ids)
            raise sqlite3.OperationalError("disk I/O error")
        return deleted_among(conn, message_ids)

    monkeypatch.setattr(reads, "deleted_among", failing_once)
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            monkeypatch.setattr(bot.client.answerer.records, "_retry_delays", (0.01, 0.01))
            await bot.answer_to(CHANNEL, BEN, f"<@{BOT}> when is the window?")
            await settled(bot)
            while bot.client.answerer.records:
                await asyncio.sleep(0.01)
        assert failures  # the take-back's read did fail once
        assert store.counts()["interactions"] == 1
        assert len(list(store.export())) == 1


def test_a_read_the_database_refuses_is_a_store_error(tmp_path: Path) -> None:
    """What the database raises in a read (here a table gone) comes out as StoreError, which
    every reader of the bot handles (the forget watch, the seal, a follow-up's recall), never
    as the driver's own error that would end the watch or fail the answer."""
    from bot.storage import StoreError

    with Store.open(tmp_path / "store.sqlite3") as store:
        with sqlite3.connect(tmp_path / "store.sqlite3") as raw:
            raw.execute("DROP TABLE seals")
        with pytest.raises(StoreError, match="reading failed: no such table"):
            store.latest_seal(7)
