"""Each link is fetched at most once per cache lifetime.

Two layers: finished results in a bounded LRU with expiry (a failure expires sooner than an
article, so a site that was down gets another chance), and fetches still in progress, which a
second request for the same link joins instead of starting its own (two messages of a context,
or two contexts built at once, often carry the same link).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from conversation.articles.models import ArticleResult

Clock = Callable[[], float]


class ArticleCache:
    """Results keyed by ``url_key``; one instance per ``ArticleService``."""

    def __init__(
        self,
        max_entries: int,
        ttl_seconds: float,
        failure_ttl_seconds: float,
        clock: Clock = time.monotonic,
    ) -> None:
        self._max_entries = max_entries
        self._ttl = ttl_seconds
        self._failure_ttl = failure_ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, ArticleResult]] = OrderedDict()
        self._inflight: dict[str, asyncio.Task[ArticleResult]] = {}
        self.hits = 0  # answered from a finished result
        self.joins = 0  # answered by a load already in progress
        self.loads = 0  # loads started

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> ArticleResult | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, result = entry
        if self._clock() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return result

    def put(self, key: str, result: ArticleResult) -> None:
        ttl = self._ttl if result.ok else self._failure_ttl
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock() + ttl, result)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def in_flight(self, key: str) -> bool:
        return key in self._inflight

    async def get_or_load(
        self, key: str, load: Callable[[], Awaitable[ArticleResult]]
    ) -> ArticleResult:
        """The cached result, or the one being loaded, or a new load. A caller that is
        cancelled does not cancel a load others may be waiting for (hence the shield)."""
        cached = self.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        task = self._inflight.get(key)
        if task is None:
            self.loads += 1
            task = asyncio.create_task(self._load(key, load), name=f"article {key}")
            # A callback, not a `finally`: a task cancelled before it starts never runs one.
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
            self._inflight[key] = task
        else:
            self.joins += 1
        return await asyncio.shield(task)

    async def _load(self, key: str, load: Callable[[], Awaitable[ArticleResult]]) -> ArticleResult:
        result = await load()
        self.put(key, result)
        return result

    async def aclose(self) -> None:
        """Cancel loads nobody will collect any more."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
