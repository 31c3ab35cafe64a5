"""Following a reply reference, one step written once for both builds.

A reply names the message it answers whatever its age, so both builds follow it: the scored
build up the trigger's whole reply chain, the rules build one level per TIK step from every new
message. The step is the same: the payload's copy of the replied-to message first (it costs
nothing, and a thread's starter message points into the parent channel, which only the payload
can show), then this channel through the reader (cache, then REST); each reference followed is
logged, and one that leads nowhere is told to the asker.
"""

from __future__ import annotations

from conversation.sources.cache import UNKNOWN
from conversation.sources.reader import ChannelReader, WorkEntry
from conversation.sources.source import MessageLike, reference_id


def reference_before(message: MessageLike, trigger: MessageLike) -> int | None:
    """The id ``message`` replies to, when that is older than the trigger (a build never reads
    the trigger or past it)."""
    parent_id = reference_id(message)
    return parent_id if parent_id is not None and parent_id < trigger.id else None


async def follow_reference(
    message: MessageLike, parent_id: int, reader: ChannelReader, problems: list[str]
) -> MessageLike | None:
    """The message ``message`` replies to (``parent_id``), logged as followed; when it cannot be
    read, None and a line in ``problems``."""
    parent = await _replied_to(message, parent_id, reader)
    reader.log.append(
        WorkEntry(
            action="reference_followed",
            detail=f"{message.id} replies to {parent_id}",
            status="success" if parent is not None else "failure",
        )
    )
    if parent is None:
        problems.append(f"message {message.id} replies to {parent_id}, which is gone")
    return parent


def free_parent(message: MessageLike, parent_id: int, reader: ChannelReader) -> MessageLike | None:
    """The message ``message`` replies to, only when it costs nothing: the payload carries it or
    the cache holds it (no REST call, nothing logged)."""
    parent = _payload_copy(message)
    if parent is None:
        parent = reader.cache.get(parent_id)  # type: ignore[assignment]
    if parent is UNKNOWN or parent is None or not reader.allows(parent):
        return None
    return parent


async def _replied_to(
    message: MessageLike, parent_id: int, reader: ChannelReader
) -> MessageLike | None:
    """The payload's copy whatever channel it is in; else this channel's message, since only
    this channel's history can be asked for."""
    parent = _payload_copy(message)
    if parent is not None:
        return parent if reader.allows(parent) else None
    channel_id = getattr(message.reference, "channel_id", None)
    if channel_id is not None and channel_id != reader.source.channel_id:
        return None
    return await reader.get(parent_id)


def _payload_copy(message: MessageLike) -> MessageLike | None:
    """The replied-to message as the payload carries it, when it carries its text."""
    reference = message.reference
    resolved = reference.resolved if reference is not None else None
    if resolved is None or getattr(resolved, "content", None) is None:
        return None
    return resolved  # type: ignore[return-value]
