"""The builder's view of a channel: cache first, the payload next, REST last, a page at a time.

Every question the builder asks (a message by id, the neighbour before or after a message, the
recent history) is answered from the channel cache when its coverage allows. Otherwise one
history page is fetched around what is needed and added to the cache, so the next questions
about that stretch of history are free. Each call to the source is counted and logged, because
REST calls are what a context costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from conversation.sources.cache import LIVE, UNKNOWN, ChannelCache
from conversation.sources.source import PAGE_LIMIT, ChannelSource, MessageLike, SourceError


class WorkEntry(BaseModel):
    """One thing done to read the channel, for the interaction's work log."""

    model_config = ConfigDict(frozen=True)

    action: Literal[
        "history_page",
        "cache_hit",
        "reference_followed",
        "link_followed",
        "message_fetched",
        "history_restricted",
        "context_cap",  # the cap grew where the channel's conversations run long
    ]
    detail: str
    messages: int = 0
    status: Literal["success", "failure"] = "success"


class ChannelReader:
    """Answers the builder's questions about one channel, counting what they cost."""

    unreadable: str | None = None
    """Why ``get`` may return None besides a deleted message (see
    ``conversation.sources.read_access``)."""
    restriction_note: str | None = None
    """Why the context holds only part of the channel, when it does."""

    def __init__(
        self, source: ChannelSource, cache: ChannelCache, *, page_limit: int = PAGE_LIMIT
    ) -> None:
        self.source = source
        self.cache = cache
        self.page_limit = page_limit
        self.rest_calls = 0
        self.log: list[WorkEntry] = []
        self.errors: list[SourceError] = []

    def allows(self, message: MessageLike) -> bool:
        """Whether the asker may read ``message`` (a payload's copy, say): here, always."""
        return True

    def learn(self, message: MessageLike) -> None:
        """Take a message we were handed (the trigger) into the cache with its reference."""
        self.cache.add_if_absent(message)

    # ------------------------------------------------------------------ single messages

    async def get(self, message_id: int) -> MessageLike | None:
        """The message by id, or ``None`` when it does not exist or cannot be read.

        Uses a history page around the id rather than a single fetch: same cost, and the
        temporal exploration that follows a reference needs exactly those neighbours.
        """
        known = self.cache.get(message_id)
        if known is not UNKNOWN:
            self.log.append(WorkEntry(action="cache_hit", detail=f"message {message_id}"))
            return known
        page = await self._page(around=message_id)
        if page is None:
            return None
        for message in page:  # from the page itself: a full cache may have dropped it already
            if message.id == message_id:
                return message
        # Discord answered with the neighbourhood but not the message: deleted, or never here.
        self.cache.on_delete(message_id)
        return None

    # ------------------------------------------------------------------ neighbours

    async def previous(self, message: MessageLike) -> MessageLike | None:
        """The message right before ``message`` in the channel, ``None`` at its start."""
        if self.cache.get(message.id) is not message:  # a walk's step holds the cached one
            self.cache.add_if_absent(message)
        answer = self.cache.previous(message.id)
        if answer is UNKNOWN:
            if await self._page(before=self.cache.lower_edge(message.id)) is None:
                return None
            answer = self.cache.previous(message.id)
        return None if answer is UNKNOWN else answer

    def held_before(self, message: MessageLike, count: int) -> list[MessageLike]:
        """Up to ``count`` messages right before ``message`` that the cache holds in one
        unbroken stretch, newest first: free, so a walk takes them at once, and asks
        ``previous`` (which may fetch a page) only where the stretch ends; past
        ``candidate_window`` the walk goes only as far as this reaches."""
        return self.cache.held_before(message.id, count)

    async def next(self, message: MessageLike) -> MessageLike | None:
        """The message right after ``message``, ``None`` when it is the newest."""
        self.cache.add_if_absent(message)
        answer = self.cache.next(message.id)
        if answer is UNKNOWN:
            if await self._page(after=self.cache.upper_edge(message.id)) is None:
                return None
            answer = self.cache.next(message.id)
        return None if answer is UNKNOWN else answer

    async def recent(
        self, trigger: MessageLike, count: int, keep: Callable[[MessageLike], bool] | None = None
    ) -> list[MessageLike]:
        """The ``count`` messages right before the trigger that ``keep`` accepts, newest first."""
        found: list[MessageLike] = []
        current = trigger
        while len(found) < count:
            previous = await self.previous(current)
            if previous is None:
                break
            if keep is None or keep(previous):
                found.append(previous)
            current = previous
        return found

    # ------------------------------------------------------------------ paging

    async def _page(
        self, *, before: int | None = None, after: int | None = None, around: int | None = None
    ) -> list[MessageLike] | None:
        where = (
            f"before {before}"
            if before is not None
            else f"after {after}"
            if after is not None
            else f"around {around}"
        )
        self.rest_calls += 1
        try:
            page = await self.source.history(
                before=before, after=after, around=around, limit=self.page_limit
            )
        except SourceError as error:
            self.errors.append(error)
            self.log.append(
                WorkEntry(action="history_page", detail=f"{where}: {error}", status="failure")
            )
            return None
        self.log.append(WorkEntry(action="history_page", detail=where, messages=len(page)))
        full = len(page) >= self.page_limit
        ids = [message.id for message in page]
        # A page bounded by a message we hold also covers that message itself.
        if before is not None:
            lo = min(ids) if full else 0
            self.cache.add_page(page, lo, before if before in self.cache else before - 1)
        elif after is not None:
            hi = max(ids) if full else LIVE
            self.cache.add_page(page, after if after in self.cache else after + 1, hi)
        elif page:
            self.cache.add_page(page, min(ids), max(ids))
        return page
