"""Each channel's latest ``/fresh`` seal as the store recorded it (``conversation.selection.seal``
recognises one on the message itself): a channel read on a cold cache, whose seal the cache does
not hold, is sealed all the same. Asked of the store once per channel per process (the seals
this process sees are added as they arrive); a seal deleted is asked again.
"""

from __future__ import annotations

import asyncio
import logging

from bot.storage import Store, StoreError

log = logging.getLogger(__name__)


class ChannelSeals:
    """Channel id -> its latest standing seal's message id (None: none), as far as known."""

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self._latest: dict[int, int | None] = {}

    async def latest(self, channel_id: int) -> int | None:
        if channel_id in self._latest or self.store is None:
            return self._latest.get(channel_id)
        try:
            found = await asyncio.to_thread(self.store.latest_seal, channel_id)
        except StoreError as error:  # the cache's own seals still hold
            log.warning("could not read the channel's seal from the store: %s", error)
            return None
        self._latest[channel_id] = found
        return found

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
        sealed by an earlier seal; the store dropped the deleted one's row)."""
        if self._latest.get(channel_id) == message_id:
            del self._latest[channel_id]
