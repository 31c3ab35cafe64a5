"""Cached messages with only what a context needs, so a big cache fits in memory.

A nextcord ``Message`` in a guild costs about 1.8 KB: thirty slots, six empty lists, a flags
object and, above all, a ``Member`` object built anew for every message (about 1 KB) although
the same few people write most of a channel. :class:`CachedMessage` keeps the fields the
builder and the materializer read, shares empty lists, and :class:`Slimmer` hands every
message of one person the same author object for as long as that person's names stay the same.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from conversation.sources.snowflakes import snowflake_time

_EMPTY: tuple[Any, ...] = ()


class CachedReference:
    """A reply's target: the ids, and the replied-to message (itself slim, or nextcord's marker
    for a deleted one)."""

    __slots__ = ("channel_id", "guild_id", "message_id", "resolved")

    def __init__(self, message_id: int | None, channel_id: int | None, guild_id: int | None,
                 resolved: Any) -> None:  # fmt: skip
        self.message_id = message_id
        self.channel_id = channel_id
        self.guild_id = guild_id
        self.resolved = resolved


class CachedMessage:
    """What the cache keeps of a Discord message."""

    __slots__ = (
        "attachments",
        "author",
        "channel",
        "content",
        "edited_at",
        "embeds",
        "guild",
        "id",
        "interaction",
        "mentions",
        "reference",
        "type",
        "webhook_id",
    )

    def __init__(self, message: Any, author: Any, mentions: tuple[Any, ...],
                 reference: CachedReference | None) -> None:  # fmt: skip
        self.id = message.id
        self.content = message.content
        self.author = author
        self.mentions = mentions
        self.reference = reference
        self.embeds = tuple(getattr(message, "embeds", _EMPTY)) or _EMPTY
        self.attachments = tuple(getattr(message, "attachments", _EMPTY)) or _EMPTY
        self.guild = getattr(message, "guild", None)
        self.channel = getattr(message, "channel", None)
        self.type = getattr(message, "type", None)
        self.edited_at = getattr(message, "edited_at", None)
        self.webhook_id = getattr(message, "webhook_id", None)
        # The slash command that made it (a /fresh seal is recognised by it): Discord's word.
        self.interaction = getattr(message, "interaction", None)

    @property
    def created_at(self) -> datetime:
        """From the id, as Discord defines it (no need to keep a datetime per message)."""
        return snowflake_time(self.id)

    def __repr__(self) -> str:
        return f"<CachedMessage id={self.id} author={getattr(self.author, 'id', None)}>"


class Slimmer:
    """Turns messages into :class:`CachedMessage`, sharing author objects between them."""

    def __init__(self, max_people: int = 100_000) -> None:
        self.max_people = max_people
        self._people: dict[tuple[int, int], Any] = {}

    def __call__(self, message: Any) -> CachedMessage:
        if isinstance(message, CachedMessage):
            return message
        guild = getattr(message, "guild", None)
        mentions = message.mentions
        return CachedMessage(
            message,
            self._person(message.author, guild),
            tuple(self._person(user, guild) for user in mentions) if mentions else _EMPTY,
            self._reference(getattr(message, "reference", None)),
        )

    def _person(self, user: Any, guild: Any) -> Any:
        """The author object already held for this person, unless their names changed."""
        key = (getattr(guild, "id", 0) or 0, user.id)
        known = self._people.get(key)
        if known is not None and _names(known) == _names(user):
            return known
        if len(self._people) >= self.max_people:
            self._people.clear()
        self._people[key] = user
        return user

    def _reference(self, reference: Any) -> CachedReference | None:
        if reference is None:
            return None
        resolved = getattr(reference, "resolved", None)
        if resolved is not None and getattr(resolved, "content", None) is not None:
            inner = self(resolved)
            inner.reference = _unresolved(inner.reference)  # one level, as Discord sends it
            resolved = inner
        return CachedReference(
            getattr(reference, "message_id", None),
            getattr(reference, "channel_id", None),
            getattr(reference, "guild_id", None),
            resolved,
        )


def _unresolved(reference: CachedReference | None) -> CachedReference | None:
    if reference is None or reference.resolved is None:
        return reference
    return CachedReference(reference.message_id, reference.channel_id, reference.guild_id, None)


def _names(user: Any) -> tuple[Any, ...]:
    return (
        getattr(user, "nick", None),
        getattr(user, "global_name", None),
        getattr(user, "display_name", None),
        getattr(user, "name", None),
        getattr(user, "bot", None),
    )
