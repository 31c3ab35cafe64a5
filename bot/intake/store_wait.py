"""Questions on a message's way to its answer that the store answers (was it answered, the
channel's seal), each waited on a bounded time: a stalled PostgreSQL (accepting connections and
answering nothing) must not hold a mention for its connect timeout. And until the question that
outlived its wait comes back, the next ones are not asked at all: each would hold a worker
thread for that timeout, and a few of them the threads every other store read needs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class BoundedQuestions:
    """Questions to one store, each waited on at most ``wait()`` seconds (read at each)."""

    def __init__(self, wait: Callable[[], float]) -> None:
        self._wait = wait
        self._out: asyncio.Future[object] | None = None  # the one that outlived its wait

    @property
    def stalled(self) -> bool:
        """A question outlived its wait and is still out: ask nothing now."""
        return self._out is not None

    async def ask(self, question: Awaitable[T], what: str) -> asyncio.Future[T] | None:
        """The question, done (its result or its error), or None when it outlived the wait:
        then it is logged (``what`` the store did not say, with the consequence) and goes on
        alone, and ``stalled`` holds until it comes back."""
        asking = asyncio.ensure_future(question)
        wait = self._wait()
        await asyncio.wait({asking}, timeout=wait)
        if asking.done():
            return asking
        log.warning(
            "the store did not say %s within %.1f s: going on without it, and not asking the "
            "store again until it does",
            what,
            wait,
        )
        self._out = asking  # type: ignore[assignment]
        asking.add_done_callback(self._back)
        return None

    def _back(self, asking: asyncio.Future[object]) -> None:
        self._out = None
        error = None if asking.cancelled() else asking.exception()
        log.info("the store answers again%s", f" ({error})" if error else "")
