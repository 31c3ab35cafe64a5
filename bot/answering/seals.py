"""Each channel's latest ``/fresh`` seal as the store recorded it (``conversation.selection.seal``
recognises one on the message itself): a channel read on a cold cache, whose seal the cache does
not hold, is sealed all the same. Asked of the store once per channel per process when it
answers (the seals this process sees are added as they arrive); a seal deleted is asked again.

The lookup is on every answer's path, so the store is asked for a bounded time only (``[storage]
claim_wait_seconds``, as the answered-once claim is: ``bot.intake.once``): a stalled PostgreSQL
must not hold the channel's turn for its connect timeout, nor hold one worker thread per answer.
While a question that outlived its wait is out (this one's, or the claim's: the bot shares
them), no channel asks; once it comes back, what it read is kept. A store that cannot be read
costs the answer the store's seal only (the cache's own seals still hold), and the channel is
asked again after ``ASK_AGAIN_SECONDS``, not at every answer. A read answers with what the
store held when it ran: a seal posted meanwhile is kept over it, and one deleted meanwhile is
not taken from it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from bot.intake.store_wait import BoundedQuestions
from bot.storage import Store, StoreError

log = logging.getLogger(__name__)

SEAL_WAIT_SECONDS = 1.5
"""How long an answer waits for the store's seal unless told otherwise (the bot passes
``[storage] claim_wait_seconds``): a healthy store answers in milliseconds."""
ASK_AGAIN_SECONDS = 30.0
"""After a failed read, how long the channel goes by its cache's seals before asking again."""
DELETED_KEPT = 1024
"""Message ids deleted lately, remembered so that a read already in flight (or one that reads
the store before the deletion's write reaches it) cannot bring a deleted seal back."""


class ChannelSeals:
    """Channel id -> its latest standing seal's message id (None: none), as far as known."""

    def __init__(
        self,
        store: Store | None,
        *,
        wait: Callable[[], float] = lambda: SEAL_WAIT_SECONDS,
        questions: BoundedQuestions | None = None,
    ) -> None:
        self.store = store
        # Each read waited on a bounded time (``wait()`` read at each: a reload applies).
        self._store = questions or BoundedQuestions(wait)  # shared: the claim's stall counts
        self._latest: dict[int, int | None] = {}
        self._ask_again_at: dict[int, float] = {}  # channel -> when a failed read may be retried
        self._deleted: OrderedDict[int, None] = OrderedDict()

    async def latest(self, channel_id: int) -> int | None:
        if channel_id in self._latest or self.store is None or self._store.stalled:
            return self._latest.get(channel_id)
        if time.monotonic() < self._ask_again_at.get(channel_id, 0.0):
            return None
        reading = asyncio.ensure_future(asyncio.to_thread(self.store.latest_seal, channel_id))
        reading.add_done_callback(functools.partial(self._read, channel_id))
        await self._store.ask(reading, f"channel {channel_id}'s seal")
        return self._latest.get(channel_id)

    def _read(self, channel_id: int, reading: asyncio.Future[int | None]) -> None:
        """A read came back (maybe after its asker went on): what it found is kept."""
        error = None if reading.cancelled() else reading.exception()
        if reading.cancelled() or error is not None:
            # Not only a StoreError: a driver's error raised mid-query must not fail the answer.
            log.warning("could not read channel %s's seal from the store: %s", channel_id, error)
            self._ask_again_at[channel_id] = time.monotonic() + ASK_AGAIN_SECONDS
            return
        found = reading.result()
        if found is not None and found in self._deleted:
            return  # read before its deletion reached the store: asked again next time
        self._ask_again_at.pop(channel_id, None)
        known = self._latest.get(channel_id)
        self._latest[channel_id] = max(found or 0, known or 0) or None

    async def posted(self, channel_id: int, message_id: int) -> None:
        """The bot's ``/fresh`` seal arrived (the gateway's message): kept, and recorded."""
        known = self._latest.get(channel_id)
        self._latest[channel_id] = max(message_id, known or 0)
        if self.store is not None:
            try:
                await self.store.record_seal(channel_id, message_id)
            except StoreError as error:
                log.warning("could not record the seal %s: %s", message_id, error)

    def deleted(self, channel_id: int, message_id: int) -> None:
        """A message deleted: if it was the seal, the channel is asked again (un-sealed, or
        sealed by an earlier seal; the store drops the deleted one's row)."""
        self._deleted[message_id] = None
        while len(self._deleted) > DELETED_KEPT:
            self._deleted.popitem(last=False)
        if self._latest.get(channel_id) == message_id:
            del self._latest[channel_id]
