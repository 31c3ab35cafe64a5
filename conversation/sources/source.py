"""What the context builder may ask of a channel and of a message.

The builder explores raw message objects (nextcord ``Message`` in the bot, the same class built
from a replayed log in tests) and never materializes anything while it explores. These protocols
name the few attributes and calls it relies on, so a new source (another client library, a
database) only has to provide them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from conversation.sources.snowflakes import DISCORD_EPOCH_MS

PAGE_LIMIT = 100  # Discord's maximum page size for channel history.


class AuthorLike(Protocol):
    id: int
    bot: bool


class ReferenceLike(Protocol):
    message_id: int | None
    # A message when the payload carried ``referenced_message``; a deleted marker when Discord
    # said it was deleted (nextcord's ``DeletedReferencedMessage``); ``None`` when not sent.
    resolved: object | None


class MessageLike(Protocol):
    """The parts of a message the builder reads (a nextcord ``Message`` satisfies it)."""

    id: int
    content: str

    @property
    def created_at(self) -> datetime: ...

    @property
    def author(self) -> AuthorLike: ...

    @property
    def mentions(self) -> Sequence[AuthorLike]: ...

    @property
    def reference(self) -> ReferenceLike | None: ...


class SourceError(Exception):
    """The channel could not be read; ``user_message`` is safe to show in Discord."""

    def __init__(self, detail: str, *, user_message: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.user_message = user_message
        self.status = status


@runtime_checkable
class ChannelSource(Protocol):
    """REST-like access to one channel; every call here costs one request against Discord."""

    @property
    def channel_id(self) -> int: ...

    async def fetch_message(self, message_id: int) -> MessageLike | None:
        """The message, or ``None`` when it does not exist (deleted, or never in this channel)."""
        ...

    async def history(
        self,
        *,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
        limit: int = PAGE_LIMIT,
    ) -> list[MessageLike]:
        """One page of at most ``limit`` (<= 100) messages, newest first, as Discord returns it.

        Exactly one of ``before``, ``after`` and ``around`` is given. ``before`` pages hold the
        messages right before the id, ``after`` pages the ones right after it, ``around`` pages
        the ones centred on it (the id itself included when it exists).
        """
        ...


# Message types that are part of a conversation: default, reply, slash and context-menu command
# results, thread starters. Joins, pins, boosts and the like are not context.
CONVERSATIONAL_TYPES = frozenset({0, 19, 20, 21, 23})


def is_conversational(message: MessageLike) -> bool:
    kind = getattr(message, "type", None)
    if kind is None or kind in CONVERSATIONAL_TYPES:  # an int, or an IntEnum (nextcord's) at once
        return True
    value = getattr(kind, "value", kind)
    return value is None or value in CONVERSATIONAL_TYPES


def created_ms(message: MessageLike) -> int:
    """Creation time in Unix milliseconds, read from the snowflake id.

    Every Discord id encodes its creation time, so this equals ``created_at`` without building
    a datetime: the builder compares times hundreds of thousands of times per channel log.
    """
    return (message.id >> 22) + DISCORD_EPOCH_MS


def reference_id(message: MessageLike) -> int | None:
    reference = message.reference
    return reference.message_id if reference is not None else None


class AttachmentUnreadable(Exception):
    """An attachment a source cannot read, with a reason a person can act on (a replayed log
    holds only the files saved beside its export)."""
