"""What differs between the two databases the store runs on, and nothing else.

The SQL in ``writes``, ``reads`` and ``schema`` is written once, in the subset SQLite and
PostgreSQL share (``?`` placeholders, ``ON CONFLICT DO NOTHING``, ``RETURNING``); the few
things that cannot be written the same way (how a write transaction starts and excludes the
others, where the schema version lives, how deleted text leaves the disk, column types in DDL)
are methods of a :class:`Dialect`. Every connection the store uses carries its dialect as
``conn.dialect``, so the query modules never ask which database they are on.

This module is the SQLite dialect; ``bot.storage.postgres`` holds the PostgreSQL one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from bot.storage.errors import StoreError


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    rowcount: int
    description: Any

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection of either backend, in autocommit mode (transactions are explicit)."""

    dialect: Dialect

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...

    def close(self) -> None: ...


class Dialect:
    """SQLite: one writer at a time by ``BEGIN IMMEDIATE``; the version in ``user_version``."""

    name = "sqlite"
    # Errors that mean "a constraint refused the row" (a duplicate interaction id).
    integrity_errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    # Errors the database raises in a query (a locked file, a dropped connection): a read
    # turns them into StoreError, which every caller handles.
    database_errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    # A substring search function with (haystack, needle) arguments.
    find_function = "instr"

    def begin_write(self, conn: Db) -> None:
        """Start a transaction that adds and updates rows (never deletes nodes)."""
        conn.execute("BEGIN IMMEDIATE")

    def begin_exclusive(self, conn: Db) -> None:
        """Start a transaction that may delete nodes other writers' caches still name."""
        conn.execute("BEGIN IMMEDIATE")

    def changes_seen(self, conn: Db) -> int:
        """A number that changes whenever another connection may have deleted nodes."""
        return int(conn.execute("PRAGMA data_version").fetchone()[0])

    def note_deletions(self, conn: Db) -> None:
        """Called inside an exclusive transaction that deleted nodes (SQLite sees it anyway)."""

    def lock_message(self, conn: Db, message_id: int) -> None:
        """Serialise edits of one message across processes (SQLite has one writer anyway)."""

    def is_broken(self, conn: Db) -> bool:
        """The connection is gone (a file connection never goes)."""
        return False

    def is_retryable(self, error: BaseException) -> bool:
        """A failure that says nothing about the data (a deadlock between two writers)."""
        return False

    def unindexed(self, column: str) -> str:
        """The column in a form the planner will not pick an index for (keeps a scan's order)."""
        return f"+{column}"

    def ddl(self, statement: str) -> str:
        """A schema statement as this database spells it (migrations are written for SQLite)."""
        return statement

    # ------------------------------------------------------------------ migrations

    def prepare_migrations(self, conn: Db) -> None:
        """Create whatever bookkeeping the schema version needs (nothing: user_version)."""

    def begin_migration(self, conn: Db) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def schema_version(self, conn: Db) -> int:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def set_schema_version(self, conn: Db, number: int) -> None:
        conn.execute(f"PRAGMA user_version = {int(number)}")

    # ----------------------------------------------------------------- privacy

    def scrub(self, conn: Db) -> None:
        """Make deleted and rewritten text leave the disk (outside any transaction).

        After a rewrite the old text can survive in three places: freed pages (secure_delete
        zeroes them), WAL frames not yet checkpointed, and slack in pages still in use; VACUUM
        rebuilds the file from the live rows only, and the TRUNCATE checkpoints empty the WAL.
        """
        _checkpoint(conn)
        conn.execute("VACUUM")
        _checkpoint(conn)

    # ------------------------------------------------------------------- reading

    def stream(self, conn: Db, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        """Rows of a long query without holding them all in memory."""
        yield from conn.execute(sql, parameters)


SQLITE = Dialect()


class SqliteConnection(sqlite3.Connection):
    """``sqlite3.Connection`` that knows its dialect (a subclass: no cost per query)."""

    dialect: Dialect = SQLITE


def dialect_of(conn: Any) -> Dialect:
    """The connection's dialect; a bare ``sqlite3.Connection`` (tests, old callers) is SQLite."""
    return getattr(conn, "dialect", SQLITE)


def connect_sqlite(path: Path) -> SqliteConnection:
    """A connection in autocommit mode (transactions are explicit) with our pragmas."""
    conn = sqlite3.connect(
        path,
        isolation_level=None,
        check_same_thread=False,
        timeout=30.0,
        factory=SqliteConnection,
    )
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _checkpoint(conn: Db) -> None:
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise StoreError(
            "could not checkpoint the WAL (another process is reading the database); "
            "stop the bot and run forget-user again"
        )
