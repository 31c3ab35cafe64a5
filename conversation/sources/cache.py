"""Per-channel message cache that knows which stretches of history it holds completely.

A cache of messages alone cannot answer "what came right before this message?": the answer may
simply not be cached. So the cache also keeps *coverage*: id intervals in which every message
that exists is cached. History pages add coverage, gateway events keep a live interval growing,
deletions remove messages without breaking coverage. The builder then asks REST only for what
falls outside coverage, which makes a warm busy channel cost no requests at all.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from conversation.common.text import clean_message
from conversation.sources.snowflakes import time_snowflake
from conversation.sources.source import MessageLike

LIVE = 1 << 64  # Upper bound of the live interval: every future message arrives by gateway.


class Unknown(Enum):
    """The cache cannot tell: the question needs a REST call."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN


class ChannelCache:
    """Messages of one channel plus the id intervals known to be complete.

    Bounded: beyond ``max_messages`` the oldest messages are dropped and the coverage shrinks
    with them, so the cache never claims completeness for what it no longer holds. With a
    ``budget`` (the registry's), it also reports every message it gains or loses, so the
    channels together stay within one global number.
    """

    def __init__(
        self,
        channel_id: int,
        *,
        max_messages: int = 5000,
        budget: MessageBudget | None = None,
        slim: Callable[[Any], MessageLike] | None = None,
    ) -> None:
        self.channel_id = channel_id
        self.max_messages = max_messages
        self._budget = budget
        self._slim = slim  # what to keep of a message (see conversation.sources.slim)
        self._ids: list[int] = []
        self._messages: dict[int, MessageLike] = {}
        self._covered: list[list[int]] = []  # sorted, disjoint, non-adjacent [lo, hi] pairs
        self._deleted: set[int] = set()
        self._floor = 0  # ids below it may have been evicted

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, message_id: int) -> bool:
        return message_id in self._messages

    # ------------------------------------------------------------------ learning

    def add(self, message: MessageLike) -> None:
        """Store a message; a copy from an edit event replaces the old one."""
        self._store(message, replace=True)

    def add_if_absent(self, message: MessageLike) -> None:
        """Store a message unless a copy is held: what the cache holds may be a newer edit."""
        self._store(message, replace=False)

    def _store(self, message: MessageLike, *, replace: bool) -> None:
        message_id = message.id
        if message_id in self._deleted:
            return
        clean_message(message)  # every live message, gateway or REST, enters here
        grew = message_id not in self._messages
        if not grew and not replace:
            return
        if self._slim is not None:
            message = self._slim(message)
        if grew:
            bisect.insort(self._ids, message_id)
        self._messages[message_id] = message
        self._learn_reference(message)
        if len(self._ids) > self.max_messages:
            self._evict(len(self._ids) - self.max_messages)
        if grew and self._budget is not None:
            self._budget.grew(self)

    def _learn_reference(self, message: MessageLike) -> None:
        """A payload's ``referenced_message`` is a full message: keep it, or its deletion."""
        reference = message.reference
        if reference is None or reference.message_id is None:
            return
        resolved = reference.resolved
        if resolved is None:
            return
        if getattr(resolved, "content", None) is None:  # nextcord's DeletedReferencedMessage
            self._deleted.add(reference.message_id)
            self._drop(reference.message_id)
            return
        if getattr(getattr(resolved, "channel", None), "id", self.channel_id) != self.channel_id:
            return
        self.add_if_absent(resolved)  # type: ignore[arg-type]

    def add_page(self, messages: list[MessageLike], lo: int, hi: int) -> None:
        """Store a history page and record that it holds everything in ``[lo, hi]``."""
        for message in messages:
            self.add(message)
        self.cover(lo, hi)

    def cover(self, lo: int, hi: int) -> None:
        # Below the eviction floor messages may have been dropped: never claim them complete.
        lo = max(lo, self._floor)
        if lo > hi:
            return
        merged: list[list[int]] = []
        placed = False
        for interval in self._covered:
            if interval[1] + 1 < lo:
                merged.append(interval)
            elif hi + 1 < interval[0]:
                if not placed:
                    merged.append([lo, hi])
                    placed = True
                merged.append(interval)
            else:
                lo, hi = min(lo, interval[0]), max(hi, interval[1])
        if not placed:
            merged.append([lo, hi])
        merged.sort()
        self._covered = merged

    @property
    def live(self) -> bool:
        return bool(self._covered) and self._covered[-1][1] == LIVE

    def go_live(self, since: datetime | None = None) -> None:
        """From now on every message arrives by gateway: history from ``since`` on is complete."""
        since = since or datetime.now(UTC)
        self.cover(time_snowflake(since), LIVE)

    def on_gateway_message(self, message: MessageLike) -> None:
        """A MESSAGE_CREATE: store it; the first one of a session starts the live interval.

        Live coverage starts at the first message the gateway delivered, not at a wall-clock
        time, so neither clock skew nor messages from before the session can fall inside it.
        """
        self.add(message)
        if not self.live:
            self.cover(message.id, LIVE)

    def stop_live(self) -> None:
        """The gateway session was lost without resume: coverage stops at the last message seen;
        the next session's first message starts a new live interval."""
        if not self.live:
            return
        lo = self._covered[-1][0]
        newest = self._ids[-1] if self._ids and self._ids[-1] >= lo else lo
        self._covered[-1][1] = newest

    def on_delete(self, message_id: int) -> None:
        self._deleted.add(message_id)
        self._drop(message_id)

    def _drop(self, message_id: int) -> None:
        if self._messages.pop(message_id, None) is not None:
            index = bisect.bisect_left(self._ids, message_id)
            del self._ids[index]
            if self._budget is not None:
                self._budget.shrank(1)

    def detach(self) -> None:
        """No longer counted against the registry's budget (the registry dropped it; whoever
        still holds it may finish with it)."""
        self._budget = None

    def shrink(self, count: int) -> None:
        """Give up the ``count`` oldest messages (coverage below them goes too)."""
        if count > 0:
            self._evict(min(count, len(self._ids)))

    def _evict(self, excess: int) -> None:
        dropped, self._ids = self._ids[:excess], self._ids[excess:]
        for message_id in dropped:
            del self._messages[message_id]
        if self._budget is not None:
            self._budget.shrank(len(dropped))
        if not dropped:
            return
        # Emptied, the cache may claim nothing up to the newest message it dropped.
        floor = self._ids[0] if self._ids else dropped[-1] + 1
        self._floor = max(self._floor, floor)
        self._covered = [[max(lo, floor), hi] for lo, hi in self._covered if hi >= floor]
        self._deleted = {message_id for message_id in self._deleted if message_id >= floor}

    # ------------------------------------------------------------------ questions

    def covering(self, message_id: int) -> tuple[int, int] | None:
        """The complete interval holding ``message_id``, if any."""
        index = bisect.bisect_right(self._covered, [message_id, LIVE + 1]) - 1
        if index >= 0:
            lo, hi = self._covered[index]
            if lo <= message_id <= hi:
                return lo, hi
        return None

    def get(self, message_id: int) -> MessageLike | Unknown | None:
        """The message; ``None`` when it is known not to exist; ``UNKNOWN`` otherwise."""
        message = self._messages.get(message_id)
        if message is not None:
            return message
        if message_id in self._deleted or self.covering(message_id) is not None:
            return None
        return UNKNOWN

    def is_deleted(self, message_id: int) -> bool:
        return message_id in self._deleted

    def previous(self, message_id: int) -> MessageLike | Unknown | None:
        """The message right before ``message_id``; ``None`` at the channel's start."""
        span = self.covering(message_id)
        if span is None:
            return UNKNOWN
        index = bisect.bisect_left(self._ids, message_id) - 1
        if index >= 0 and self._ids[index] >= span[0]:
            return self._messages[self._ids[index]]
        return None if span[0] == 0 else UNKNOWN

    def held_before(self, message_id: int, count: int) -> list[MessageLike]:
        """Up to ``count`` messages right before ``message_id``, newest first, as far as the
        complete stretch holding it goes: what ``previous`` answers step by step, in one slice
        (a walk back through a busy channel asks for two hundred)."""
        span = self.covering(message_id)
        if span is None or count <= 0:
            return []
        end = bisect.bisect_left(self._ids, message_id)
        start = max(end - count, bisect.bisect_left(self._ids, span[0]))
        return [self._messages[i] for i in reversed(self._ids[start:end])]

    def next(self, message_id: int) -> MessageLike | Unknown | None:
        """The message right after ``message_id``; ``None`` when none exists yet."""
        span = self.covering(message_id)
        if span is None:
            return UNKNOWN
        index = bisect.bisect_right(self._ids, message_id)
        if index < len(self._ids) and self._ids[index] <= span[1]:
            return self._messages[self._ids[index]]
        return None if span[1] == LIVE else UNKNOWN

    def lower_edge(self, message_id: int) -> int:
        """Where a page fetched to extend coverage below ``message_id`` should start."""
        span = self.covering(message_id)
        return span[0] if span is not None else message_id

    def upper_edge(self, message_id: int) -> int:
        span = self.covering(message_id)
        return span[1] if span is not None else message_id

    def messages(self) -> Iterator[MessageLike]:
        return (self._messages[message_id] for message_id in self._ids)


