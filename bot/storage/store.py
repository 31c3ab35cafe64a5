"""The store: interactions in a SQLite file or a PostgreSQL database, written by one thread
per process, read by anyone.

Async methods hand their work to the writer thread and await it, so the event loop never waits
on the disk; reads are synchronous (they are index lookups, and the CLI has no loop) on
connections of their own, which WAL (or PostgreSQL's MVCC) lets run while the bot writes.
Which database it is only matters when opening: see :mod:`bot.storage.dialect`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from bot.storage import deletions, mutations, reads
from bot.storage import explain as explain_mod
from bot.storage import limits as limits_mod
from bot.storage.dialect import Db, connect_sqlite
from bot.storage.errors import StoreError
from bot.storage.models import (
    Explanation,
    ForgetResult,
    InteractionRecord,
    InteractionSummary,
    MessageVersion,
    PruneResult,
)
from bot.storage.schema import MIGRATIONS, Migration, migrate
from bot.storage.timefmt import to_db
from bot.storage.writer_thread import Writer, rollback
from conversation.sources import snowflake_time

log = logging.getLogger(__name__)


def _setup_sqlite(conn: Db, migrations: Sequence[Migration]) -> None:
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StoreError(f"could not switch the database to WAL mode (got {mode})")
    # NORMAL in WAL mode survives a killed process (committed frames are in the WAL); only a
    # power cut can lose the last commits, never corrupt the file.
    conn.execute("PRAGMA synchronous = NORMAL")
    # Freed pages are zeroed, so deleted or rewritten text does not linger in the file.
    conn.execute("PRAGMA secure_delete = ON")
    migrate(conn, migrations)


class Store:
    """Use ``Store.open(path)`` (SQLite) or ``Store.open_url(url)`` (PostgreSQL); close with
    ``close()`` or as a (sync or async) context manager."""

    def __init__(
        self,
        location: Path | str,
        writer: Writer,
        connect: Callable[[], Db],
        *,
        read_only: str,
        migrations: Sequence[Migration] = MIGRATIONS,
    ) -> None:
        # The file, or the URL without its password: what messages name.
        self.location = location
        # Opened at the newest schema (tests of a migration open the one before it: then what
        # a later table adds is skipped, never needed).
        self._newest = len(migrations) == len(MIGRATIONS)
        self._writer = writer
        self._connect = connect
        self._read_only = read_only

    @property
    def path(self) -> Path:
        """The SQLite file (only for stores opened with ``open``)."""
        if not isinstance(self.location, Path):
            raise AttributeError("a PostgreSQL store has no file path")
        return self.location

    @classmethod
    def open_url(cls, url: str, *, migrations: Sequence[Migration] = MIGRATIONS) -> Store:
        """Connect to PostgreSQL (``postgresql://user:password@host/db``) and migrate.

        Tests and benchmarks of the newest migration pass the ``migrations`` before it
        (``MIGRATIONS[:-1]``): the code must not need what that migration adds.
        """
        from bot.storage.postgres import connect_postgres, redact_url

        writer = Writer(
            lambda: connect_postgres(url, writer=True), lambda conn: migrate(conn, migrations)
        )
        return cls(
            redact_url(url),
            writer,
            lambda: connect_postgres(url),
            read_only="SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
            migrations=migrations,
        )

    @classmethod
    def open_target(cls, path: Path | str, url: str | None) -> Store:
        """``url`` when given (PostgreSQL), else the SQLite file at ``path``."""
        return cls.open_url(url) if url else cls.open(path)

    @classmethod
    def open(cls, path: Path | str, *, migrations: Sequence[Migration] = MIGRATIONS) -> Store:
        """Open (creating the file and its folders on first run) and migrate the schema.

        Tests and benchmarks of the newest migration pass the ``migrations`` before it
        (``MIGRATIONS[:-1]``): the code must not need what that migration adds.
        """
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"{path.parent}: cannot create folder: {error.strerror}") from error
        try:
            writer = Writer(
                lambda: connect_sqlite(path), lambda conn: _setup_sqlite(conn, migrations)
            )
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path}: cannot open the database: {error}") from error
        return cls(
            path,
            writer,
            lambda: connect_sqlite(path),
            read_only="PRAGMA query_only = ON",
            migrations=migrations,
        )

    def close(self, timeout: float | None = None) -> bool:
        """Finish queued writes, then close. Idempotent. With ``timeout``: False when the
        writes were not finished in that many seconds (a stalled database), and left behind."""
        return self._writer.close(timeout)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.close)

    # ----------------------------------------------------------------------- writes

    async def _do(self, job: Any, **options: bool) -> Any:
        return await asyncio.wrap_future(self._writer.submit(job, **options))

    async def record(self, interaction: InteractionRecord) -> str:
        """Store one interaction atomically; returns its id once it is committed. The same
        interaction again (the record line's next attempt) is not written twice."""
        await self._do(
            lambda conn, cache: mutations.insert_interaction(conn, cache, interaction),
            groupable=True,
        )
        await self._take_back_meanwhile(interaction)
        return interaction.id

    async def _take_back_meanwhile(self, rec: InteractionRecord) -> None:
        """What was taken back while this record waited (the bot writes it after the answer,
        seconds later when the store stalls): a person forgotten (``_said_before_forget``), or
        a message it holds (or its summary stands for) deleted since, leaves it as it left the
        records before. One small indexed read per record; the rare hit costs a forget-user or
        a deletion's scrub, as if it had come after. A failure here leaves the record written
        (it is not written twice: ``insert_interaction``) and is raised for the line to try
        again."""
        if not self._newest:  # no forgotten_users table yet
            return
        people = set(rec.people) | {rec.trigger_author_id}
        for entry in filter(None, rec.context):  # authors, and who a message or summary names
            people.update(entry.named)
            if entry.author_id is not None:
                people.add(entry.author_id)
        held = {i for e in rec.context if e is not None for i in e.covers}
        held.update(e.message_id for e in rec.context if e is not None and e.message_id)
        held.update(rec.answer_message_ids)

        def taken_back() -> tuple[dict[int, datetime], set[int]]:
            with self._reader() as conn:
                return reads.forgotten_among(conn, people), reads.deleted_among(conn, held)

        try:
            forgotten, deleted = await asyncio.to_thread(taken_back)
            for user_id, at in sorted(forgotten.items()):
                if at >= rec.started_at or _said_before_forget(rec, user_id, at):
                    await self.forget_user(user_id, stamp=False)
            for message_id in sorted(deleted):
                await self._scrub_deleted(message_id)
        except Exception as error:
            log.warning(
                "interaction %s is recorded; taking back what was forgotten or deleted "
                "meanwhile failed: %s",
                rec.id,
                " ".join(str(error).split())[:300] or type(error).__name__,
            )
            raise

    async def record_edit(
        self,
        message_id: int,
        channel_id: int | None,
        author_id: int | None,
        new_content: str,
        edited_at: datetime,
    ) -> int:
        """A Discord edit of a message the store holds: a new version, the previous one
        superseded. Returns the version, 0 for a message the store does not hold."""
        return int(
            await self._do(
                lambda conn, _cache: mutations.record_edit(
                    conn, message_id, channel_id, author_id, new_content, edited_at
                )
            )
        )

    async def record_delete(self, message_id: int) -> bool:
        """A Discord deletion: the current version is invalidated, and when a record holds
        the message's words they are replaced everywhere (``deletions.scrub_deleted``, in a
        transaction of its own). True if the message was known."""
        known, held = await self._do(
            lambda conn, _cache: (
                mutations.record_delete(conn, message_id),
                deletions.holds_text_of(conn, message_id),
            )
        )
        if held:
            await self._scrub_deleted(message_id)
        return bool(known)

    async def _scrub_deleted(self, message_id: int) -> None:
        await self._do(
            lambda conn, cache: _exclusive(
                conn, cache, lambda: deletions.scrub_deleted(conn, cache, message_id)
            ),
            transactional=False,
        )

    async def forget_user(self, user_id: int, *, stamp: bool = True) -> ForgetResult:
        """Remove a person's text from every table, then from the disk itself (VACUUM).
        ``stamp=False``: a late record taken back, the moment of the forget left as it was."""

        def job(conn: Db, cache: mutations.NodeCache) -> ForgetResult:
            result = _exclusive(
                conn, cache, lambda: mutations.forget_user(conn, cache, user_id, stamp=stamp)
            )
            conn.dialect.scrub(conn)
            return result

        return await self._do(job, transactional=False)  # type: ignore[no-any-return]

    async def record_seal(self, channel_id: int, message_id: int) -> None:
        """A ``/fresh`` seal the bot posted (``conversation.selection.seal``)."""
        await self._do(lambda conn, _cache: mutations.record_seal(conn, channel_id, message_id))

    async def save_model_limits(self, limits: limits_mod.ModelLimits) -> None:
        """Remember a model's token calibration and learned window (one small upsert)."""
        await self._do(lambda conn, _cache: limits_mod.save(conn, limits))

    async def prune(self, older_than_days: int) -> PruneResult:
        """Drop interactions older than N days and the nodes only they used."""
        return await self._do(  # type: ignore[no-any-return]
            lambda conn, cache: _exclusive(
                conn, cache, lambda: mutations.prune(conn, cache, older_than_days)
            ),
            transactional=False,
        )

    # ------------------------------------------------------------------------ reads

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Db]:
        """A read-only connection for one read; what the database raises in it (a dropped
        connection, a locked file) comes out as StoreError, which every reader handles."""
        try:
            conn = self._connect()
        except sqlite3.Error as error:  # PostgreSQL's connect says StoreError itself
            raise _read_failed(self.location, error) from error
        try:
            conn.execute(self._read_only)
            yield conn
        except conn.dialect.database_errors as error:
            raise _read_failed(self.location, error) from error
        finally:
            conn.close()

    def get_interaction(self, interaction_id: str) -> InteractionRecord:
        with self._reader() as conn:
            return reads.load_record(conn, reads.seq_of(conn, interaction_id))

    def find_interaction(self, message_id: int) -> str | None:
        """Id of the latest interaction with this trigger or answer message, if any."""
        with self._reader() as conn:
            seq = reads.find_seq(conn, message_id)
            if seq is None:
                return None
            return str(
                conn.execute("SELECT id FROM interactions WHERE seq = ?", (seq,)).fetchone()[0]
            )

    def answered(self, message_id: int) -> bool:
        """Whether this Discord message triggered an interaction already (on any shard, before
        any restart): the bot answers a message once."""
        with self._reader() as conn:
            return reads.answered(conn, message_id)

    async def answered_async(self, message_id: int) -> bool:
        return await asyncio.to_thread(self.answered, message_id)

    def latest_answered(self, channel_id: int, message_ids: list[int]) -> InteractionRecord | None:
        """The latest successful interaction in the channel whose trigger or answer is one of
        ``message_ids`` (what a follow-up's request starts with), None when there is none."""
        with self._reader() as conn:
            seq = reads.latest_answered(conn, channel_id, message_ids)
            return None if seq is None else reads.load_record(conn, seq)

    def deleted_among(self, message_ids: Collection[int]) -> set[int]:
        """Which of these Discord messages were deleted, as far as the store knows (its own
        record of deletion events, on any shard, before any restart)."""
        with self._reader() as conn:
            return reads.deleted_among(conn, message_ids)

    def explain(self, message_id: int) -> Explanation:
        """Raises StoreError when no interaction has this trigger or answer message."""
        with self._reader() as conn:
            return explain_mod.build(conn, message_id)

    async def explain_async(self, message_id: int) -> Explanation:
        return await asyncio.to_thread(self.explain, message_id)

    def forgotten_since(self, moment: datetime | None = None) -> list[tuple[int, datetime]]:
        """Who forget-user removed at ``moment`` or later (None: ever), with when."""
        with self._reader() as conn:
            return reads.forgotten_since(conn, "" if moment is None else to_db(moment))

    def latest_seal(self, channel_id: int) -> int | None:
        """The channel's latest standing ``/fresh`` seal (its message id), None: none."""
        with self._reader() as conn:
            return reads.latest_seal(conn, channel_id)

    def model_limits(self) -> dict[str, limits_mod.ModelLimits]:
        """What is known per model for the token budget (see ``bot.storage.limits``)."""
        with self._reader() as conn:
            return limits_mod.load(conn)

    def recent_interactions(
        self, limit: int = 50, before_seq: int | None = None
    ) -> list[InteractionSummary]:
        """The latest interactions first; pass the last ``seq`` seen as ``before_seq`` to page."""
        with self._reader() as conn:
            return reads.recent(conn, limit, before_seq)

    def message_versions(self, message_id: int) -> list[MessageVersion]:
        with self._reader() as conn:
            return reads.versions(conn, message_id)

    def export_lines(
        self, since: datetime | None = None, channel_id: int | None = None
    ) -> Iterator[str]:
        """JSONL lines (no newline) for OpenAI fine-tuning, one per successful interaction."""
        if since is not None and since.tzinfo is None:
            raise ValueError("since must be timezone-aware")
        with self._reader() as conn:
            yield from reads.export_lines(conn, since, channel_id)

    def export(
        self, since: datetime | None = None, channel_id: int | None = None
    ) -> Iterator[dict]:
        """``{"messages": [...sent..., {"role": "assistant", "content": answer}]}`` dicts."""
        for line in self.export_lines(since, channel_id):
            yield json.loads(line)

    def counts(self) -> dict[str, int]:
        """Rows per table (for tests, benchmarks and operators' curiosity)."""
        with self._reader() as conn:
            return reads.table_counts(conn)


def _read_failed(location: Path | str, error: BaseException) -> StoreError:
    detail = " ".join(str(error).split()) or type(error).__name__
    return StoreError(f"{location}: reading failed: {detail}")


def _said_before_forget(rec: InteractionRecord, user_id: int, at: datetime) -> bool:
    """Whether ``rec`` holds a message by or naming ``user_id`` sent before their forget
    ``at``, or a summary naming them that stands for one: an answer begun after the forget
    whose process had not learned it yet. What they said after it is new, and stays."""
    for entry in filter(None, rec.context):
        if entry.author_id != user_id and user_id not in entry.named:
            continue
        sent = [entry.message_id] if entry.message_id is not None else entry.covers
        if any(snowflake_time(i) < at for i in sent):
            return True
    return False


def _exclusive(conn: Db, cache: mutations.NodeCache, work: Callable[[], Any]) -> Any:
    """Run ``work`` in a transaction that excludes every other writer (it deletes nodes)."""
    conn.dialect.begin_exclusive(conn)
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        cache.clear()
        raise
    return result
