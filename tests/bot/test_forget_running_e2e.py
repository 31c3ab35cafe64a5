"""forget-user while the bot runs, end to end (issue 53): the real client against the stand-in
Discord and model, the CLI run against the same store (SQLite file or PostgreSQL) as an operator
runs it from a shell. The running bot learns it from the store within seconds and drops what it
remembers of the person: the follow-up sends, and its record stores, nothing of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.storage import Store
from tests.bot.test_append_only_e2e import bot_runs
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, Harness, running_bot, settled

NUMBER = "+1 555 0199 4242"
"""Chloé's phone number: in her message and in the bot's answer (the stand-in model echoes)."""


async def chloe_and_ben_talk_with_the_bot(bot: Harness) -> dict:
    """Chloé asks with her number, Ben names her, the bot answers both; returns its answer to
    Ben (the bot's answer to Chloé echoes her number)."""
    said = f"<@{BOT_ID}> call me at {NUMBER} about the upgrade window"
    first = await bot.answer_to(CHANNEL, CHLOE, said)
    await settled(bot)
    second = await bot.answer_to(
        CHANNEL, BEN, f"<@{BOT_ID}> <@{CHLOE}> asked about the window: tonight works for me",
        reply_to=int(first["id"]),
    )  # fmt: skip
    await settled(bot)
    return second


async def forget_while_running(bot: Harness, config: Path, user: int = CHLOE) -> None:
    """``forget-user`` for ``user`` (the CLI's own event loop, as from a shell), then the time
    the running bot takes to learn it from the store."""
    assert await asyncio.to_thread(main, ["forget-user", str(user), "--config", str(config)]) == 0
    for _ in range(100):
        if user in bot.client.answerer.forgotten.at:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the running bot did not learn of the forget within 10 s")


def sqlite_config(tmp_path: Path) -> tuple[Path, Path]:
    """A SQLite store's file, and a config naming it (what the CLI reads)."""
    path = tmp_path / "store.sqlite3"
    config = tmp_path / "config.toml"
    config.write_text(f"[storage]\npath = {json.dumps(str(path))}\n")
    return path, config


async def follow_up_after_the_forget(store: Store, config: Path) -> tuple[str, str]:
    """The whole story on ``store``; returns every request the model received after the forget
    and the store's export, as text."""
    async with running_bot(store=store) as bot:
        answer = await chloe_and_ben_talk_with_the_bot(bot)
        before = json.dumps([r.body for r in bot.model.chat_requests], ensure_ascii=False)
        assert NUMBER in before and "Chloé" in before  # what there was to forget
        await forget_while_running(bot, config)
        # The score's words of her messages, and of those naming her, went with the forget.
        runtimes = bot.client.answerer.channels._built.values()
        authors = {c.author for r in runtimes for c in r.builder.clues._clues.values()}
        named = {m for r in runtimes for c in r.builder.clues._clues.values() for m in c.mentions}
        assert CHLOE not in authors | named
        asked = len(bot.model.chat_requests)
        await bot.answer_to(
            CHANNEL, BEN, f"<@{BOT_ID}> so what did we settle on?", reply_to=int(answer["id"])
        )
        await settled(bot)
        later = bot.model.chat_requests[asked:]
        assert later  # the follow-up was answered
        sent = json.dumps([r.body for r in later], ensure_ascii=False)
    exported = json.dumps(list(store.export()), ensure_ascii=False)
    return sent, exported


def assert_no_trace(*texts: str) -> None:
    for text in texts:
        assert NUMBER not in text and "555 0199" not in text
        assert "Chloé" not in text and str(CHLOE) not in text


async def test_forget_user_reaches_the_running_bot_on_sqlite(tmp_path):
    path, config = sqlite_config(tmp_path)
    with Store.open(path) as store:
        sent, exported = await follow_up_after_the_forget(store, config)
    assert_no_trace(sent, exported)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))
    assert NUMBER.encode() not in raw and "Chloé".encode() not in raw
    assert "so what did we settle on?" in exported  # the follow-up was recorded


async def test_forget_user_reaches_the_running_bot_on_postgresql(tmp_path, postgres_url):
    config = tmp_path / "config.toml"
    config.write_text(f"[storage]\nurl = {json.dumps(postgres_url)}\n")
    with Store.open_url(postgres_url) as store:
        sent, exported = await follow_up_after_the_forget(store, config)
    assert_no_trace(sent, exported)
    assert "so what did we settle on?" in exported


