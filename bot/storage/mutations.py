"""Everything that changes the database, run only on the writer thread's connection.

Each function expects to be called inside a transaction the caller opened (the writer wraps
every job in one), so a failure anywhere rolls the whole change back: an interaction is either
recorded with all its rows or not at all.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime, timedelta

from bot.storage.dialect import Db
from bot.storage.errors import StoreError
from bot.storage.models import REMOVED, ForgetResult, InteractionRecord, PruneResult
from bot.storage.names import (
    accent_free,
    name_spellings,
    names_pattern,
    redact_names_in,
    redact_text,
)
from bot.storage.nodes import canonical_json, node_hash, redact_message
from bot.storage.timefmt import now_db, to_db

NODE_CACHE_LIMIT = 50_000


class NodeCache:
    """hash -> node id for nodes this connection knows exist, so shared nodes cost no query;
    also Discord message ids known to have a version row (value 0), for the same reason.

    Ids added inside a transaction are tracked as pending so a rollback can forget them (the
    rows they name are gone); anything that deletes nodes clears the cache.
    """

    def __init__(self) -> None:
        self._ids: dict[bytes | int, int] = {}
        self._pending: list[bytes | int] = []
        self._data_version: int | None = None

    def sync(self, conn: Db) -> None:
        """Forget everything when another connection (``forget-user`` run from the command
        line while the bot is up, a second bot on the store) may have deleted the nodes our ids
        name since we last looked. Call it inside the write transaction."""
        version = conn.dialect.changes_seen(conn)
        if version != self._data_version:
            self.clear()
            self._data_version = version

    def get(self, key: bytes | int) -> int | None:
        return self._ids.get(key)

    def add(self, key: bytes | int, node_id: int) -> None:
        if len(self._ids) >= NODE_CACHE_LIMIT:
            self._ids.clear()
        self._ids[key] = node_id
        self._pending.append(key)

    def mark(self) -> int:
        return len(self._pending)

    def rollback_to(self, mark: int) -> None:
        for key in self._pending[mark:]:
            self._ids.pop(key, None)
        del self._pending[mark:]

    def committed(self) -> None:
        self._pending.clear()

    def clear(self) -> None:
        self._ids.clear()
        self._pending.clear()


@functools.lru_cache(maxsize=4096)
def _reasons_json(reasons: tuple[str, ...]) -> str:
    """Reasons repeat endlessly ("linear", "reference via ..."): encode each list once."""
    return json.dumps(list(reasons), ensure_ascii=False)


def node_id_for(conn: Db, cache: NodeCache, text: str) -> int:
    key = node_hash(text)
    found = cache.get(key)
    if found is not None:
        return found
    row = conn.execute("SELECT id FROM nodes WHERE hash = ?", (key,)).fetchone()
    if row is None:
        # Another process may insert the same node meanwhile (shards sharing a server): then
        # nothing is returned and its row is read back.
        row = conn.execute(
            "INSERT INTO nodes (hash, json) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING "
            "RETURNING id",
            (key, text),
        ).fetchone()
        if row is None:
            row = conn.execute("SELECT id FROM nodes WHERE hash = ?", (key,)).fetchone()
    node_id = int(row[0])
    cache.add(key, node_id)
    return node_id


def insert_interaction(conn: Db, cache: NodeCache, rec: InteractionRecord) -> int:
    """Write one interaction and all its rows; returns its ``seq``. An interaction already
    recorded (the record line tried again after the store took it but failed to answer, or to
    take back what came meanwhile) is left as it is: one copy, whatever the attempts."""
    found = conn.execute("SELECT seq FROM interactions WHERE id = ?", (rec.id,)).fetchone()
    if found is not None:
        return int(found[0])
    node_ids = [node_id_for(conn, cache, canonical_json(m)) for m in rec.request_messages]
    try:
        row = conn.execute(
            "INSERT INTO interactions (id, guild_id, channel_id, trigger_message_id, "
            "trigger_author_id, started_at, ended_at, model, parameters, answer, usage, "
            "latency_seconds, outcome, error, message_count, work_log_count, article_count) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            (
                rec.id,
                rec.guild_id,
                rec.channel_id,
                rec.trigger_message_id,
                rec.trigger_author_id,
                to_db(rec.started_at),
                to_db(rec.ended_at),
                rec.model,
                json.dumps(rec.parameters, ensure_ascii=False, separators=(",", ":")),
                rec.answer,
                json.dumps(rec.usage, separators=(",", ":")),
                rec.latency_seconds,
                rec.outcome,
                rec.error,
                len(rec.request_messages),
                len(rec.work_log),
                len(rec.articles),
            ),
        ).fetchone()
    except conn.dialect.integrity_errors as error:
        # SQLite names the column, PostgreSQL the constraint.
        if "interactions.id" in str(error) or "interactions_id_key" in str(error):
            raise StoreError(f"interaction {rec.id} is already recorded") from error
        raise
    seq = int(row[0])
    if rec.continues is not None or rec.cut_at is not None:  # the memory's columns
        conn.execute(
            "UPDATE interactions SET continues = ?, cut_at = ? WHERE seq = ?",
            (rec.continues, rec.cut_at, seq),
        )
    context_rows = []
    for position, (node_id, entry) in enumerate(zip(node_ids, rec.context, strict=True)):
        if entry is None:
            context_rows.append((seq, position, node_id, None, None, None, None, None))
        else:
            reasons = _reasons_json(tuple(entry.reasons)) if entry.reasons else None
            context_rows.append(
                (
                    seq,
                    position,
                    node_id,
                    entry.message_id,
                    entry.author_id,
                    entry.name,
                    reasons,
                    entry.tokens,
                )
            )
    conn.executemany(
        "INSERT INTO context (seq, position, node_id, message_id, author_id, name, reasons, "
        "tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        context_rows,
    )
    named_rows = [
        (seq, position, user_id, name)
        for position, entry in enumerate(rec.context)
        if entry is not None
        for user_id, name in entry.named.items()
    ]
    if named_rows:
        conn.executemany("INSERT INTO context_names VALUES (?, ?, ?, ?)", named_rows)
    covered_rows = [
        (seq, position, message_id)
        for position, entry in enumerate(rec.context)
        if entry is not None
        for message_id in sorted(set(entry.covers))
    ]
    if covered_rows:
        conn.executemany("INSERT INTO summary_messages VALUES (?, ?, ?)", covered_rows)
    people_rows = [
        (seq, user_id, name)
        for user_id, names in rec.people.items()
        for name in sorted(set(names))
        if name
    ]
    if people_rows:
        conn.executemany("INSERT INTO person_names VALUES (?, ?, ?)", people_rows)
    if rec.answer_message_ids:
        conn.executemany(
            "INSERT INTO answer_messages VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(mid, seq, pos) for pos, mid in enumerate(rec.answer_message_ids)],
        )
    if rec.work_log:
        conn.executemany(
            "INSERT INTO work_log VALUES (?, ?, ?, ?, ?, ?)",
            [
                (seq, pos, e.action, e.detail, e.status, e.count)
                for pos, e in enumerate(rec.work_log)
            ],
        )
    if rec.articles:
        conn.executemany(
            "INSERT INTO articles VALUES (?, ?, ?, ?, ?)",
            [(seq, pos, a.url, a.status, a.reason) for pos, a in enumerate(rec.articles)],
        )
    # Version 1 of every Discord message is the node the bot first sent for it; later sends
    # of the same message leave it alone (ON CONFLICT DO NOTHING on the primary key).
    recorded = to_db(rec.started_at)
    seen = []
    for node_id, entry in zip(node_ids, rec.context, strict=True):
        if entry is None or entry.message_id is None or cache.get(entry.message_id) is not None:
            continue
        seen.append((entry.message_id, rec.channel_id, entry.author_id, node_id, recorded))
        cache.add(entry.message_id, 0)
    if seen:
        conn.executemany(
            "INSERT INTO message_versions (message_id, version, channel_id, "
            "author_id, node_id, content, state, superseded_by, edited_at, recorded_at) "
            "VALUES (?, 1, ?, ?, ?, NULL, 'active', NULL, NULL, ?) ON CONFLICT DO NOTHING",
            seen,
        )
    return seq


def record_edit(
    conn: Db,
    message_id: int,
    channel_id: int | None,
    author_id: int | None,
    new_content: str,
    edited_at: datetime,
) -> int:
    """Add a version; the current one becomes superseded and points at it. Returns its number,
    0 when the store holds no version of the message: then nothing is written.

    Only messages the bot recorded (a trigger, a context, an answer) have their edits kept:
    the gateway sends edits of every message in every channel the bot sees, and storing each
    in full would grow without bound and keep text from channels the bot was told to ignore.
    A message recorded later starts from its text at that time.

    An edit event may come without its author; the earlier versions know who wrote it, and
    ``forget-user`` finds versions by author.
    """
    conn.dialect.lock_message(conn, message_id)
    if not _holds_message(conn, message_id):
        return 0
    if author_id is None:
        known = conn.execute(
            "SELECT author_id FROM message_versions WHERE message_id = ? AND author_id IS NOT NULL "
            "LIMIT 1",
            (message_id,),
        ).fetchone()
        author_id = int(known[0]) if known else None
    # Another process may be adding this message's first version right now (recording a
    # context that holds it): its row is invisible until it commits, so the number read here
    # can be taken. The insert then does nothing, and the next number is read again.
    for _ in range(5):
        row = conn.execute(
            "SELECT MAX(version) FROM message_versions WHERE message_id = ?", (message_id,)
        ).fetchone()
        new_version = int(row[0] or 0) + 1
        cursor = conn.execute(
            "INSERT INTO message_versions (message_id, version, channel_id, author_id, node_id, "
            "content, state, superseded_by, edited_at, recorded_at) "
            "VALUES (?, ?, ?, ?, NULL, ?, 'active', NULL, ?, ?) ON CONFLICT DO NOTHING",
            (
                message_id,
                new_version,
                channel_id,
                author_id,
                new_content,
                to_db(edited_at),
                now_db(),
            ),
        )
        if cursor.rowcount:
            break
    else:
        raise StoreError(f"message {message_id}: could not number its new version")
    conn.execute(
        "UPDATE message_versions SET state = 'superseded', superseded_by = ? "
        "WHERE message_id = ? AND state = 'active' AND version < ?",
        (new_version, message_id, new_version),
    )
    return new_version


def _holds_message(conn: Db, message_id: int) -> bool:
    """Whether the message has a version, counting one another process is writing right now.

    That first version (a context being recorded) is invisible until it commits, so a plain
    read would drop the edit. A placeholder first version waits for it on the primary key:
    taken means the message is held; written means it is not, and it is removed at once.
    """
    held = conn.execute(
        "SELECT 1 FROM message_versions WHERE message_id = ? LIMIT 1", (message_id,)
    ).fetchone()
    if held is not None:
        return True
    probe = conn.execute(
        "INSERT INTO message_versions (message_id, version, channel_id, author_id, node_id, "
        "content, state, superseded_by, edited_at, recorded_at) "
        "VALUES (?, 1, NULL, NULL, NULL, NULL, 'invalidated', NULL, NULL, ?) "
        "ON CONFLICT DO NOTHING",
        (message_id, now_db()),
    )
    if probe.rowcount:
        conn.execute(
            "DELETE FROM message_versions WHERE message_id = ? AND version = 1 AND content IS NULL "
            "AND state = 'invalidated' AND edited_at IS NULL",
            (message_id,),
        )
        return False
    return True


def record_delete(conn: Db, message_id: int) -> bool:
    """Invalidate the message's current version; returns whether the store knew the message.

    An unknown message still gets an (empty) invalidated version, so that the deletion is known
    if the message turns up later, e.g. in a cached context.
    """
    cursor = conn.execute(
        "UPDATE message_versions SET state = 'invalidated' "
        "WHERE message_id = ? AND state = 'active'",
        (message_id,),
    )
    conn.execute("DELETE FROM seals WHERE message_id = ?", (message_id,))  # un-sealed
    if cursor.rowcount:
        return True
    known = conn.execute(
        "SELECT 1 FROM message_versions WHERE message_id = ? LIMIT 1", (message_id,)
    ).fetchone()
    if known is None:
        conn.dialect.lock_message(conn, message_id)
        conn.execute(
            "INSERT INTO message_versions (message_id, version, channel_id, author_id, node_id, "
            "content, state, superseded_by, edited_at, recorded_at) "
            "VALUES (?, 1, NULL, NULL, NULL, NULL, 'invalidated', NULL, NULL, ?) "
            "ON CONFLICT DO NOTHING",
            (message_id, now_db()),
        )
    return known is not None


def delete_orphan_nodes(conn: Db) -> int:
    cursor = conn.execute(
        "DELETE FROM nodes WHERE id NOT IN (SELECT node_id FROM context) "
        "AND id NOT IN (SELECT node_id FROM message_versions WHERE node_id IS NOT NULL)"
    )
    conn.dialect.note_deletions(conn)
    return cursor.rowcount


# Links as they appear in stored message JSON (a quote or backslash ends them).
LINK = re.compile(r"https?://[^\s\"'<>\\]+")

# The message ids whose text goes with the person being forgotten: the bot's answers to them.
FORGOTTEN = "CREATE TEMP TABLE IF NOT EXISTS forgotten (message_id INTEGER PRIMARY KEY)"
# A row of theirs: written by them, or one of those answers.
THEIRS = "(author_id = ? OR message_id IN (SELECT message_id FROM forgotten))"


def repoint_theirs(table: str) -> str:
    """Their rows of ``table`` (``context``, ``message_versions``) moved from one node to its
    redacted copy; run once per node, so it must find them by the node's index."""
    return f"UPDATE {table} SET node_id = ? WHERE {THEIRS} AND node_id = ?"


