""" "History starts here": the bot's ``/fresh`` message seals the channel, so nothing said before
it is read for any answer after it, whoever asks.

The seal lives in Discord's history (nothing to store, and it survives restarts): it is the bot's
own message with exactly ``SEAL_TEXT``; a member cannot write one (the author must be the bot).
It only narrows what is read. It is no turn of the bot's either: the follow decision does not
take it for the bot speaking.
"""

from __future__ import annotations

from dataclasses import replace

from conversation.selection.result import ContextSelection
from conversation.sources.cache import ChannelCache, Unknown
from conversation.sources.source import MessageLike

SEAL_TEXT = "Context starts here"
SEAL_WALK = 2000
"""Cached messages looked through for a seal at most, back from the trigger."""


def is_seal(message: MessageLike, bot_id: int) -> bool:
    """Whether ``message`` is the bot's ``/fresh`` seal."""
    return message.author.id == bot_id and (message.content or "").strip() == SEAL_TEXT


def latest_seal(cache: ChannelCache, trigger: MessageLike, bot_id: int, oldest: int) -> int | None:
    """The id of the latest seal before ``trigger`` the cache knows, looking back no further
    than message ``oldest`` (the oldest selected: a seal before it changes nothing)."""
    current: MessageLike = trigger
    for _ in range(SEAL_WALK):
        previous = cache.previous(current.id)
        if previous is None or isinstance(previous, Unknown) or previous.id < oldest:
            return None
        if is_seal(previous, bot_id):
            return previous.id
        current = previous
    return None


def sealed(selection: ContextSelection, cache: ChannelCache, bot_id: int) -> ContextSelection:
    """``selection`` without the seal and anything said before it (the trigger's own reply
    target included: the member asked to start over)."""
    if not selection.messages:
        return selection
    seal = latest_seal(cache, selection.trigger, bot_id, selection.messages[0].id)
    if seal is None:
        return selection
    kept = [m for m in selection.messages if m.id > seal]
    return replace(
        selection,
        messages=kept,
        reasons={m.id: selection.reasons[m.id] for m in kept if m.id in selection.reasons},
    )
