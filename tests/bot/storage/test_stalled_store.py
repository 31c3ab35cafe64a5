"""A stalled PostgreSQL (it accepts connections and answers nothing) never stops answers: the
answered-once claim waits a bounded time, the records wait in line after the channel's turn
and arrive once the store is back, and a clean stop still writes what was answered.

The real client against the stand-in Discord and model, a real PostgreSQL behind a TCP proxy
that the test pauses (``fakes/stall_proxy.py``): the bot's connections, the writer's open one
included, see a database that stopped answering mid-conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from bot.demo.openai_server import Answer
from bot.storage import Store
from tests.fakes.harness import BEN, CHANNEL, CHLOE, DEV, running_bot, settled
from tests.fakes.stall_proxy import StallingProxy

ANSWERED_WITHIN = 8.0
"""Seconds a mention may take to be answered while the store stalls: generous for a busy
machine (about 2 s measured: the claim's wait and the model), yet under the 10 s connect
timeout the claim used to wait out, and far under "never" for the second mention."""


def proxied(url: str, port: int) -> str:
    """``url`` (pgserver's, over a Unix socket) through the proxy on 127.0.0.1:``port``."""
    parts = urlsplit(url)
    query = [(key, value) for key, value in parse_qsl(parts.query) if key != "host"]
    return f"postgresql://postgres@127.0.0.1:{port}{parts.path}?{urlencode(query)}"


def unix_socket(url: str) -> Path:
    host = dict(parse_qsl(urlsplit(url).query))["host"]
    return next(path for path in Path(host).glob(".s.PGSQL.*") if path.suffix != ".lock")


async def answered_in(bot: object, channel: int, user: int, text: str) -> float:
    """Seconds from a member's mention to the bot's first message after it."""
    began = time.perf_counter()
    said = await bot.discord.user_says(channel, user, text)  # type: ignore[attr-defined]
    await bot.discord.wait_for_bot_message(  # type: ignore[attr-defined]
        channel, after=int(said["id"]), timeout=ANSWERED_WITHIN
    )
    return time.perf_counter() - began


@contextlib.asynccontextmanager
async def behind_a_proxy(postgres_server: Any) -> AsyncIterator[tuple[Store, StallingProxy, str]]:
    """A store on a fresh database reached through a proxy the test may pause; the database's
    own URL too (to read around the proxy)."""
    url = postgres_server.fresh_url()
    with StallingProxy(unix_socket(url)) as proxy:
        store = await asyncio.to_thread(Store.open_url, proxied(url, proxy.port))
        try:
            yield store, proxy, url
        finally:
            proxy.resume()
            await asyncio.to_thread(store.close)


async def interactions(url: str) -> int:
    """Interactions the store holds, read around the proxy (the server itself is fine)."""

    def count() -> int:
        with Store.open_url(url) as store:
            return store.counts()["interactions"]

    return await asyncio.to_thread(count)


async def current_state(url: str, message_id: int | str) -> str:
    """The state of the store's latest version of a message (read around the proxy)."""

    def read() -> str:
        with Store.open_url(url) as store:
            return str(store.message_versions(int(message_id))[-1].state)

    return await asyncio.to_thread(read)


@pytest.mark.slow
async def test_a_stalled_store_never_stops_answers_and_its_records_arrive_once_back(
    postgres_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with behind_a_proxy(postgres_server) as (store, proxy, url):
        async with running_bot(store=store) as bot:
            healthy = await answered_in(bot, CHANNEL, DEV, "<@1300000000000000100> warm up")
            await settled(bot)
            assert await interactions(url) == 1

            proxy.pause()
            first = await answered_in(bot, CHANNEL, BEN, "<@1300000000000000100> one?")
            second = await answered_in(bot, CHANNEL, CHLOE, "<@1300000000000000100> two?")
            print(
                f"answered in {healthy:.2f} s with the store up; while it stalls, in "
                f"{first:.2f} s and {second:.2f} s"
            )
            assert await interactions(url) == 1  # both records wait for the store
            # Deleted while its answer's record waits behind another (not yet handed to the
            # store): written after the deletion, the record must not bring it back (the
            # store keeps a deletion of a message it does not know yet).
            asked_second = next(
                m["id"] for m in bot.discord.messages(CHANNEL) if m["content"].endswith("two?")
            )
            await bot.discord.delete_message(CHANNEL, asked_second)

            proxy.resume()
            await settled(bot)
            assert await interactions(url) == 3
            assert await current_state(url, asked_second) == "invalidated"

            proxy.pause()  # a stop while the store stalls: the drain waits for it
            await answered_in(bot, CHANNEL, DEV, "<@1300000000000000100> last one?")
            asyncio.get_running_loop().call_later(1.0, proxy.resume)
        assert await interactions(url) == 4
    claims = [r.getMessage() for r in caplog.records if "whether" in r.getMessage()]
    assert claims, "the claims did not wait on the stalled store"


@pytest.mark.slow
async def test_a_store_stalled_before_a_channel_first_answers_holds_none_of_its_answers(
    postgres_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """No warm-up: the store stalls before the channel's first answer, so its seal was never
    read. The store is waited on a bounded time once (the claim's question, which the seal
    lookup shares), then not at all while it stalls;
    and a bulk deletion leaves the cache at once, all of it, while its writes wait."""
    caplog.set_level(logging.INFO)
    async with (
        behind_a_proxy(postgres_server) as (store, proxy, _url),
        running_bot(store=store) as bot,
    ):
        slips = [
            await bot.discord.user_says(CHANNEL, DEV, f"the {which} token is tk-{which}")
            for which in ("wifi", "vpn")
        ]
        proxy.pause()
        first = await answered_in(bot, CHANNEL, BEN, "<@1300000000000000100> one?")
        second = await answered_in(bot, CHANNEL, CHLOE, "<@1300000000000000100> two?")
        print(f"answered in {first:.2f} s and {second:.2f} s while the store stalls")
        await bot.discord.delete_messages(CHANNEL, [int(m["id"]) for m in slips])
        await answered_in(bot, CHANNEL, BEN, "<@1300000000000000100> three?")
        sent = str(bot.model.chat_requests[-1].messages)
        assert "tk-wifi" not in sent and "tk-vpn" not in sent
        proxy.resume()
        await settled(bot)
    assert second < first  # the second did not wait on the store again
    # One question outlived its wait (the claim's); none was asked after it, the seal's neither.
    stalls = [r.getMessage() for r in caplog.records if "did not say" in r.getMessage()]
    assert len(stalls) == 1, stalls


@pytest.mark.slow
async def test_a_record_whose_connection_broke_is_written_on_the_retry(
    postgres_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL restarted under the bot (its connections ended): the record's first attempt
    fails on the dead connection, the retry connects again and writes it. (The model reports
    no usage, so no calibration is stored first: the record meets the dead connection.)"""
    import psycopg

    caplog.set_level(logging.WARNING, logger="bot.answering.record_line")
    url = postgres_server.fresh_url()
    store = await asyncio.to_thread(Store.open_url, url)
    try:
        async with running_bot(store=store, fake_model={"default": Answer(usage=False)}) as bot:
            await answered_in(bot, CHANNEL, DEV, "<@1300000000000000100> warm up")
            await settled(bot)
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                )
            await answered_in(bot, CHANNEL, BEN, "<@1300000000000000100> after the restart?")
            await settled(bot)
            assert await interactions(url) == 2
    finally:
        await asyncio.to_thread(store.close)
    retried = [r.getMessage() for r in caplog.records if r.name.startswith("bot.")]
    assert len(retried) == 1 and "(attempt 1), retrying" in retried[0], retried


async def test_a_record_the_store_keeps_refusing_costs_one_log_line_not_the_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.answering.record_line")
    store = Store.open(tmp_path / "store.sqlite3")
    async with running_bot(store=store) as bot:
        records = bot.client.answerer.records
        monkeypatch.setattr(records, "_retry_delays", (0.01, 0.01))  # quick, as many tries
        store.close()  # every write now fails at once
        await answered_in(bot, CHANNEL, BEN, "<@1300000000000000100> still answered?")
        await settled(bot)
        assert not records
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "could not record the interaction for message" in lines[0].getMessage()
    assert "(3 attempts)" in lines[0].getMessage()


@pytest.mark.slow
async def test_a_catch_up_asked_in_a_mention_is_answered_while_the_store_stalls(
    postgres_server: Any,
) -> None:
    """The catch_up tool runs inside the answer's turn: its summaries' records are handed to
    the store and not waited for, so a stalled store holds neither this answer nor the next;
    once it is back, they arrive with the answer's."""
    from bot.config.tool_settings import ToolSettings
    from bot.demo.openai_server import CallTools
    from bot.tools.toolbox import Toolbox
    from tests.bot.test_catchup_e2e import three_conversations
    from tests.bot.test_catchup_tool_e2e import TOOLS_ON, model
    from tests.fakes.harness import ELI

    mention = "<@1300000000000000100>"
    url = postgres_server.fresh_url()
    with StallingProxy(unix_socket(url)) as proxy:
        store = await asyncio.to_thread(Store.open_url, proxied(url, proxy.port))
        try:
            toolbox = Toolbox(ToolSettings(**TOOLS_ON))
            async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
                await answered_in(bot, CHANNEL, DEV, f"{mention} warm up")  # the seal read
                await bot.discord.user_says(CHANNEL, ELI, "morning all, off to meetings")
                await three_conversations(bot)
                await settled(bot)
                proxy.pause()
                bot.model.queue(CallTools((("catch_up", "{}"),)))
                bot.model.script(model)
                took = await answered_in(bot, CHANNEL, ELI, f"{mention} what did I miss?")
                await settled(bot)
                summaries = len(bot.model.chat_requests) - 3  # the warm-up, the answer's two
                answer = bot.discord.bot_messages(CHANNEL)[-1]["content"]
                assert "https://discord.com/channels/" in answer, answer
                next_one = await answered_in(bot, CHANNEL, BEN, f"{mention} and you?")
                print(f"answered in {took:.2f} s and {next_one:.2f} s while the store stalled")
                assert await interactions(url) == 1  # the warm-up's
                proxy.resume()
                await settled(bot)
                for _ in range(100):  # the summaries' records, then the two answers'
                    if await interactions(url) == summaries + 3:
                        break
                    await asyncio.sleep(0.1)
            assert summaries == 3 and await interactions(url) == summaries + 3
        finally:
            proxy.resume()
            await asyncio.to_thread(store.close)