def forget_user(conn: Db, cache: NodeCache, user_id: int, *, stamp: bool = True) -> ForgetResult:
    """Replace a person's text everywhere; their interactions keep only the shell. ``stamp``
    (forget-user itself) says when in ``forgotten_users``; a late record taken back after it
    (``Store.record``) leaves that moment as it is: what they said after it stays new.

    The caller must checkpoint and VACUUM afterwards (outside the transaction) so that the old
    bytes leave the file and the WAL, not only the tables.
    """
    cache.clear()
    names = _names_of(conn, user_id)
    shells = [
        int(seq)
        for (seq,) in conn.execute(
            "SELECT seq FROM interactions WHERE trigger_author_id = ? AND removed = 0", (user_id,)
        )
    ]
    for seq in shells:
        for table in ("context", "work_log", "articles"):
            conn.execute(f"DELETE FROM {table} WHERE seq = ?", (seq,))
        conn.execute(
            "UPDATE interactions SET answer = NULL, error = NULL, message_count = 0, "
            "work_log_count = 0, article_count = 0, removed = 1 WHERE seq = ?",
            (seq,),
        )
    # A /catchup summary retells everyone it drew on (bot.answering.catchup): it goes with any
    # of them, as a cut's summary does; so does an answer that passed on its catch_up tool's
    # summaries (bot.answering.catchup_tool), whose result names them (the result itself goes
    # with the summaries, below).
    conn.execute(
        "UPDATE interactions SET answer = ? WHERE answer IS NOT NULL AND ("
        "(seq IN (SELECT seq FROM context WHERE author_id = ?) "
        "AND seq IN (SELECT seq FROM work_log WHERE action = 'catchup')) "
        "OR (seq IN (SELECT c.seq FROM context c JOIN context_names n "
        "ON n.seq = c.seq AND n.position = c.position "
        "WHERE n.user_id = ? AND c.message_id IS NULL) "
        "AND seq IN (SELECT seq FROM work_log WHERE action = 'catchup_tool')))",
        (REMOVED, user_id, user_id),
    )
    # Their messages, and the bot's answers to them (which quote and paraphrase them) wherever
    # those answers reappear as context of later interactions.
    conn.execute(conn.dialect.ddl(FORGOTTEN))
    conn.execute("DELETE FROM forgotten")
    conn.execute(
        "INSERT INTO forgotten SELECT DISTINCT message_id FROM answer_messages WHERE seq IN "
        "(SELECT seq FROM interactions WHERE trigger_author_id = ?)",
        (user_id,),
    )
    old_nodes = {
        int(node_id)
        for (node_id,) in conn.execute(
            f"SELECT node_id FROM context WHERE {THEIRS} UNION "
            f"SELECT node_id FROM message_versions WHERE {THEIRS} AND node_id IS NOT NULL",
            (user_id, user_id),
        )
    }
    context_changed = 0
    versions_changed = 0
    links: set[str] = set()
    for old in sorted(old_nodes):
        (text,) = conn.execute("SELECT json FROM nodes WHERE id = ?", (old,)).fetchone()
        links.update(LINK.findall(text))
        new = node_id_for(conn, cache, canonical_json(redact_message(json.loads(text))))
        if new == old:
            continue  # already redacted by an earlier run: nothing to report again
        context_changed += conn.execute(repoint_theirs("context"), (new, user_id, old)).rowcount
        versions_changed += conn.execute(
            repoint_theirs("message_versions"), (new, user_id, old)
        ).rowcount
    conn.execute(
        "UPDATE context SET name = ? WHERE author_id = ? AND name IS NOT NULL", (REMOVED, user_id)
    )
    # Every version of those messages, also versions recorded without an author.
    versions_changed += conn.execute(
        "UPDATE message_versions SET content = ? WHERE content IS NOT NULL AND content != ? "
        f"AND message_id IN (SELECT message_id FROM message_versions WHERE {THEIRS})",
        (REMOVED, REMOVED, user_id),
    ).rowcount
    conn.execute("DELETE FROM forgotten")
    # Links they posted also live in other interactions' article list and work log.
    for link in sorted(links, key=len, reverse=True):
        conn.execute("UPDATE articles SET url = ? WHERE url = ?", (REMOVED, link))
        conn.execute(
            "UPDATE work_log SET detail = replace(detail, ?, ?) "
            f"WHERE {conn.dialect.find_function}(detail, ?) > 0",
            (link, REMOVED, link),
        )
    # A follow-up's explanation names whom the bot was talking with (see
    # conversation.selection.follow_model).
    for name in sorted(names, key=len, reverse=True):
        shown = f"conversation with {name}, score"
        conn.execute(
            "UPDATE work_log SET detail = replace(detail, ?, ?) "
            f"WHERE action = 'followed' AND {conn.dialect.find_function}(detail, ?) > 0",
            (shown, f"conversation with {REMOVED}, score", shown),
        )
    context_changed += _drop_summaries(conn, cache, user_id)
    context_changed += _redact_names(conn, cache, user_id, names)
    removed = delete_orphan_nodes(conn)
    cache.clear()
    # Running bot processes poll this row and drop what they remember of the person.
    if stamp:
        conn.execute(
            "INSERT INTO forgotten_users (user_id, forgotten_at) VALUES (?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET forgotten_at = excluded.forgotten_at",
            (user_id, now_db()),
        )
    return ForgetResult(
        context_messages=context_changed,
        versions=versions_changed,
        interactions_emptied=len(shells),
        nodes_removed=removed,
    )


