"""Following end to end: the real nextcord client against the fake Discord and fake model.

After the bot answers a member, that member's next message without a mention is answered (as a
reply), while another member's conversation, a message addressed to someone else, a channel
where following is off and another bot's messages are left alone.
"""

from __future__ import annotations

import asyncio

from bot.storage import Store, render_text
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, DEV, ELI, Harness, running_bot, settled
from tests.fakes.openai_server import Answer

UPGRADE_ANSWER = (
    "For an 800 GB database, the in-place upgrade with hard links is the quick route: "
    "pg_upgrade --link finishes in minutes, but keep a backup since the old cluster cannot "
    "be started once the new one runs."
)


async def talk_to_bot(bot: Harness) -> dict:
    """Chloé asks the bot (a mention) and gets its answer."""
    bot.model.queue(Answer(text=UPGRADE_ANSWER))
    reply = await bot.answer_to(
        CHANNEL, CHLOE, f"<@{BOT_ID}> how do I upgrade the 800 GB database quickly?"
    )
    await settled(bot)
    return reply


async def answered(bot: Harness, said: dict, wait: float = 0.6) -> bool:
    """Whether the bot answered ``said`` (a reply to it) within ``wait`` seconds."""
    await asyncio.sleep(wait)
    await settled(bot)
    replies = [
        m
        for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
        if (m.get("message_reference") or {}).get("message_id") == said["id"]
    ]
    return bool(replies)


async def test_a_follow_up_without_mention_is_answered_as_a_reply():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, "and does the link mode also rebuild the indexes of the database?"
        )
        assert await answered(bot, said)
        assert len(bot.model.chat_requests) == requests + 1


async def test_another_member_starting_another_conversation_is_not_answered():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(CHANNEL, ELI, "lunch at the pizza place at noon?")
        other = await bot.discord.user_says(CHANNEL, DEV, "sure, noon works for me")
        assert not await answered(bot, said)
        assert not await answered(bot, other, wait=0.1)
        assert len(bot.model.chat_requests) == requests


async def test_a_message_mentioning_another_member_is_not_answered():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, f"<@{DEV}> does the link mode also rebuild the indexes?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests


async def test_follow_off_for_the_channel_leaves_the_follow_up_alone():
    async with running_bot(triggers={"follow_off_channels": [CHANNEL]}) as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, "and does the link mode also rebuild the indexes of the database?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests


async def test_another_bots_message_is_never_followed():
    helper = 1300000000000000777
    async with running_bot(triggers={"answer_bots": True}) as bot:
        bot.discord.add_user(helper, "helperbot", bot=True)
        bot.model.queue(Answer(text=UPGRADE_ANSWER))
        await bot.answer_to(CHANNEL, helper, f"<@{BOT_ID}> how do I upgrade the database?")
        await settled(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, helper, "and does the link mode also rebuild the indexes of the database?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests


async def test_the_explanation_says_the_answer_followed(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await talk_to_bot(bot)
            said = await bot.discord.user_says(
                CHANNEL, CHLOE, "and does the link mode also rebuild the indexes of the database?"
            )
            assert await answered(bot, said)
        explanation = await store.explain_async(int(said["id"]))
    text = render_text(explanation)
    assert "followed: no mention, continues the conversation with Chloé, score 0." in text
