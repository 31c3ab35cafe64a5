"""What one member can make the bot do: typed ids that are not ids, edits of messages the bot
never used, a flood of triggers, role blocks that follow a member into DMs. Real nextcord client
against the fake Discord, real SQLite."""

from __future__ import annotations

from bot.storage import Store
from tests.fakes.harness import CHANNEL, CHLOE, running_bot


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
