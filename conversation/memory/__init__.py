"""Conversations that remember what they sent: a follow-up's request starts with the previous
request and the bot's answer, byte for byte, so a prefix-caching server reads only what is new.

Modules: ``sent`` (what one request sent, as remembered: its messages, its answer, the content
each message had), ``recall`` (where that memory lives: the interface the bot's store feeds and
the bounded in-process one), ``append`` (the follow-up's request: the previous one, the answer,
what is new; edits and deletions breaking the prefix once; the cut, in one step to a share of
the budget), ``summary`` (what a cut leaves out, summarized by the model once and sent
unchanged after the system prompt until the next cut).

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
from conversation.memory.sent import SentPrompt
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
    "SUMMARY_REASON",
    "BoundedMemory",
    "ChannelNow",
    "Continuity",
    "PromptMemory",
    "SentPrompt",
    "SummaryPolicy",
    "parsed_summary",
    "refit_keeping_summary",
    "remembered_prompt",
    "restored_summary",
    "sent_prompt",
    "summary_of",
]
