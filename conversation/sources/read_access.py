"""What a context may hold when its asker cannot read the channel's history.

Discord lets a member post in a channel without Read Message History: they see what is said
while they are there, and nothing from before. A context built from the channel as the bot reads
it would hand that history to them through the answer (the bot would quote it, summarise it,
answer from it). So for such an asker the context holds only what they may read: the trigger,
the message it replies to (they saw it to reply to it), their own messages, and the bot's
answers to them (replies to one of their messages).

Deciding *whether* an asker may read the history is Discord's business and lives in the bot
(``bot.discord.visibility.history_restriction``); this module only says what the restriction
lets in, so that the builder, and anything else that reads a channel on someone's behalf (following,
tools), applies the same rule. ``RestrictedReader`` applies it to every question the builder
asks, from the cache alone: it never fetches a page of history it would then have to drop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conversation.sources.cache import UNKNOWN, ChannelCache
from conversation.sources.reader import ChannelReader, WorkEntry
from conversation.sources.source import (
    PAGE_LIMIT,
    ChannelSource,
    MessageLike,
    SourceError,
    reference_id,
)

RESTRICTED_NOTE = (
    "the asker cannot read this channel's history (no Read Message History here), so only "
    "their message, what it replies to, their own messages and the bot's answers to them "
    "were used"
)
"""Why the rest of the channel is absent, for ``/context``, ``explain`` and ``replay``."""


@dataclass(frozen=True)
class HistoryRestriction:
    """Whose messages a context may hold when ``author_id`` cannot read the history."""

    author_id: int
    bot_id: int
    trigger_id: int
    replied_to: int | None = None  # the message the trigger replies to

    @classmethod
    def for_trigger(cls, trigger: MessageLike, bot_id: int) -> HistoryRestriction:
        return cls(
            author_id=int(trigger.author.id),
            bot_id=int(bot_id),
            trigger_id=int(trigger.id),
            replied_to=reference_id(trigger),
        )

    def allows(
        self, message: MessageLike, lookup: Callable[[int], MessageLike | None] = lambda _: None
    ) -> bool:
        """Whether the asker may read ``message``; ``lookup`` finds a message the bot's reply
        points to when the payload did not carry it (``None`` when unknown: then it is out)."""
        if message.id in (self.trigger_id, self.replied_to):
            return True
        author = message.author.id
        if author == self.author_id:
            return True
        if author != self.bot_id:
            return False
        parent_id = reference_id(message)
        if parent_id is None:
            return False
        if parent_id == self.trigger_id:
            return True
        resolved = getattr(message.reference, "resolved", None)
        parent = resolved if getattr(resolved, "author", None) is not None else lookup(parent_id)
        return parent is not None and parent.author.id == self.author_id


class RestrictedReader(ChannelReader):
    """A ``ChannelReader`` that sees only what ``restriction`` allows, from the cache.

    Neighbours skip the messages the asker may not read; what the cache does not hold is not
    asked of Discord (a history page would be mostly others' messages, fetched to be dropped),
    except the message the trigger replies to, fetched alone when the payload lacked it.
    """

    unreadable = "it is not among what the asker may read here (no Read Message History)"
    restriction_note = RESTRICTED_NOTE

    def __init__(
        self,
        source: ChannelSource,
        cache: ChannelCache,
        restriction: HistoryRestriction,
        *,
        page_limit: int = PAGE_LIMIT,
    ) -> None:
        super().__init__(source, cache, page_limit=page_limit)
        self.restriction = restriction

    def allows(self, message: MessageLike) -> bool:
        return self.restriction.allows(message, self._cached)

    def _cached(self, message_id: int) -> MessageLike | None:
        known = self.cache.get(message_id)
        return None if known is UNKNOWN else known

    async def get(self, message_id: int) -> MessageLike | None:
        known = self.cache.get(message_id)
        if known is UNKNOWN and message_id == self.restriction.replied_to:
            known = await self._fetch(message_id)
        if known is UNKNOWN or known is None or not self.allows(known):
            return None
        self.log.append(WorkEntry(action="cache_hit", detail=f"message {message_id}"))
        return known

    async def previous(self, message: MessageLike) -> MessageLike | None:
        self.cache.add_if_absent(message)
        return self._walk(message.id, self.cache.previous)

    def held_before(self, message: MessageLike, count: int) -> list[MessageLike]:
        """The held messages before ``message`` the asker may read, as ``previous`` steps."""
        run: list[MessageLike] = []
        current = message.id
        while len(run) < count:
            found = self._walk(current, self.cache.previous)
            if found is None:
                break
            run.append(found)
            current = found.id
        return run

    async def next(self, message: MessageLike) -> MessageLike | None:
        self.cache.add_if_absent(message)
        return self._walk(message.id, self.cache.next)

    def _walk(self, start: int, step: Callable[[int], object]) -> MessageLike | None:
        """The nearest cached message the asker may read, past those they may not."""
        current = start
        while True:
            found = step(current)
            if found is UNKNOWN or found is None:
                return None
            if self.allows(found):  # type: ignore[arg-type]
                return found  # type: ignore[return-value]
            current = found.id  # type: ignore[union-attr]

    async def _fetch(self, message_id: int) -> MessageLike | None:
        """One message by id (the replied-to one): one request, nothing else read."""
        self.rest_calls += 1
        try:
            message = await self.source.fetch_message(message_id)
        except SourceError as error:
            self.errors.append(error)
            self.log.append(
                WorkEntry(action="message_fetched", detail=f"message {message_id}: {error}",
                          status="failure")
            )  # fmt: skip
            return None
        self.log.append(
            WorkEntry(action="message_fetched", detail=f"message {message_id}",
                      messages=int(message is not None))
        )  # fmt: skip
        if message is not None:
            self.cache.add_if_absent(message)
        return message
