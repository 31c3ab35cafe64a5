"""A message deleted in Discord leaves every record that holds it.

The store keeps each answer's request as sent, so a deleted message lives on in the records of
the answers that read it, in the summaries that retell it, in ``/catchup`` summaries, and in
``export``. A deletion replaces it everywhere by the placeholder, as ``forget-user`` does for a
person: its rows in ``context`` and ``message_versions`` move to a redacted copy of the node
(its role and shape kept, its text and name gone), a summary standing for it is replaced whole
(what it retells of the message cannot be told apart from the rest), and so is the answer of a
``/catchup`` that drew on it, or the bot's own answer when that is what was deleted (any part
of it: later requests hold the whole answer under its first message, which goes too). The
message's id and its ``invalidated`` state stay: they are what tells a request read back that it
is gone. Deletes nodes: run ``scrub_deleted`` in an exclusive transaction.
"""

from __future__ import annotations

import json

from bot.storage.dialect import Db
from bot.storage.models import REMOVED
from bot.storage.mutations import NodeCache, delete_orphan_nodes, node_id_for, redact_summaries
from bot.storage.nodes import canonical_json, redact_message
from bot.storage.reads import first_parts_of


def summaries_of(conn: Db, message_id: int) -> list[int]:
    """The nodes of the summaries that stand for the message (``summary_messages``)."""
    rows = conn.execute(
        "SELECT DISTINCT c.node_id FROM context c JOIN summary_messages s "
        "ON s.seq = c.seq AND s.position = c.position WHERE s.message_id = ?",
        (message_id,),
    ).fetchall()
    return [int(node_id) for (node_id,) in rows]


def holds_text_of(conn: Db, message_id: int) -> bool:
    """Whether any record holds the message's words (one indexed look per table): most deleted
    messages were never read by the bot, and cost no more than this."""
    row = conn.execute(
        "SELECT 1 FROM context WHERE message_id = ? "
        "UNION ALL SELECT 1 FROM summary_messages WHERE message_id = ? "
        "UNION ALL SELECT 1 FROM answer_messages WHERE message_id = ? "
        "UNION ALL SELECT 1 FROM message_versions WHERE message_id = ? "
        "AND (node_id IS NOT NULL OR content IS NOT NULL) LIMIT 1",
        (message_id,) * 4,
    ).fetchone()
    return row is not None


def scrub_deleted(conn: Db, cache: NodeCache, message_id: int) -> int:
    """The deleted message's words out of every record; returns the rows changed."""
    cache.clear()
    changed = 0
    nodes = conn.execute(
        "SELECT node_id FROM context WHERE message_id = ? UNION "
        "SELECT node_id FROM message_versions WHERE message_id = ? AND node_id IS NOT NULL",
        (message_id, message_id),
    ).fetchall()
    for old in sorted(int(node_id) for (node_id,) in nodes):
        (text,) = conn.execute("SELECT json FROM nodes WHERE id = ?", (old,)).fetchone()
        new = node_id_for(conn, cache, canonical_json(redact_message(json.loads(text))))
        if new == old:
            continue
        for table in ("context", "message_versions"):
            changed += conn.execute(
                f"UPDATE {table} SET node_id = ? WHERE message_id = ? AND node_id = ?",
                (new, message_id, old),
            ).rowcount
    changed += conn.execute(
        "UPDATE message_versions SET content = ? "
        "WHERE message_id = ? AND content IS NOT NULL AND content != ?",
        (REMOVED, message_id, REMOVED),
    ).rowcount
    # The bot's own answer taken down, and a /catchup summary that drew on the message.
    changed += conn.execute(
        "UPDATE interactions SET answer = ? WHERE answer IS NOT NULL AND answer != ? AND ("
        "seq IN (SELECT seq FROM answer_messages WHERE message_id = ?) OR ("
        "seq IN (SELECT seq FROM context WHERE message_id = ?) "
        "AND seq IN (SELECT seq FROM work_log WHERE action = 'catchup')))",
        (REMOVED, REMOVED, message_id, message_id),
    ).rowcount
    changed += redact_summaries(conn, cache, summaries_of(conn, message_id))
    # A later part of the bot's answer: later requests hold the whole answer under its first
    # message's id (``reads.deleted_among`` reads it so too).
    for head in sorted(first_parts_of(conn, message_id)):
        changed += scrub_deleted(conn, cache, head)
    delete_orphan_nodes(conn)
    cache.clear()
    return changed
