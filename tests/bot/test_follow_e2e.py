"""Following end to end: the real nextcord client against the fake Discord and fake model.

After the bot answers a member, that member's next message without a mention is answered (as a
reply), while another member's conversation, a message addressed to someone else, a channel
where following is off and another bot's messages are left alone.
"""

from __future__ import annotations

import asyncio

from bot.demo.openai_server import Answer
from bot.storage import Store, render_text
from conversation.replay.dce import DceUser
from tests.bot.test_read_history import deny_history
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, DEV, ELI, Harness, running_bot, settled

UPGRADE_ANSWER = (
    "For an 800 GB database, the in-place upgrade with hard links is the quick route: "
    "pg_upgrade --link finishes in minutes, but keep a backup since the old cluster cannot "
    "be started once the new one runs."
)


async def talk_to_bot(bot: Harness, channel: int = CHANNEL) -> dict:
    """Chloé asks the bot (a mention) and gets its answer."""
    bot.model.queue(Answer(text=UPGRADE_ANSWER))
    reply = await bot.answer_to(
        channel, CHLOE, f"<@{BOT_ID}> how do I upgrade the 800 GB database quickly?"
    )
    await settled(bot)
    return reply


async def answered(bot: Harness, said: dict, wait: float = 0.6) -> bool:
    """Whether the bot answered ``said`` (a reply to it) within ``wait`` seconds."""
    await asyncio.sleep(wait)
    await settled(bot)
    channel = int(said["channel_id"])
    replies = [
        m
        for m in bot.discord.bot_messages(channel, after=int(said["id"]))
        if (m.get("message_reference") or {}).get("message_id") == said["id"]
    ]
    return bool(replies)


async def follow_up(bot: Harness, channel: int = CHANNEL) -> dict:
    """Chloé goes on about the bot's answer, without a mention."""
    return await bot.discord.user_says(
        channel, CHLOE, "and does the link mode also rebuild the indexes of the database?"
    )


async def test_a_follow_up_without_mention_is_answered_as_a_reply():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        said = await follow_up(bot)
        assert await answered(bot, said)
        assert len(bot.model.chat_requests) == requests + 1
        trigger = bot.model.chat_requests[-1].messages[-1]["content"]  # the trigger is last
        assert trigger.startswith("Chloé: and does the link mode also rebuild the indexes")


async def test_another_member_starting_another_conversation_is_not_answered():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))  # following works here
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(CHANNEL, ELI, "lunch at the pizza place at noon?")
        other = await bot.discord.user_says(CHANNEL, DEV, "sure, noon works for me")
        assert not await answered(bot, said)
        assert not await answered(bot, other, wait=0.1)
        assert len(bot.model.chat_requests) == requests


async def test_a_message_mentioning_another_member_is_not_answered():
    async with running_bot() as bot:
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))  # following works here
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, f"<@{DEV}> does the link mode also rebuild the indexes?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests


async def test_a_message_naming_another_member_is_not_answered():
    """ "dev, ..." without a mention is addressed to Dev (who spoke earlier in the channel),
    though Chloé is talking with the bot."""
    async with running_bot() as bot:
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))  # following works here
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, "dev, and does the link mode also rebuild the indexes?"
        )
        assert not await answered(bot, said)


async def test_a_member_naming_the_bot_without_a_mention_is_answered(tmp_path):
    """Someone who has not talked with the bot calls it by its name, without the mention."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await talk_to_bot(bot)
            said = await bot.discord.user_says(
                CHANNEL, ELI, "Threadwise: how long would a dump of 800 GB take instead?"
            )
            assert await answered(bot, said)
        explanation = await store.explain_async(int(said["id"]))
    assert "followed: names the bot" in render_text(explanation)


async def test_follow_off_for_a_channel_leaves_its_follow_ups_alone():
    thread = 1300000000000000070  # a thread of the channel, where following is off
    async with running_bot(triggers={"follow_off_channels": [thread]}) as bot:
        await bot.discord.add_thread(thread, CHANNEL, "upgrade", members=[CHLOE, BOT_ID])
        for _ in range(100):
            if bot.client.get_channel(thread) is not None:
                break
            await asyncio.sleep(0.05)
        await talk_to_bot(bot, thread)
        requests = len(bot.model.chat_requests)
        assert not await answered(bot, await follow_up(bot, thread))
        assert len(bot.model.chat_requests) == requests
        # In the channel itself following is on.
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))


async def test_another_bots_message_is_never_followed():
    helper = 1300000000000000777
    async with running_bot(triggers={"answer_bots": True}) as bot:
        bot.discord.add_user(helper, "helperbot", bot=True)
        bot.model.queue(Answer(text=UPGRADE_ANSWER))
        await bot.answer_to(CHANNEL, helper, f"<@{BOT_ID}> how do I upgrade the database?")
        await settled(bot)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, helper, "and does the link mode also keep the old planner statistics?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests
        # A member's follow-up of the same kind, in the same channel, is followed. (Not the very
        # same words: a message repeating one just said reads as an echo, not a follow-up.)
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))


async def test_the_explanation_says_the_answer_followed(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await talk_to_bot(bot)
            said = await follow_up(bot)
            assert await answered(bot, said)
        explanation = await store.explain_async(int(said["id"]))
    text = render_text(explanation)
    assert "followed: no mention, continues the conversation with Chloé, score 0." in text


async def test_a_member_without_read_history_is_never_followed():
    """Following reads the channel's conversation on the member's behalf: one who may not read
    the channel's history is answered when they call the bot, never followed."""
    async with running_bot() as bot:
        await talk_to_bot(bot)
        await deny_history(bot, CHLOE)  # taken away once she talks with the bot
        requests = len(bot.model.chat_requests)
        assert not await answered(bot, await follow_up(bot))
        assert len(bot.model.chat_requests) == requests
        # Calling the bot still works: she gets an answer from what she may read.
        bot.model.queue(Answer(text=UPGRADE_ANSWER))
        reply = await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> and the indexes?")
        assert reply["content"]


async def test_the_explanation_names_the_member_as_the_prompt_does(tmp_path):
    """A member with a global display name and no server nickname: the explanation names them
    as the prompt does (nextcord 2's ``display_name`` would give the username)."""
    zoe = 1300000000000000190
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            bot.discord.state.add_user(DceUser(id=str(zoe), name="zoe_k", globalName="Zoé"))
            bot.model.queue(Answer(text=UPGRADE_ANSWER))
            await bot.answer_to(
                CHANNEL, zoe, f"<@{BOT_ID}> how do I upgrade the 800 GB database quickly?"
            )
            await settled(bot)
            said = await bot.discord.user_says(
                CHANNEL, zoe, "and does the link mode also rebuild the indexes of the database?"
            )
            assert await answered(bot, said)
            trigger = bot.model.chat_requests[-1].messages[-1]["content"]
        explanation = await store.explain_async(int(said["id"]))
    assert trigger.startswith("Zoé: and does the link mode")
    assert "continues the conversation with Zoé, score" in render_text(explanation)
