"""``/context`` shows an answer only to people who can view its channel, end to end."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

from bot.answering.recording import InteractionRecorder
from bot.demo.discord_gateway import INTENT_GUILDS
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from conversation.replay.dce import load_export
from tests.fakes.harness import (
    ALICE,
    BEN,
    BOT_ID,
    CHANNEL,
    CHLOE,
    DM_CHANNEL,
    EXAMPLE,
    ROOT,
    Harness,
    make_config,
    running_bot,
    settled,
)

GUILD = "1300000000000000000"
STAFF_ONLY = 1300000000000000050
VIEW_CHANNEL = 1 << 10


def staff_channel_log(path: Path) -> Path:
    """A channel of the example's guild, to be hidden from everyone but Ben and the bot."""
    export = json.loads((ROOT / "examples" / "support-channel.json").read_text())
    export["channel"] = export["channel"] | {"id": str(STAFF_ONLY), "name": "staff-only"}
    export["messages"] = [m for m in export["messages"] if m["author"]["id"] == str(BEN)][:1]
    path.write_text(json.dumps(export))
    return path


async def add_private_channel(bot: Harness, log: Path) -> None:
    state = bot.discord.state
    state.load_export(load_export(log))
    channel = state.channels[str(STAFF_ONLY)]
    channel["permission_overwrites"] = [
        {"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)},
        {"id": str(BEN), "type": 1, "allow": str(VIEW_CHANNEL), "deny": "0"},
        {"id": str(BOT_ID), "type": 1, "allow": str(VIEW_CHANNEL), "deny": "0"},
    ]
    await bot.discord.gateway.dispatch("CHANNEL_CREATE", channel, intent=INTENT_GUILDS)
    for _ in range(100):
        if bot.client.get_channel(STAFF_ONLY) is not None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the private channel never reached the bot")


async def context_text(bot: Harness, user: int, message_id: int | None = None) -> str:
    options = [{"name": "message_id", "type": 3, "value": str(message_id)}] if message_id else []
    record = await bot.discord.invoke_command(CHANNEL, user, "context", options)
    body = await bot.discord.wait_for_interaction_response(record, timeout=10)
    assert body["data"]["flags"] & 64
    return body["data"]["content"]


def not_found(message_id: int) -> str:
    return f"message {message_id} is neither the trigger nor part of an answer in the store"


async def test_an_answer_in_a_private_channel_is_not_found_for_outsiders(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await add_private_channel(bot, staff_channel_log(tmp_path / "staff.json"))
            said = await bot.discord.user_says(STAFF_ONLY, BEN, f"<@{BOT_ID}> secret plans?")
            reply = await bot.discord.wait_for_bot_message(
                STAFF_ONLY, after=int(said["id"]), timeout=10
            )
            await settled(bot)
            answer = int(reply["id"])
            # Chloe cannot view #staff-only: to her the answer does not exist, by either id.
            assert await context_text(bot, CHLOE, answer) == not_found(answer)
            trigger = int(said["id"])
            assert await context_text(bot, CHLOE, trigger) == not_found(trigger)
            # Ben can: he gets the explanation, from another channel too.
            shown = await context_text(bot, BEN, answer)
    assert shown.startswith(f"Answer to message {trigger} by user {BEN} in channel {STAFF_ONLY}")


async def test_a_dm_answer_is_shown_only_to_its_participant(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
            said = await bot.discord.user_says(DM_CHANNEL, ALICE, "my password is hunter2?")
            reply = await bot.discord.wait_for_bot_message(
                DM_CHANNEL, after=int(said["id"]), timeout=10
            )
            await settled(bot)
            answer = int(reply["id"])
            assert await context_text(bot, CHLOE, answer) == not_found(answer)
            shown = await context_text(bot, ALICE, answer)
    assert shown.startswith(f"Answer to message {said['id']} by user {ALICE}")


async def test_the_latest_answer_here_is_still_explained(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            said = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> how long?")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
            await settled(bot)
            shown = await context_text(bot, BEN)
    assert shown.startswith(f"Answer to message {said['id']} by user {CHLOE}")


async def test_an_answer_in_a_private_thread_is_shown_only_to_its_members(tmp_path):
    thread = 1300000000000000060
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await bot.discord.add_thread(
                thread, CHANNEL, "plans", private=True, members=[BEN, BOT_ID]
            )
            for _ in range(100):
                if bot.client.get_channel(thread) is not None:
                    break
                await asyncio.sleep(0.05)
            said = await bot.discord.user_says(thread, BEN, f"<@{BOT_ID}> secret plans?")
            reply = await bot.discord.wait_for_bot_message(
                thread, after=int(said["id"]), timeout=10
            )
            await settled(bot)
            answer = int(reply["id"])
            # Chloe can read the thread's channel but never joined the thread.
            assert await context_text(bot, CHLOE, answer) == not_found(answer)
            shown = await context_text(bot, BEN, answer)
    assert shown.startswith(f"Answer to message {said['id']} by user {BEN} in channel {thread}")


@contextlib.asynccontextmanager
async def bot_session(discord: FakeDiscord, fake: FakeOpenAI, store: Store) -> AsyncIterator:
    """One run of the bot against a fake Discord that outlives it (as Discord outlives restarts)."""
    config = make_config(discord, fake)
    async with ModelClient(config.model) as model_client:
        client = ThreadwiseClient(
            config,
            articles=None,
            model=model_client,
            recorder=InteractionRecorder(store),
            store=store,
        )
        with discord.nextcord_pointed_here():
            async with discord.running(client) as ready:
                yield Harness(discord=discord, model=fake, client=ready)


async def test_an_answer_in_a_thread_archived_since_a_restart_is_explained_to_members(tmp_path):
    thread = 1300000000000000061
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with (
            FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord,
            FakeOpenAI() as fake,
        ):
            await discord.load_log(EXAMPLE)
            await discord.add_thread(thread, CHANNEL, "plans", private=True, members=[BEN, BOT_ID])
            async with bot_session(discord, fake, store) as bot:
                said = await discord.user_says(thread, BEN, f"<@{BOT_ID}> secret plans?")
                reply = await discord.wait_for_bot_message(
                    thread, after=int(said["id"]), timeout=10
                )
                await settled(bot)
            discord.state.channels[str(thread)]["thread_metadata"]["archived"] = True
            async with bot_session(discord, fake, store) as bot:
                assert bot.client.get_channel(thread) is None  # archived: not in the cache
                answer = int(reply["id"])
                assert await context_text(bot, CHLOE, answer) == not_found(answer)
                shown = await context_text(bot, BEN, answer)
        assert not discord.server_errors, discord.server_errors
    assert shown.startswith(f"Answer to message {said['id']} by user {BEN} in channel {thread}")