def _drop_summaries(conn: Db, cache: NodeCache, user_id: int) -> int:
    """Every summary that drew on the person's messages (its row names them among the people
    it stands for: ``conversation.memory.summary``) replaced by the placeholder: a summary
    cannot be told apart into what they said and what others did, so none of it is kept.
    Returns the rows changed."""
    summaries = conn.execute(
        "SELECT DISTINCT c.node_id FROM context c JOIN context_names n "
        "ON n.seq = c.seq AND n.position = c.position "
        "WHERE n.user_id = ? AND c.message_id IS NULL",
        (user_id,),
    ).fetchall()
    return redact_summaries(conn, cache, [int(node_id) for (node_id,) in summaries])


def redact_summaries(conn: Db, cache: NodeCache, node_ids: list[int]) -> int:
    """These summaries' rows moved to the placeholder's node; returns the rows changed."""
    changed = 0
    for old in node_ids:
        (text,) = conn.execute("SELECT json FROM nodes WHERE id = ?", (old,)).fetchone()
        new = node_id_for(conn, cache, canonical_json(redact_message(json.loads(text))))
        if new != old:
            changed += conn.execute(
                "UPDATE context SET node_id = ? WHERE node_id = ? AND message_id IS NULL",
                (new, old),
            ).rowcount
    return changed


