"""Conversations moved into threads (``[threads]``): when, whether the bot may, and the move.

A thread the bot opened from its answer is its conversation's: every member message there is
answered without a mention (``triggers``' ``bot_thread``), and its first request continues the
channel's (``bot.answering.thread_memory``). Opening one needs Create Public Threads and Send
Messages in Threads; without them the conversation stays in the channel and nothing is said.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import nextcord

from bot.config.thread_settings import ThreadSettings

log = logging.getLogger(__name__)

THREAD_NAME_CHARS = 60
THREAD_STARTER = nextcord.MessageType.thread_starter_message
ARCHIVE_MINUTES = 1440
ASKS_FOR_A_THREAD = re.compile(
    r"\b(move|take|continue|carry|open|start)\b[^.?!\n]{0,40}\bthread\b", re.IGNORECASE
)


def is_bots_thread(channel: Any, bot_user_id: int) -> bool:
    """A thread the bot opened (it owns it): its conversation goes on there."""
    return getattr(channel, "parent_id", None) is not None and (
        getattr(channel, "owner_id", None) == bot_user_id
    )


def without_thread_starters(selection: Any) -> Any:
    """A context without the empty message Discord puts first in a thread opened from a
    message (it stands for that message, which the thread's request already holds)."""
    kept = [m for m in selection.messages if getattr(m, "type", None) != THREAD_STARTER]
    if len(kept) == len(selection.messages):
        return selection
    reasons = {m.id: selection.reasons[m.id] for m in kept if m.id in selection.reasons}
    return replace(selection, messages=kept, reasons=reasons)


def asks_for_a_thread(text: str) -> bool:
    """A member asks to move the conversation ("can we move this to a thread?")."""
    return bool(ASKS_FOR_A_THREAD.search(text or ""))


def may_open_thread(channel: Any) -> bool:
    """A server's text channel (not a thread, not a forum) where the bot may open one."""
    guild = getattr(channel, "guild", None)
    me = getattr(guild, "me", None)
    if me is None or not isinstance(channel, nextcord.TextChannel):
        return False
    permissions = channel.permissions_for(me)
    return bool(permissions.create_public_threads and permissions.send_messages_in_threads)


def should_move(settings: ThreadSettings, channel: Any, answers: int, trigger_text: str) -> bool:
    """Whether the conversation moves after this answer: on, long enough (``answers``: the
    bot's answers in it, this one included) or asked for, and allowed in this channel."""
    if not settings.enabled:
        return False
    asked = settings.on_request and asks_for_a_thread(trigger_text)
    return (answers >= settings.after_answers or asked) and may_open_thread(channel)


def thread_name(bot_name: str, opened_at: datetime) -> str:
    """The thread's name: whose conversation it is (the bot's) and when it moved, in UTC.

    Never a member's words or name: a thread's name is public, shown in the channel list to
    everyone, and outlives the member's message (a deletion, a forget-user). A name of the
    bot's own is one nothing has to take back."""
    name = " ".join((bot_name or "the bot").split())[:THREAD_NAME_CHARS]
    return f"Conversation with {name}, {opened_at.astimezone(UTC):%d %b %H:%M} UTC"[:100]


async def open_thread(answer: nextcord.Message, name: str) -> nextcord.Thread | None:
    """A public thread from the bot's ``answer``; None when Discord refuses it (logged)."""
    try:
        return await answer.create_thread(name=name, auto_archive_duration=ARCHIVE_MINUTES)
    except nextcord.HTTPException as error:
        log.warning("could not open a thread from %s: %s", answer.id, error)
        return None
