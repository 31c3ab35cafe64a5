"""The database schema as an ordered list of migrations, applied at start-up.

The database remembers how many migrations it has seen (SQLite: ``PRAGMA user_version``;
PostgreSQL: a one-row table); each migration runs in its own transaction together with the
version bump, so a crash mid-migration leaves the database at the previous version, and the next
start simply tries again. Migrations are written in SQLite's spelling; the dialect translates
the column types for PostgreSQL. Never edit a released migration: append a new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.storage.dialect import dialect_of
from bot.storage.errors import StoreError

Migration = Sequence[str]

# Child rows reference interactions by their integer ``seq`` (8 bytes at most) rather than the
# 36-character uuid: with ~30 context rows per interaction this halves the file size.
MIGRATIONS: tuple[Migration, ...] = (
    (
        """CREATE TABLE nodes (
            id INTEGER PRIMARY KEY,
            hash BLOB NOT NULL UNIQUE,
            json TEXT NOT NULL
        )""",
        """CREATE TABLE interactions (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            guild_id INTEGER,
            channel_id INTEGER NOT NULL,
            trigger_message_id INTEGER NOT NULL,
            trigger_author_id INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT NOT NULL,
            model TEXT NOT NULL,
            parameters TEXT NOT NULL,
            answer TEXT,
            usage TEXT NOT NULL,
            latency_seconds REAL,
            outcome TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'partial')),
            error TEXT,
            message_count INTEGER NOT NULL,
            work_log_count INTEGER NOT NULL,
            article_count INTEGER NOT NULL,
            removed INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX interactions_trigger ON interactions (trigger_message_id)",
        "CREATE INDEX interactions_started ON interactions (started_at)",
        "CREATE INDEX interactions_author ON interactions (trigger_author_id)",
        """CREATE TABLE context (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            node_id INTEGER NOT NULL REFERENCES nodes (id),
            message_id INTEGER,
            author_id INTEGER,
            name TEXT,
            reasons TEXT,
            PRIMARY KEY (seq, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE answer_messages (
            message_id INTEGER NOT NULL,
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (message_id, seq)
        ) WITHOUT ROWID""",
        "CREATE INDEX answer_messages_seq ON answer_messages (seq)",
        """CREATE TABLE work_log (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('success', 'failure')),
            count INTEGER,
            PRIMARY KEY (seq, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE articles (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            url TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            PRIMARY KEY (seq, position)
        ) WITHOUT ROWID""",
        # Version 1 of a message is the node the bot first sent the model for it; later versions
        # come from Discord edits and carry their raw content.
        """CREATE TABLE message_versions (
            message_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            channel_id INTEGER,
            author_id INTEGER,
            node_id INTEGER REFERENCES nodes (id),
            content TEXT,
            state TEXT NOT NULL CHECK (state IN ('active', 'superseded', 'invalidated')),
            superseded_by INTEGER,
            edited_at TEXT,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (message_id, version)
        ) WITHOUT ROWID""",
    ),
    (
        # What each sent message cost in tokens (the prompt's token budget), and what was
        # learned about each model: its real tokens per estimated token, and a context window
        # smaller than configured when a server said so. ("window" is quoted for PostgreSQL,
        # which reserves the word; SQLite files made before the quotes have the same column.)
        "ALTER TABLE context ADD COLUMN tokens INTEGER",
        """CREATE TABLE model_limits (
            model TEXT PRIMARY KEY,
            ratio REAL NOT NULL,
            samples INTEGER NOT NULL,
            "window" INTEGER,
            updated_at TEXT NOT NULL
        )""",
    ),
    # Who a request message names besides its author (reply target, mentions), by id, with
    # the name it showed: forgetting a person finds their name in everyone else's messages.
    (
        """CREATE TABLE context_names (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            user_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            PRIMARY KEY (seq, position, user_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX context_names_user ON context_names (user_id)",
    ),
    # The [model] context_tokens in force when a window was learned: an operator who changes
    # it (the server was given a larger window) starts from the configured one again.
    ("ALTER TABLE model_limits ADD COLUMN window_for INTEGER",),
    # Every name a person in an interaction goes by (nickname, global name, username), not
    # only the one shown: forget-user looks for all of them in what others wrote. Kept per
    # interaction so that retention drops them with it.
    (
        """CREATE TABLE person_names (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            user_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            PRIMARY KEY (seq, user_id, name)
        ) WITHOUT ROWID""",
        "CREATE INDEX person_names_user ON person_names (user_id)",
    ),
    # Rows by the node they send. Forget-user moves every row of each rewritten node to its
    # redacted copy, one UPDATE per node, and deleting a node (retention, forget-user) has the
    # database look for rows still naming it (the foreign key): each was a scan of the whole
    # table (bench/store.py). author_id and message_id stay unindexed: what reads them runs once
    # per forget-user, which indexes on them left no faster (3k and 30k interactions) for 12-15%
    # more file each.
    (
        "CREATE INDEX context_node ON context (node_id)",
        "CREATE INDEX message_versions_node ON message_versions (node_id)",
    ),
    # What the conversation memory added to a request, as columns rather than work-log lines
    # read back by regex (``conversation.memory.record``): the request it starts with, where its
    # conversation was last cut (NULL in rows of before: the work log's line is read then), and
    # the Discord messages each summary stands for, so a deletion of one finds the summaries
    # to replace (by the index on message_id) and a request read back drops them.
    (
        "ALTER TABLE interactions ADD COLUMN continues INTEGER",
        "ALTER TABLE interactions ADD COLUMN cut_at INTEGER",
        """CREATE TABLE summary_messages (
            seq INTEGER NOT NULL REFERENCES interactions (seq) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            message_id INTEGER NOT NULL,
            PRIMARY KEY (seq, position, message_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX summary_messages_message ON summary_messages (message_id)",
    ),
    # What every running bot process must learn from the store, not from its own events:
    # forget-user run elsewhere leaves the person's id and when (each process polls it and
    # drops what it remembers of them: bot.answering.forgotten), and each /fresh seal (the
    # bot's message the command made: conversation.selection.seal), so that following after a
    # restart and a cold cache honour it; a seal's deletion removes its row (un-seals).
    (
        """CREATE TABLE forgotten_users (
            user_id INTEGER NOT NULL,
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (user_id)
        )""",
        "CREATE INDEX forgotten_users_at ON forgotten_users (forgotten_at)",
        """CREATE TABLE seals (
            channel_id INTEGER NOT NULL,
            message_id INTEGER NOT NULL,
            sealed_at TEXT NOT NULL,
            PRIMARY KEY (channel_id, message_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX seals_message ON seals (message_id)",
    ),
    # A deletion in Discord looks up the records holding the message (bot.storage.deletions):
    # one indexed look per deletion event, most of them for messages the bot never read.
    ("CREATE INDEX context_message ON context (message_id)",),
)


def schema_version(conn: Any) -> int:
    return dialect_of(conn).schema_version(conn)


def migrate(conn: Any, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database up to ``len(migrations)``; returns how many migrations were applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``) so that each migration is
    exactly one explicit transaction.
    """
    dialect = dialect_of(conn)
    dialect.prepare_migrations(conn)
    current = dialect.schema_version(conn)
    if current > len(migrations):
        raise StoreError(
            f"database schema version {current} is newer than this program knows "
            f"({len(migrations)}); upgrade threadwise or use another [storage] path"
        )
    applied = 0
    for number, statements in enumerate(migrations[current:], start=current + 1):
        dialect.begin_migration(conn)
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            if dialect.schema_version(conn) >= number:
                conn.execute("ROLLBACK")
                continue
            for statement in statements:
                conn.execute(dialect.ddl(statement))
            dialect.set_schema_version(conn, number)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied += 1
    return applied