def _names_of(conn: Db, user_id: int) -> set[str]:
    """Every name the person was shown under: on their messages, in others' messages, and as
    the ``name`` field their own messages were sent with (the OpenAI-safe spelling)."""
    rows = conn.execute(
        "SELECT name FROM context WHERE author_id = ? AND name IS NOT NULL "
        "UNION SELECT name FROM context_names WHERE user_id = ? "
        "UNION SELECT name FROM person_names WHERE user_id = ?",
        (user_id, user_id, user_id),
    )
    names = {name for (name,) in rows if name and name != REMOVED}
    for (text,) in conn.execute(
        "SELECT json FROM nodes WHERE id IN (SELECT node_id FROM context WHERE author_id = ? "
        "UNION SELECT node_id FROM message_versions WHERE author_id = ? AND node_id IS NOT NULL)",
        (user_id, user_id),
    ):
        name = json.loads(text).get("name")
        if isinstance(name, str) and name != REMOVED:
            names.add(name)
    return names


def _redact_names(conn: Db, cache: NodeCache, user_id: int, names: set[str]) -> int:
    """The person's name out of everything else the store keeps; returns the context rows
    changed.

    Every stored message (others' messages, triggers, the bot's answers as later context),
    every recorded edit and every answer is searched, and every recorded name is removed as
    shown. In the conversations the person took part in (``person_names``) and the follow-ups
    holding the bot's answer in one of them, in messages that named them by id (a reply header,
    a mention: ``context_names``) and in the bot's own words, a name is also matched ignoring
    case and accents ("chloe" for "Chloé") when it has at least ``FREE_TEXT_MIN_LENGTH``
    characters (see :mod:`bot.storage.names`). Elsewhere that loose match would take a common
    word ("will", "mark") out of every message in the store, for good.
    """
    exact = names_pattern(names, free_text=False, user_id=user_id)
    loose = names_pattern(names, free_text=True)
    id_hint = re.compile(rf"(?<!\d){user_id}(?!\d)")
    by_id = {
        int(node_id)
        for (node_id,) in conn.execute(
            "SELECT c.node_id FROM context_names n JOIN context c "
            "ON c.seq = n.seq AND c.position = n.position WHERE n.user_id = ?",
            (user_id,),
        )
    }
    # The conversations they took part in: a message of theirs was in it, or it recorded them;
    # and the follow-ups that carry one on, holding the bot's answer to it (a question asked
    # after that answer, though their own message is no longer in its context: which earlier
    # messages make a context changes with the selection, the conversation does not). A
    # context that only shares another message with one of theirs stays elsewhere.
    took_part = (
        "SELECT seq FROM context WHERE author_id = ? UNION SELECT seq FROM person_names "
        "WHERE user_id = ?"
    )
    near_seqs = (
        f"{took_part} UNION SELECT seq FROM context WHERE message_id IN (SELECT message_id "
        f"FROM answer_messages WHERE seq IN ({took_part}))"
    )
    near_rows = conn.execute(
        f"SELECT seq, node_id, message_id FROM context WHERE seq IN ({near_seqs})",
        (user_id, user_id, user_id, user_id),
    ).fetchall()
    near = by_id | {int(node_id) for _, node_id, _ in near_rows}
    near_answers = {int(seq) for seq, _, _ in near_rows}
    near_messages = {int(m) for _, _, m in near_rows if m is not None}
    loose_hint = _hint_pattern(name_spellings(names, free_text=True), ignore_case=True)
    exact_hint = _hint_pattern(name_spellings(names, free_text=False), ignore_case=False)

    def may_name(text: str) -> bool:
        if id_hint.search(text) or (loose_hint is not None and loose_hint.search(text)):
            return True
        if '"tool_calls"' in text:  # arguments may escape a name ("Chlo\\u00e9"): parsed
            return True
        return (
            text.startswith(ASSISTANT_JSON)
            and exact_hint is not None
            and bool(exact_hint.search(text))
        )

    # The whole scan first: the rows are then rewritten on the same connection.
    candidates = by_id | {
        int(node_id)
        for node_id, text in conn.dialect.stream(conn, "SELECT id, json FROM nodes", ())
        if may_name(text)
    }
    changed = 0
    for old in sorted(candidates):
        (text,) = conn.execute("SELECT json FROM nodes WHERE id = ?", (old,)).fetchone()
        message = json.loads(text)
        redacted = redact_names_in(message, exact)
        if old in near or message.get("role") == "assistant":
            redacted = redact_names_in(redacted, loose)
        if redacted == message:
            continue
        new = node_id_for(conn, cache, canonical_json(redacted))
        changed += conn.execute(
            "UPDATE context SET node_id = ? WHERE node_id = ?", (new, old)
        ).rowcount
        conn.execute("UPDATE message_versions SET node_id = ? WHERE node_id = ?", (new, old))

    def rewrite(table: str, column: str, keys: tuple[str, ...], near_keys: set[int]) -> None:
        """The column's texts that may hold them, redacted: exactly everywhere, loosely where
        the row's first key is in ``near_keys``."""
        select = f"SELECT {column}, {', '.join(keys)} FROM {table} WHERE {column} IS NOT NULL"
        rows = []
        for text, *key in conn.dialect.stream(conn, select, ()):
            if may_name(text) or (exact_hint is not None and exact_hint.search(text)):
                new = redact_text(redact_text(text, exact), loose if key[0] in near_keys else None)
                if new != text:
                    rows.append((new, *key))
        where = " AND ".join(f"{key} = ?" for key in keys)
        conn.executemany(f"UPDATE {table} SET {column} = ? WHERE {where}", rows)

    # The bot's answers and errors, recorded edits, and the work log's lines (a tool call's
    # arguments as the model wrote them, the error a tool gave).
    rewrite("interactions", "answer", ("seq",), near_answers)
    rewrite("interactions", "error", ("seq",), near_answers)
    rewrite("message_versions", "content", ("message_id", "version"), near_messages)
    rewrite("work_log", "detail", ("seq", "position"), near_answers)
    conn.execute("DELETE FROM context_names WHERE user_id = ?", (user_id,))
    conn.execute("DELETE FROM person_names WHERE user_id = ?", (user_id,))
    return changed


