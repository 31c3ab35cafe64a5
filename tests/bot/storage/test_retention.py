"""``[storage] retention_days`` is applied when the bot starts and then daily while it runs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import bot.answering.recording
from bot.answering.recording import open_recorder
from bot.config.schema import Config
from bot.storage import Store, StoreError
from tests.bot.storage.test_storage import make_record

DAY = timedelta(days=1)


def config_for(tmp_path, days: int) -> Config:
    return Config.model_validate(
        {"storage": {"path": str(tmp_path / "store.sqlite3"), "retention_days": days}}
    )


def known(store: Store, trigger: int) -> bool:
    try:
        store.explain(trigger)
    except StoreError:
        return False
    return True


async def test_old_interactions_go_at_start_up_and_then_daily(tmp_path, monkeypatch):
    now = datetime.now(UTC)
    async with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record(make_record(1, [(1, 5, "forty days ago")], started=now - 40 * DAY))
        await store.record(make_record(2, [(2, 5, "yesterday")], started=now - DAY))
    monkeypatch.setattr(bot.answering.recording, "RETENTION_INTERVAL_SECONDS", 0.05)
    async with open_recorder(config_for(tmp_path, 30)) as recorder:
        assert not known(recorder.store, 1) and known(recorder.store, 2)
        # The bot keeps running; an interaction now past the limit goes at the next daily pass.
        await recorder.store.record(make_record(3, [(3, 5, "old")], started=now - 31 * DAY))
        for _ in range(100):
            if not known(recorder.store, 3):
                break
            await asyncio.sleep(0.02)
        assert not known(recorder.store, 3) and known(recorder.store, 2)


async def test_zero_keeps_everything(tmp_path):
    async with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record(
            make_record(1, [(1, 5, "long ago")], started=datetime(2020, 1, 1, tzinfo=UTC))
        )
    async with open_recorder(config_for(tmp_path, 0)) as recorder:
        assert known(recorder.store, 1)


def test_the_default_keeps_thirty_days():
    assert Config().storage.retention_days == 30
