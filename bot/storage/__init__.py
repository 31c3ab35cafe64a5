"""Interaction storage: what the bot sent, got back and did, on SQLite or PostgreSQL.

See :class:`Store` for the API (``store``). Behind it: the migrations (``schema``), what differs
between the two databases (``dialect``, ``postgres``), the single writer thread
(``writer_thread``) and everything it changes (``mutations``; a deletion's scrub in
``deletions``), the read-only queries
(``reads``), the explanations built from them (``explain``), the data crossing the boundary
(``models``), request messages addressed by content (``nodes``), a forgotten person's names
(``names``), what is remembered per model for the token budget (``limits``), timestamps as
sortable text (``timefmt``) and the one exception type (``errors``). Nothing here imports
nextcord: the bot turns Discord events into calls on the store, and the CLI reads it.

May import: ``bot.config``, ``bot.errors`` and ``conversation``.
"""

from bot.storage.errors import StoreError
from bot.storage.explain import not_in_store, render_text, summarize, without_linked_text
from bot.storage.models import (
    REMOVED,
    ArticleEntry,
    ContextEntry,
    ExplainedMessage,
    Explanation,
    ForgetResult,
    InteractionRecord,
    InteractionSummary,
    MessageVersion,
    PruneResult,
    WorkLogEntry,
)
from bot.storage.schema import MIGRATIONS, migrate, schema_version
from bot.storage.store import Store

__all__ = [
    "MIGRATIONS",
    "REMOVED",
    "ArticleEntry",
    "ContextEntry",
    "ExplainedMessage",
    "Explanation",
    "ForgetResult",
    "InteractionRecord",
    "InteractionSummary",
    "MessageVersion",
    "PruneResult",
    "Store",
    "StoreError",
    "WorkLogEntry",
    "migrate",
    "not_in_store",
    "render_text",
    "schema_version",
    "summarize",
    "without_linked_text",
]