ASSISTANT_JSON = '{"role":"assistant"'


def _hint_pattern(spellings: list[str], *, ignore_case: bool) -> re.Pattern[str] | None:
    """A quick test for stored text that might hold a name: no word boundaries (in JSON an
    escape such as a newline's ``n`` may stand right before it) and each spelling also as JSON
    escapes it; the exact match runs on the parsed text."""
    if not spellings:
        return None
    escaped = {canonical_json({"n": s})[6:-2] for s in spellings}
    spelled = accent_free if ignore_case else re.escape
    alternatives = "|".join(spelled(s) for s in sorted({*spellings, *escaped}, key=len)[::-1])
    return re.compile(alternatives, re.IGNORECASE if ignore_case else 0)


def prune(conn: Db, cache: NodeCache, older_than_days: int) -> PruneResult:
    """Drop interactions (and versions) older than the cut-off, then the nodes nobody uses."""
    if older_than_days <= 0:
        raise ValueError(f"older_than_days must be positive, got {older_than_days}")
    cutoff = to_db(datetime.now(UTC) - timedelta(days=older_than_days))
    cache.clear()
    interactions = conn.execute("DELETE FROM interactions WHERE started_at < ?", (cutoff,)).rowcount
    versions = conn.execute(
        "DELETE FROM message_versions WHERE recorded_at < ?", (cutoff,)
    ).rowcount
    nodes = delete_orphan_nodes(conn)
    cache.clear()
    return PruneResult(interactions=interactions, nodes=nodes, versions=versions)


def record_seal(conn: Db, channel_id: int, message_id: int) -> None:
    """A ``/fresh`` seal posted in the channel (kept until the seal message is deleted)."""
    conn.execute(
        "INSERT INTO seals (channel_id, message_id, sealed_at) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (channel_id, message_id, now_db()),
    )