async def test_after_a_restart_the_channel_read_afresh_leaves_the_forgotten_out(tmp_path):
    """Discord still holds her messages after forget-user: a bot started afterwards reads the
    channel's history cold, and sends nothing of what she said before the forget."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with bot_runs(store) as run:  # one Discord, the bot started twice
            async with run() as bot:
                await chloe_and_ben_talk_with_the_bot(bot)
            await store.forget_user(CHLOE)
            async with run() as bot:  # the cache starts cold
                said = f"<@{BOT_ID}> what is the plan for the window?"
                await bot.answer_to(CHANNEL, BEN, said)
                await settled(bot)
                sent = json.dumps(bot.model.chat_requests[-1].body, ensure_ascii=False)
        exported = json.dumps(list(store.export()), ensure_ascii=False)
    assert "what is the plan for the window?" in sent
    assert_no_trace(sent, exported)


async def test_a_person_who_talks_again_after_the_forget_is_remembered_like_anyone(tmp_path):
    """Chloé, forgotten, asks the bot again: what she says after the forget is new, so the
    request is remembered for its follow-up (before, holding her at all kept it out of the
    memory: every later conversation she took part in lost its prefix)."""
    path, config = sqlite_config(tmp_path)
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            await chloe_and_ben_talk_with_the_bot(bot)
            await forget_while_running(bot, config)
            asked = f"<@{BOT_ID}> a new question: when does the backup run?"
            answer = await bot.answer_to(CHANNEL, CHLOE, asked)
            await settled(bot)
            memory = bot.client.answerer.memory
            assert memory.recent.recall_now(CHANNEL, [int(answer["id"])]) is not None
            count = len(bot.model.chat_requests)
            await bot.answer_to(CHANNEL, CHLOE, "and how long?", reply_to=int(answer["id"]))
            await settled(bot)
            sent = json.dumps([r.body for r in bot.model.chat_requests[count:]])
    assert "when does the backup run?" in sent
    assert NUMBER not in sent and "555 0199" not in sent


async def test_the_forget_watch_outlives_a_failing_read_and_a_failing_drop(
    tmp_path, monkeypatch, caplog
):
    """Any error in the watch (a read that fails with something else than StoreError, an
    error while dropping what the process remembers) is logged, and the next forget still
    reaches the running bot."""
    import logging

    from bot.answering import forgotten as forgotten_module

    caplog.set_level(logging.WARNING, logger="bot.answering.forgotten")
    monkeypatch.setattr(forgotten_module, "POLL_SECONDS", 0.05)
    path, config = sqlite_config(tmp_path)
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            await chloe_and_ben_talk_with_the_bot(bot)
            reading = store.forgotten_since
            failures: list[str] = []

            def read_failing_once(since):  # type: ignore[no-untyped-def]
                if not failures:
                    failures.append("read")
                    raise RuntimeError("a driver error, not a StoreError")
                return reading(since)

            memory = bot.client.answerer.memory
            dropping = memory.drop

            def drop_failing_once(where):  # type: ignore[no-untyped-def]
                if failures == ["read"]:
                    failures.append("drop")
                    raise RuntimeError("the memory could not drop")
                return dropping(where)

            monkeypatch.setattr(store, "forgotten_since", read_failing_once)
            monkeypatch.setattr(memory, "drop", drop_failing_once)
            await forget_while_running(bot, config)  # the drop fails this time
            await forget_while_running(bot, config, BEN)  # reaches it all the same
            assert failures == ["read", "drop"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "could not read who was forgotten" in logged
    assert "could not drop all this process remembers" in logged


async def test_after_a_restart_an_answer_asked_after_the_forget_is_followed(tmp_path):
    """The start-up recall of the bot's latest answers skips what a forgotten person asked
    before the forget, and keeps what they asked after it (new, like anyone's)."""
    from datetime import UTC, datetime, timedelta

    from bot.intake.recall import recall_recent_answers
    from conversation.selection import Follower
    from conversation.sources import time_snowflake
    from tests.bot.storage.test_late_records import record, said

    with Store.open(tmp_path / "store.sqlite3") as store:
        before = time_snowflake(datetime.now(UTC) - timedelta(minutes=1))
        await store.forget_user(CHLOE)
        after = time_snowflake(datetime.now(UTC) + timedelta(seconds=1))
        now = datetime.now(UTC)
        asked_before = record(
            before, CHLOE, [said(CHLOE, "old", before)], now, answer_ids=(before + 1,)
        )
        asked_after = record(
            after, CHLOE, [said(CHLOE, "new", after)], now, answer_ids=(after + 1,)
        )
        await store.record(asked_before.model_copy(update={"channel_id": 71}))
        await store.record(asked_after.model_copy(update={"channel_id": 72}))
        follower = Follower()
        forgotten = dict(store.forgotten_since())
        await recall_recent_answers(store, follower, BOT_ID, 30, forgotten=forgotten)
    assert set(follower._remembered) == {72}


async def test_a_forget_drops_the_meanings_of_messages_no_build_ever_scored(tmp_path):
    """The bot embeds every message it sees (the meaning extra; here a stand-in model), most
    of them never scored by a build: forget-user drops the meaning of each one by the person
    or naming them, in a channel where the bot never answered too."""
    pytest.importorskip("numpy")
    from conversation.selection.meaning import MeaningStore
    from tests.conversation.selection.test_meaning import CountingEmbedder

    lobby, guild = 1300000000000000042, 1300000000000000000
    path, config = sqlite_config(tmp_path)
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            meanings = MeaningStore(CountingEmbedder())  # type: ignore[arg-type]
            bot.client.meanings = bot.client.answerer.channels.meanings = meanings
            await bot.discord.add_text_channel(lobby, guild, "lobby")
            await bot.discord.user_says(lobby, CHLOE, f"my number is {NUMBER}")
            await bot.discord.user_says(lobby, BEN, f"<@{CHLOE}> noted your number")
            await bot.discord.user_says(lobby, BEN, "the weather is fine")
            for _ in range(100):
                if len(meanings) + len(meanings._queued) >= 3:
                    break
                await asyncio.sleep(0.05)
            await meanings.settled()
            assert len(meanings) == 3
            await forget_while_running(bot, config)
            kept = [text for _, text in meanings._vectors]
    assert kept == ["the weather is fine"]
