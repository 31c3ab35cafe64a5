"""What one member can make the bot do: typed ids that are not ids, edits of messages the bot
never used, a flood of triggers, role blocks that follow a member into DMs. Real nextcord client
against the fake Discord, real SQLite."""

from __future__ import annotations

import asyncio

from bot.storage import Store
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, ELI, running_bot, settled


async def context_reply(bot, message_id: str) -> str:
    options = [{"name": "message_id", "type": 3, "value": message_id}]
    record = await bot.discord.invoke_command(CHANNEL, CHLOE, "context", options)
    body = await bot.discord.wait_for_interaction_response(record, timeout=10)
    return body["data"]["content"]


async def test_a_huge_number_as_context_message_id_gets_one_line(tmp_path):
    # int() refuses strings of more than 4300 digits: it must not be reached with one.
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            text = await context_reply(bot, "9" * 5000)
            assert text == "That is not a message id (right-click a message, Copy Message ID)."
            assert "not a message id" in await context_reply(bot, "9" * 20)


async def test_edits_of_messages_the_bot_never_used_are_not_stored(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, permissions={"blocked_channels": [CHANNEL]}) as bot:
            said = await bot.discord.user_says(CHANNEL, ELI, "private chat, nothing for the bot")
            for n in range(5):
                await bot.discord.edit_message(CHANNEL, said["id"], f"secret v{n}")
            # The cache follows the edits; once it shows the last, the store has had them all.
            for _ in range(100):
                cache = bot.client.caches.get(CHANNEL)
                cached = cache.get(int(said["id"])) if cache is not None else None
                if cached is not None and cached.content == "secret v4":
                    break
                await asyncio.sleep(0.02)
            assert cached is not None and cached.content == "secret v4"
            await asyncio.sleep(0.1)
        assert store.message_versions(int(said["id"])) == []
        assert store.counts()["message_versions"] == 0


async def test_an_edit_of_a_trigger_is_still_a_new_version(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            said = await bot.discord.user_says(CHANNEL, ELI, f"<@{BOT_ID}> port 5432?")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
            await settled(bot)
            await bot.discord.edit_message(CHANNEL, said["id"], f"<@{BOT_ID}> port 6543?")
            for _ in range(100):
                if len(store.message_versions(int(said["id"]))) > 1:
                    break
                await asyncio.sleep(0.02)
        versions = store.message_versions(int(said["id"]))
    assert [v.state for v in versions] == ["superseded", "active"]
    assert versions[-1].content.endswith("port 6543?")
