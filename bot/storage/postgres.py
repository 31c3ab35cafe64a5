"""The PostgreSQL dialect: the store shared by several bot processes (shards) on one server.

psycopg 3 in its synchronous form, on the store's writer thread: the store already keeps every
write off the event loop on one thread with one connection (group commits, savepoints per
record), and the CLI reads synchronously; the same design on PostgreSQL means one code path for
both databases instead of a second, async copy of every query.

What PostgreSQL changes:

- Several processes write at once. Writers add rows under a shared advisory lock; anything
  that deletes nodes (``forget-user``, retention) takes it exclusively and bumps an epoch, so
  each writer's node-id cache learns to forget, as SQLite's ``data_version`` tells it there.
- Two writers inserting the same new nodes in different orders can deadlock; PostgreSQL breaks
  the tie by failing one transaction, which the writer simply runs again.
- Columns are typed for real: SQLite's ``INTEGER`` is 64-bit, so it becomes ``BIGINT`` (Discord
  ids need it), and text compares byte-wise (``COLLATE "C"``) as in SQLite, so the fixed-width
  timestamps order the same.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from bot.config.store_url import redact_url, userinfo_problem
from bot.storage.dialect import Db, Dialect
from bot.storage.errors import StoreError

# Advisory lock keys (Discord message ids, also used as keys, are far above these).
_WRITE_LOCK = 7_461_001
_MIGRATION_LOCK = 7_461_002

_META = "threadwise_meta"
LOCK_TIMEOUT_MS = 30_000
IDLE_IN_TRANSACTION_MS = 60_000


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as error:  # pragma: no cover - psycopg is a dependency
        raise StoreError(
            "[storage] url: PostgreSQL needs the psycopg package (pip install 'psycopg[binary]')"
        ) from error
    return psycopg


class PostgresDialect(Dialect):
    name = "postgresql"
    find_function = "strpos"

    @functools.cached_property
    def integrity_errors(self) -> tuple[type[BaseException], ...]:  # type: ignore[override]
        return (_psycopg().errors.IntegrityError,)

    @functools.cached_property
    def database_errors(self) -> tuple[type[BaseException], ...]:  # type: ignore[override]
        return (_psycopg().Error,)

    def begin_write(self, conn: Db) -> None:
        conn.execute("BEGIN")
        conn.execute(f"SELECT pg_advisory_xact_lock_shared({_WRITE_LOCK})")

    def begin_exclusive(self, conn: Db) -> None:
        conn.execute("BEGIN")
        conn.execute(f"SELECT pg_advisory_xact_lock({_WRITE_LOCK})")

    def changes_seen(self, conn: Db) -> int:
        return int(conn.execute(f"SELECT epoch FROM {_META}").fetchone()[0])

    def note_deletions(self, conn: Db) -> None:
        conn.execute(f"UPDATE {_META} SET epoch = epoch + 1")

    def lock_message(self, conn: Db, message_id: int) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (message_id,))

    def is_broken(self, conn: Db) -> bool:
        return bool(conn.broken)  # type: ignore[attr-defined]

    def is_retryable(self, error: BaseException) -> bool:
        # 40001 serialization failure, 40P01 deadlock detected, 55P03 lock timeout.
        state = str(getattr(error, "sqlstate", "") or "")
        return state.startswith("40") or state == "55P03"

    def unindexed(self, column: str) -> str:
        return column

    def ddl(self, statement: str) -> str:
        return _ddl(statement)

    def prepare_migrations(self, conn: Db) -> None:
        conn.execute("BEGIN")
        try:
            conn.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {_META} (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE "
                "CHECK (only_row), schema_version BIGINT NOT NULL, epoch BIGINT NOT NULL)"
            )
            conn.execute(
                f"INSERT INTO {_META} (schema_version, epoch) VALUES (0, 0) ON CONFLICT DO NOTHING"
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def begin_migration(self, conn: Db) -> None:
        conn.execute("BEGIN")
        conn.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")

    def schema_version(self, conn: Db) -> int:
        row = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name = ?",
            (_META,),
        ).fetchone()
        if row is None:
            return 0
        return int(conn.execute(f"SELECT schema_version FROM {_META}").fetchone()[0])

    def set_schema_version(self, conn: Db, number: int) -> None:
        conn.execute(f"UPDATE {_META} SET schema_version = ?", (number,))

    def scrub(self, conn: Db) -> None:
        """Rewrite the tables that held the text, so dead row versions leave the data files.

        (PostgreSQL's own write-ahead log and any backups still hold the old bytes until they
        are recycled: an operator's retention policy, outside the store.)
        """
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "ORDER BY tablename"
            )
        ]
        # Every table of the store (later migrations add some), each rewritten from live rows.
        conn.execute("VACUUM FULL " + ", ".join(f'"{name}"' for name in tables))

    def stream(self, conn: Db, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        yield from conn.stream(sql, parameters)  # type: ignore[attr-defined]


POSTGRES = PostgresDialect()

_TYPES = (
    (re.compile(r"\bINTEGER PRIMARY KEY\b"), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"'),
    (re.compile(r"\)\s*WITHOUT ROWID\s*$"), ")"),
)


@functools.lru_cache(maxsize=256)
def _ddl(statement: str) -> str:
    for pattern, replacement in _TYPES:
        statement = pattern.sub(replacement, statement)
    return statement


@functools.lru_cache(maxsize=1024)
def _placeholders(sql: str) -> str:
    """``?`` to ``%s`` (the store's SQL has no literal ``?`` or ``%``)."""
    return sql.replace("?", "%s")


class PostgresConnection:
    """A psycopg connection speaking the store's SQL (``?`` placeholders) as SQLite's does."""

    dialect: Dialect = POSTGRES

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    @property
    def broken(self) -> bool:
        return bool(self._raw.closed or self._raw.broken)

    @property
    def in_transaction(self) -> bool:
        status = _psycopg().pq.TransactionStatus
        return self._raw.info.transaction_status in (status.INTRANS, status.INERROR, status.ACTIVE)

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        if parameters:
            return self._raw.execute(_placeholders(sql), parameters)
        return self._raw.execute(sql)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cursor = self._raw.cursor()
        cursor.executemany(_placeholders(sql), list(rows))
        return cursor

    def stream(self, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        """Rows in batches from a server-side cursor (the export may be larger than memory)."""
        with self._raw.transaction(), self._raw.cursor(name="threadwise_stream") as cursor:
            cursor.itersize = 2000
            cursor.execute(_placeholders(sql), parameters)
            yield from cursor

    def close(self) -> None:
        self._raw.close()


def connect_postgres(url: str, *, writer: bool = False) -> PostgresConnection:
    """An autocommit connection (transactions are explicit, as on SQLite)."""
    problem = userinfo_problem(url)
    if problem:  # libpq would take part of the password for the host, and name it in errors
        raise StoreError(f"{redact_url(url)}: {problem}")
    psycopg = _psycopg()
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        raise StoreError(f"{redact_url(url)}: cannot connect to PostgreSQL: {detail}") from error
    # No wait is forever: a lock held by a stuck session fails the transaction (which the
    # writer reports, or runs again) instead of stalling every answer's record behind it.
    raw.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
    if writer:  # (a reader streaming an export may wait on its consumer)
        raw.execute(f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}")
    return PostgresConnection(raw)
