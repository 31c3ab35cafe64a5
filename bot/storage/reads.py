"""Queries that only read: rebuilding records, finding interactions, versions, the export.

They run on short-lived connections of their own (WAL lets them read while the writer writes),
so the CLI can use them synchronously, even against the file of a running bot.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from bot.storage.dialect import Db
from bot.storage.errors import StoreError
from bot.storage.models import (
    REMOVED,
    ArticleEntry,
    ContextEntry,
    InteractionRecord,
    InteractionSummary,
    MessageVersion,
    WorkLogEntry,
)
from bot.storage.nodes import message_text
from bot.storage.timefmt import from_db, to_db

_COLUMNS = (
    "seq, id, guild_id, channel_id, trigger_message_id, trigger_author_id, started_at, "
    "ended_at, model, parameters, answer, usage, latency_seconds, outcome, error, "
    "message_count, removed"
)


def find_seq(conn: Db, message_id: int) -> int | None:
    """The latest interaction triggered by, or answered with, this Discord message."""
    row = conn.execute(
        "SELECT MAX(seq) FROM (SELECT seq FROM interactions WHERE trigger_message_id = ? "
        "UNION ALL SELECT seq FROM answer_messages WHERE message_id = ?) AS found",
        (message_id, message_id),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def answered(conn: Db, message_id: int) -> bool:
    """Whether an interaction was triggered by this Discord message (whatever its outcome: an
    answer abandoned at a restart was answered with a line saying so)."""
    row = conn.execute(
        "SELECT 1 FROM interactions WHERE trigger_message_id = ? LIMIT 1", (message_id,)
    ).fetchone()
    return row is not None


def latest_answered(conn: Db, channel_id: int, message_ids: list[int]) -> int | None:
    """The latest successful interaction in the channel triggered by, or answered with, one of
    these Discord messages (a follow-up's request continues it)."""
    if not message_ids:
        return None
    marks = ", ".join("?" for _ in message_ids)
    row = conn.execute(
        "SELECT MAX(i.seq) FROM interactions i WHERE i.channel_id = ? AND i.outcome = 'success' "
        f"AND (i.trigger_message_id IN ({marks}) OR i.seq IN (SELECT a.seq FROM answer_messages a "
        f"WHERE a.message_id IN ({marks})))",
        (channel_id, *message_ids, *message_ids),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def deleted_among(conn: Db, message_ids: Collection[int]) -> set[int]:
    """Which of these Discord messages the store knows were deleted (a version invalidated).

    The bot's answer posted in several messages stands in a later request as its first one
    (the request keeps one id per message it sent): that first id counts as deleted when any
    part of the answer was, as the answer the request holds is no longer what Discord shows."""
    if not message_ids:
        return set()
    ids = sorted(set(message_ids))
    marks = ", ".join("?" for _ in ids)
    rows = conn.execute(
        "SELECT DISTINCT message_id FROM message_versions "
        f"WHERE state = 'invalidated' AND message_id IN ({marks}) "
        "UNION SELECT DISTINCT head.message_id FROM answer_messages head "
        "JOIN answer_messages part ON part.seq = head.seq AND part.position > 0 "
        "JOIN message_versions v ON v.message_id = part.message_id AND v.state = 'invalidated' "
        f"WHERE head.position = 0 AND head.message_id IN ({marks})",
        tuple(ids) * 2,
    ).fetchall()
    return {int(row[0]) for row in rows}


def first_parts_of(conn: Db, message_id: int) -> set[int]:
    """The first message of each answer ``message_id`` is a later part of (none: it is not):
    what later requests hold the whole answer under."""
    rows = conn.execute(
        "SELECT DISTINCT head.message_id FROM answer_messages part "
        "JOIN answer_messages head ON head.seq = part.seq AND head.position = 0 "
        "WHERE part.message_id = ? AND part.position > 0",
        (message_id,),
    ).fetchall()
    return {int(row[0]) for row in rows} - {message_id}


def seq_of(conn: Db, interaction_id: str) -> int:
    row = conn.execute("SELECT seq FROM interactions WHERE id = ?", (interaction_id,)).fetchone()
    if row is None:
        raise StoreError(f"no interaction with id {interaction_id}")
    return int(row[0])


def interaction_row(conn: Db, seq: int) -> dict[str, Any]:
    rows = _dicts(conn.execute(f"SELECT {_COLUMNS} FROM interactions WHERE seq = ?", (seq,)))
    if not rows:
        raise StoreError(f"no interaction #{seq}")
    return rows[0]


def _dicts(cursor: Any) -> list[dict[str, Any]]:
    """Rows as dicts by column name, on any DB-API cursor (no row factory needed)."""
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def context_rows(conn: Db, seq: int) -> list[tuple[dict, ContextEntry | None]]:
    rows = conn.execute(
        "SELECT c.position, n.json, c.message_id, c.author_id, c.name, c.reasons, c.tokens "
        "FROM context c "
        "JOIN nodes n ON n.id = c.node_id WHERE c.seq = ? ORDER BY c.position",
        (seq,),
    ).fetchall()
    named: dict[int, dict[int, str]] = {}
    for position, user_id, shown in conn.execute(
        "SELECT position, user_id, name FROM context_names WHERE seq = ?", (seq,)
    ):
        named.setdefault(position, {})[user_id] = shown
    covers: dict[int, list[int]] = {}
    for position, message_id in conn.execute(
        "SELECT position, message_id FROM summary_messages WHERE seq = ? "
        "ORDER BY position, message_id",
        (seq,),
    ):
        covers.setdefault(position, []).append(int(message_id))
    out: list[tuple[dict, ContextEntry | None]] = []
    for position, text, message_id, author_id, name, reasons, tokens in rows:
        entry = None
        if message_id is not None or author_id is not None or name is not None or reasons:
            entry = ContextEntry(
                message_id=message_id,
                author_id=author_id,
                name=name,
                reasons=json.loads(reasons) if reasons else [],
                tokens=tokens,
                named=named.get(position, {}),
                covers=covers.get(position, []),
            )
        out.append((json.loads(text), entry))
    return out


def work_log(conn: Db, seq: int) -> list[WorkLogEntry]:
    return [
        WorkLogEntry(action=a, detail=d, status=s, count=c)
        for a, d, s, c in conn.execute(
            "SELECT action, detail, status, count FROM work_log WHERE seq = ? ORDER BY position",
            (seq,),
        )
    ]


def articles(conn: Db, seq: int) -> list[ArticleEntry]:
    return [
        ArticleEntry(url=u, status=s, reason=r)
        for u, s, r in conn.execute(
            "SELECT url, status, reason FROM articles WHERE seq = ? ORDER BY position", (seq,)
        )
    ]


def answer_ids(conn: Db, seq: int) -> list[int]:
    return [
        int(m)
        for (m,) in conn.execute(
            "SELECT message_id FROM answer_messages WHERE seq = ? ORDER BY position", (seq,)
        )
    ]


def header_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The columns of an interaction row that every view of it shares, decoded."""
    return {
        "guild_id": row["guild_id"],
        "channel_id": row["channel_id"],
        "trigger_message_id": row["trigger_message_id"],
        "trigger_author_id": row["trigger_author_id"],
        "started_at": from_db(row["started_at"]),
        "ended_at": from_db(row["ended_at"]),
        "model": row["model"],
        "parameters": json.loads(row["parameters"]),
        "usage": json.loads(row["usage"]),
        "latency_seconds": row["latency_seconds"],
        "outcome": row["outcome"],
        "error": row["error"],
    }


def load_record(conn: Db, seq: int) -> InteractionRecord:
    """The interaction as recorded (a removed one comes back as its empty shell)."""
    row = interaction_row(conn, seq)
    pairs = context_rows(conn, seq)
    return InteractionRecord(
        id=row["id"],
        **header_fields(row),
        request_messages=[message for message, _ in pairs],
        context=[entry for _, entry in pairs],
        answer=row["answer"] or "",
        answer_message_ids=answer_ids(conn, seq),
        work_log=work_log(conn, seq),
        articles=articles(conn, seq),
        people=people(conn, seq),
        **memory_columns(conn, seq),
    )


def memory_columns(conn: Db, seq: int) -> dict[str, int | None]:
    """What the conversation memory added to the request (``continues``, ``cut_at``)."""
    row = conn.execute(
        "SELECT continues, cut_at FROM interactions WHERE seq = ?", (seq,)
    ).fetchone()
    return {"continues": row[0], "cut_at": row[1]}


def people(conn: Db, seq: int) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for user_id, name in conn.execute(
        "SELECT user_id, name FROM person_names WHERE seq = ? ORDER BY user_id, name", (seq,)
    ):
        found.setdefault(int(user_id), []).append(name)
    return found


def versions(conn: Db, message_id: int) -> list[MessageVersion]:
    rows = conn.execute(
        "SELECT v.version, v.channel_id, v.author_id, v.content, n.json, v.state, "
        "v.superseded_by, v.edited_at, v.recorded_at FROM message_versions v "
        "LEFT JOIN nodes n ON n.id = v.node_id WHERE v.message_id = ? ORDER BY v.version",
        (message_id,),
    ).fetchall()
    return [
        MessageVersion(
            message_id=message_id,
            version=version,
            channel_id=channel_id,
            author_id=author_id,
            content=content if node is None else message_text(json.loads(node)),
            state=state,
            superseded_by=superseded_by,
            edited_at=from_db(edited_at),
            recorded_at=from_db(recorded_at),
        )
        for version, channel_id, author_id, content, node, state, superseded_by, edited_at, (
            recorded_at
        ) in rows
    ]


def states_since(conn: Db, message_ids: list[int], moment: str) -> dict[int, str]:
    """What became of each message after ``moment`` (an interaction's start): deleted
    (``invalidated``), edited (``superseded``) or neither (``active``); unknown ids are left out.
    """
    states: dict[int, str] = {}
    for message_id in set(message_ids):
        rows = conn.execute(
            "SELECT state, COALESCE(edited_at, recorded_at) FROM message_versions "
            "WHERE message_id = ? ORDER BY version",
            (message_id,),
        ).fetchall()
        if not rows:
            continue
        if rows[-1][0] == "invalidated":
            states[message_id] = "invalidated"
        elif any(version > 1 and at > moment for version, (_, at) in enumerate(rows, start=1)):
            states[message_id] = "superseded"
        else:
            states[message_id] = "active"
    return states


# Stores written before forget-user left names out put the placeholder in the ``name`` field,
# which OpenAI refuses (names are ``^[A-Za-z0-9_-]+$``); the export leaves such a name out. The
# quotes cannot come from a member's text: inside a JSON string they are escaped.
LEGACY_REMOVED_NAME = ',"name":' + json.dumps(REMOVED, ensure_ascii=False)


def export_lines(conn: Db, since: datetime | None, channel_id: int | None) -> Iterator[str]:
    """One OpenAI fine-tuning JSONL line per successful interaction, in recording order; an
    answer that was offered tools has them as the line's ``tools`` (its tool calls and results
    are among the messages, as sent).

    The lines are assembled from the stored node texts without parsing them: the messages come
    out byte for byte as they were stored, and the export runs at the speed of the scan.
    """
    where = ["i.outcome = 'success'", "i.removed = 0"]
    params: list[object] = []
    if since is not None:
        # Not by the date index: the scan stays in seq order (no sort).
        where.append(f"{conn.dialect.unindexed('i.started_at')} >= ?")
        params.append(to_db(since))
    if channel_id is not None:
        where.append("i.channel_id = ?")
        params.append(channel_id)
    cursor = conn.dialect.stream(
        conn,
        "SELECT i.seq, CASE WHEN c.position IS NULL OR c.position = 0 THEN i.answer END, n.json, "
        "CASE WHEN c.position IS NULL OR c.position = 0 THEN i.parameters END "
        "FROM interactions i LEFT JOIN context c ON c.seq = i.seq "
        "LEFT JOIN nodes n ON n.id = c.node_id "
        f"WHERE {' AND '.join(where)} ORDER BY i.seq, c.position",
        params,
    )
    current: int | None = None
    answer = tools = ""
    parts: list[str] = []
    for seq, maybe_answer, text, maybe_parameters in cursor:
        if seq != current:
            if current is not None:
                yield _line(parts, answer, tools)
            current, answer, parts = seq, maybe_answer or "", []
            tools = _tools(maybe_parameters)
        if text is not None:
            if LEGACY_REMOVED_NAME in text:
                text = text.replace(LEGACY_REMOVED_NAME, "")
            parts.append(text)
    if current is not None:
        yield _line(parts, answer, tools)


def _tools(parameters: str | None) -> str:
    """The tools an answer was offered, as the export line's ``tools`` (OpenAI's fine-tuning
    format), or "" when none were: a line without tools stays as it always was."""
    if not parameters or '"tools":' not in parameters:
        return ""
    tools = json.loads(parameters).get("tools")
    if not tools:
        return ""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


def _line(parts: list[str], answer: str, tools: str = "") -> str:
    assistant = json.dumps(
        {"role": "assistant", "content": answer}, ensure_ascii=False, separators=(",", ":")
    )
    parts.append(assistant)
    line = '{"messages":[' + ",".join(parts) + "]"
    return line + (',"tools":' + tools if tools else "") + "}"


def recent(conn: Db, limit: int, before_seq: int | None) -> list[InteractionSummary]:
    """The latest interactions first, one row each (for browsing, not for full records)."""
    rows = _dicts(
        conn.execute(
            f"SELECT {_COLUMNS} FROM interactions WHERE seq < ? ORDER BY seq DESC LIMIT ?",
            (before_seq if before_seq is not None else 2**63 - 1, limit),
        )
    )
    return [
        InteractionSummary(
            seq=row["seq"],
            interaction_id=row["id"],
            **header_fields(row),
            message_count=row["message_count"],
            answer_excerpt=" ".join((row["answer"] or "").split())[:160],
            removed=bool(row["removed"]),
        )
        for row in rows
    ]


def table_counts(conn: Db) -> dict[str, int]:
    tables = ("interactions", "nodes", "context", "answer_messages", "work_log", "articles")
    counts = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in tables}
    counts["message_versions"] = int(
        conn.execute("SELECT COUNT(*) FROM message_versions").fetchone()[0]
    )
    return counts


def forgotten_since(conn: Db, moment: str) -> list[tuple[int, datetime]]:
    """The people forgotten (forget-user) at ``moment`` or later (stored time text; ``""``:
    all), with when: one indexed query, however many were forgotten before."""
    rows = conn.execute(
        "SELECT user_id, forgotten_at FROM forgotten_users WHERE forgotten_at >= ?", (moment,)
    )
    return [(int(user_id), datetime.fromisoformat(at)) for user_id, at in rows]


def forgotten_among(conn: Db, people: Collection[int]) -> dict[int, datetime]:
    """When each of ``people`` was forgotten (forget-user), for those who were: by id, so a
    forget is found whenever it was stamped (one primary-key look each)."""
    if not people:
        return {}
    ids = sorted(set(people))
    marks = ", ".join("?" for _ in ids)
    rows = conn.execute(
        f"SELECT user_id, forgotten_at FROM forgotten_users WHERE user_id IN ({marks})",
        tuple(ids),
    )
    return {int(user_id): datetime.fromisoformat(at) for user_id, at in rows}


def latest_seal(conn: Db, channel_id: int) -> int | None:
    """The id of the channel's latest ``/fresh`` seal still standing, None: never sealed."""
    row = conn.execute("SELECT max(message_id) FROM seals WHERE channel_id = ?", (channel_id,))
    found = row.fetchone()
    return None if found is None or found[0] is None else int(found[0])
