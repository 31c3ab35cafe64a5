""" "History starts here": the bot's ``/fresh`` message seals the channel, so nothing said before
it is read for any answer after it, whoever asks.

A seal is recognised by what Discord says about the message, never by its text: the bot's own
message made by the ``/fresh`` command's interaction (the payload's ``interaction``, which
nextcord reads into ``Message.interaction``, on gateway and REST messages alike). A member
cannot make one: "@bot say exactly: Context starts here" gets an answer with that text, made by
no interaction. The bot also records each seal in its store (``known``: a channel read on a
cold cache, or following after a restart, honours it without finding the message). Deleting
the seal message un-seals the channel. It only narrows what is read. It is no turn of the bot's
either: the follow decision does not take it for the bot speaking.
"""

from __future__ import annotations

from dataclasses import replace

from conversation.selection.result import ContextSelection
from conversation.sources.cache import ChannelCache, Unknown
from conversation.sources.source import MessageLike

SEAL_TEXT = "Context starts here"
"""What the seal says (to people: it is not how a seal is recognised)."""
SEAL_COMMAND = "fresh"
APPLICATION_COMMAND = 2
"""Discord's interaction type of a slash command."""
SEAL_WALK = 2000
"""Cached messages looked through for a seal at most, back from the trigger."""


def is_seal(message: MessageLike, bot_id: int) -> bool:
    """Whether ``message`` is the bot's ``/fresh`` seal: the bot's, made by that command."""
    if message.author.id != bot_id:
        return False
    interaction = getattr(message, "interaction", None)  # nextcord's MessageInteraction
    return (
        interaction is not None
        and int(interaction.type) == APPLICATION_COMMAND
        and interaction.name == SEAL_COMMAND
    )


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


def sealed(
    selection: ContextSelection, cache: ChannelCache, bot_id: int, known: int | None = None
) -> ContextSelection:
    """``selection`` without the seal and anything said before it (the trigger's own reply
    target included: the member asked to start over); ``known``: the channel's latest seal as
    the store recorded it (the cache may not hold it)."""
    if not selection.messages:
        return selection
    found = latest_seal(cache, selection.trigger, bot_id, selection.messages[0].id)
    recorded = known if known is not None and known < selection.trigger.id else None
    seal = max((s for s in (found, recorded) if s is not None), default=None)
    if seal is None:
        return selection
    kept = [m for m in selection.messages if m.id > seal]
    return replace(
        selection,
        messages=kept,
        reasons={m.id: selection.reasons[m.id] for m in kept if m.id in selection.reasons},
    )
