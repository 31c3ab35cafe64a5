"""Conversations that remember what they sent: a follow-up's request starts with the previous
request and the bot's answer, byte for byte, so a prefix-caching server reads only what is new.

Modules: ``sent`` (what one request sent, as remembered: its messages, its answer, the content
each message had), ``recall`` (where that memory lives: the interface the bot's store feeds and
the in-process one, bounded by count and bytes), ``footprint`` (the bytes a remembered request
holds), ``append`` (the follow-up's request: the previous one, the answer,
what is new; edits and deletions breaking the prefix once; the cut, in one step to a share of
the budget), ``summary`` (what a cut leaves out, summarized by the model once and sent
unchanged after the system prompt until the next cut), ``record`` (what the memory added to a
request as data of its own, for the store's columns: never read back from its text).

The memory's words, as its modules use them:

* **room**: the most one request may hold, the token budget and ``max_total`` messages, whichever
  is reached first. A conversation "outgrows its room" when continuing it would exceed either.
* **share**: a fraction of something, named by what it measures: ``keep_share``, of the previous
  request's conversation still selected now (enough, and the follow-up continues it);
  ``cut_share``, of the room a cut keeps.
* **cut**: the request built afresh from the current selection, fitted to ``cut_share`` of its
  room, when the conversation outgrew it; recorded once in the work log, and where it happened
  (``cut_at``) is carried on, so what it left out is not selected back.
* **plain cut**: a cut without a summary (no ``SummaryPolicy``, or the summary failed): what it
  dropped is simply left out. A summarized cut leaves a frozen summary of it after the system
  prompt instead.

May import ``conversation.common``, ``sources``, ``articles``, ``graph``, ``selection`` and
``prompt``. A change goes here when what a request keeps from the one before changes.
"""

from conversation.memory.append import (
    CUT_SHARE,
    KEEP_SHARE,
    ChannelNow,
    Continuity,
    refit_keeping_summary,
    remembered_prompt,
    sent_prompt,
)
from conversation.memory.recall import BoundedMemory, PromptMemory
from conversation.memory.record import OTHERS_REASON, MemoryRecord, memory_record
from conversation.memory.sent import SentPrompt, answer_node, discord_ids
from conversation.memory.summary import (
    SUMMARY_REASON,
    SummaryPolicy,
    parsed_summary,
    restored_summary,
    summary_of,
)

__all__ = [
    "CUT_SHARE",
    "KEEP_SHARE",
    "OTHERS_REASON",
    "SUMMARY_REASON",
    "BoundedMemory",
    "ChannelNow",
    "Continuity",
    "MemoryRecord",
    "PromptMemory",
    "SentPrompt",
    "SummaryPolicy",
    "answer_node",
    "discord_ids",
    "memory_record",
    "parsed_summary",
    "refit_keeping_summary",
    "remembered_prompt",
    "restored_summary",
    "sent_prompt",
    "summary_of",
]
