"""The channels' seals as the store holds them, read while the gateway goes on: a seal posted
or deleted while a read is out is not undone by what the read found. A real SQLite store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.answering.seals import ChannelSeals
from bot.storage import Store

CHANNEL = 1300000000000000001
EARLIER, LATER = 1300000000000000500, 1300000000000000600


async def test_a_seal_posted_while_the_store_is_read_is_kept_over_the_read(
    tmp_path: Path,
) -> None:
    async with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record_seal(CHANNEL, EARLIER)
        seals = ChannelSeals(store)
        reading = asyncio.create_task(seals.latest(CHANNEL))
        await asyncio.sleep(0)  # the read is out
        await seals.posted(CHANNEL, LATER)
        await reading
        assert await seals.latest(CHANNEL) == LATER


async def test_a_seal_deleted_before_the_store_knows_is_not_read_back(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record_seal(CHANNEL, EARLIER)
        await store.record_seal(CHANNEL, LATER)
        seals = ChannelSeals(store)
        seals.deleted(CHANNEL, LATER)  # the cache learns first; the store's write follows
        assert await seals.latest(CHANNEL) is None
        await store.record_delete(LATER)
        assert await seals.latest(CHANNEL) == EARLIER