class MessageBudget:
    """How many messages all channel caches hold together, and who gives way past the limit:
    the least recently used channels lose their oldest messages first, the channel that is
    growing only when it is the last one left."""

    def __init__(self, limit: int, registry: CacheRegistry) -> None:
        self.limit = limit
        self.used = 0
        self._registry = registry

    def grew(self, cache: ChannelCache) -> None:
        self.used += 1
        if self.used > self.limit:
            self._registry.make_room(self.used - self.limit, growing=cache)

    def shrank(self, count: int) -> None:
        self.used -= count


class CacheRegistry:
    """One cache per channel, shared by every trigger in it; bounded in channels, in messages
    per channel, and in messages across all channels (``max_total``)."""

    def __init__(
        self,
        *,
        max_channels: int = 500,
        max_messages: int = 5000,
        max_total: int | None = None,
        slim: Callable[[Any], MessageLike] | None = None,
    ) -> None:
        self.max_channels = max_channels
        self.max_messages = max_messages
        self.slim = slim
        self.budget = MessageBudget(max_total, self) if max_total is not None else None
        self._caches: OrderedDict[int, ChannelCache] = OrderedDict()  # least recently used first

    def for_channel(self, channel_id: int) -> ChannelCache:
        cache = self._caches.get(channel_id)
        if cache is None:
            if len(self._caches) >= self.max_channels:
                self._remove(next(iter(self._caches.values())))
            cache = self._caches[channel_id] = ChannelCache(
                channel_id, max_messages=self.max_messages, budget=self.budget, slim=self.slim
            )
        else:
            self._caches.move_to_end(channel_id)
        return cache

    def make_room(self, count: int, *, growing: ChannelCache) -> None:
        """Free ``count`` messages, least recently used channels first."""
        for cache in list(self._caches.values()):
            if count <= 0:
                return
            if cache is growing:
                continue
            taken = min(count, len(cache))
            cache.shrink(taken)
            count -= taken
            if not len(cache):
                self._remove(cache)
        growing.shrink(count)

    def _remove(self, cache: ChannelCache) -> None:
        del self._caches[cache.channel_id]
        if self.budget is not None:
            self.budget.shrank(len(cache))
        cache.detach()

    def get(self, channel_id: int) -> ChannelCache | None:
        return self._caches.get(channel_id)

    def __len__(self) -> int:
        return len(self._caches)

    def __iter__(self) -> Iterator[ChannelCache]:
        return iter(list(self._caches.values()))
