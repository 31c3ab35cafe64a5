"""Interaction storage: what the bot sent, got back and did, in one SQLite file.

See :class:`Store` for the API. Nothing here imports nextcord: the bot turns Discord events into
calls on the store, and the CLI reads it.

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
