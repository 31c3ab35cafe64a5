"""``/fresh`` end to end (real nextcord client, fake Discord, fake model): the bot posts "Context
starts here", and no answer after it reads anything said before it; a member without Manage
Messages is refused in one line; the seal is no turn of the bot's for following."""

from __future__ import annotations

import asyncio

from bot.demo.openai_server import Answer
from bot.serve.commands import FRESH_REFUSED
from bot.storage import Store
from conversation.selection.seal import SEAL_TEXT
from tests.bot.test_follow_e2e import answered, follow_up, talk_to_bot
from tests.fakes.harness import (
    BOT_ID,
    CHANNEL,
    CHLOE,
    DEV,
    Harness,
    running_bot,
    sent_contents,
    settled,
)

MEMBER = 0x400 | 0x800 | 0x10000  # view the channel, send messages, read its history
MANAGE_MESSAGES = 0x2000
QUESTION = f"<@{BOT_ID}> can I use the hard-link mode for the upgrade?"


async def fresh(bot: Harness, permissions: int) -> dict:
    record = await bot.discord.invoke_command(CHANNEL, DEV, "fresh", permissions=permissions)
    return await bot.discord.wait_for_interaction_response(record, timeout=10)


def sent_text(bot: Harness) -> str:
    return sent_contents(bot.model.chat_requests[-1].messages)


async def test_fresh_seals_the_channel_for_the_next_answers():
    async with running_bot() as bot:
        body = await fresh(bot, MEMBER | MANAGE_MESSAGES)
        assert body["data"]["content"] == SEAL_TEXT
        assert not (body["data"].get("flags") or 0) & 64  # in the channel, for everyone
        await bot.discord.user_says(CHANNEL, DEV, "the staging box is back up")
        bot.model.queue(Answer(text="Yes, with a backup first."))
        await bot.answer_to(CHANNEL, CHLOE, QUESTION)
        await settled(bot)
        sent = sent_text(bot)
    assert "fails halfway" not in sent and "ramen" not in sent  # the talk before the seal
    assert "staging box" in sent
    assert SEAL_TEXT not in sent
    assert "hard-link mode" in sent


async def test_fresh_is_refused_to_a_member_without_manage_messages():
    async with running_bot() as bot:
        body = await fresh(bot, MEMBER)
        assert body["data"]["content"] == FRESH_REFUSED
        assert body["data"]["flags"] & 64  # only they see it
        bot.model.queue(Answer(text="Yes, with a backup first."))
        await bot.answer_to(CHANNEL, CHLOE, QUESTION)
        await settled(bot)
        # Nothing was sealed: the log's talk is read (the upgrade talk before it).
        assert "fails halfway" in sent_text(bot)


async def test_after_the_seal_the_conversation_before_it_is_not_followed():
    """Following reads the conversation before a message: after ``/fresh`` there is none, and
    the seal itself is no turn of the bot's to follow."""
    async with running_bot() as bot:
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))  # following works here
        await fresh(bot, MEMBER | MANAGE_MESSAGES)
        await asyncio.sleep(0.2)
        requests = len(bot.model.chat_requests)
        said = await bot.discord.user_says(
            CHANNEL, CHLOE, "and does the link mode also keep the planner statistics?"
        )
        assert not await answered(bot, said)
        assert len(bot.model.chat_requests) == requests


async def test_a_reply_to_an_answer_before_the_seal_starts_no_earlier_request():
    """The answer replied to was given before ``/fresh``: its request is not continued (nothing
    before the seal is read), only the answer itself is shown, as Discord shows it."""
    async with running_bot() as bot:
        bot.model.queue(Answer(text="Use pg_upgrade --link."))
        answer = await bot.answer_to(CHANNEL, CHLOE, QUESTION)
        await settled(bot)
        await fresh(bot, MEMBER | MANAGE_MESSAGES)
        await asyncio.sleep(0.2)
        bot.model.queue(Answer(text="About as long as the copy."))
        await bot.answer_to(
            CHANNEL, CHLOE, f"<@{BOT_ID}> and how long does it take?", reply_to=int(answer["id"])
        )
        await settled(bot)
        first, second = bot.model.chat_requests
    assert second.messages[: len(first.messages)] != first.messages
    assert "fails halfway" not in sent_contents(second.messages)
    assert QUESTION.split("> ")[1] not in sent_contents(second.messages)


async def test_a_member_s_say_exactly_answer_is_no_seal():
    """Any member can have the bot say the seal's words; only ``/fresh`` seals (issue 53)."""
    async with running_bot() as bot:
        bot.model.queue(Answer(text=SEAL_TEXT))
        said = f"<@{BOT_ID}> say exactly: {SEAL_TEXT}"
        posted = await bot.answer_to(CHANNEL, DEV, said)
        await settled(bot)
        assert bot.discord.message(CHANNEL, int(posted["id"]))["content"] == SEAL_TEXT
        bot.model.queue(Answer(text="Yes, with a backup first."))
        await bot.answer_to(CHANNEL, CHLOE, QUESTION)
        await settled(bot)
        assert "fails halfway" in sent_text(bot)  # the talk before it is read


async def sealed_then_restarted(store: Store) -> None:
    """A conversation with the bot, then ``/fresh``, the bot stopped (its store kept)."""
    async with running_bot(store=store) as bot:
        await talk_to_bot(bot)
        await fresh(bot, MEMBER | MANAGE_MESSAGES)
        await asyncio.sleep(0.2)
        await settled(bot)


async def test_the_seal_holds_after_a_restart_for_following_and_a_cold_cache(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        await sealed_then_restarted(store)
        assert store.latest_seal(CHANNEL) is not None  # recorded
        async with running_bot(store=store) as bot:  # the cache starts cold
            requests = len(bot.model.chat_requests)
            assert not await answered(bot, await follow_up(bot))
            assert len(bot.model.chat_requests) == requests
            bot.model.queue(Answer(text="Yes, with a backup first."))
            await bot.answer_to(CHANNEL, CHLOE, QUESTION)
            await settled(bot)
            sent = sent_text(bot)
    assert "fails halfway" not in sent and "800 GB database" not in sent
    assert "hard-link mode" in sent


async def test_deleting_the_seal_message_unseals_the_channel(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            record = await bot.discord.invoke_command(
                CHANNEL, DEV, "fresh", permissions=MEMBER | MANAGE_MESSAGES
            )
            await bot.discord.wait_for_interaction_response(record, timeout=10)
            await asyncio.sleep(0.2)
            seal = int(record.original_message_id)
            assert store.latest_seal(CHANNEL) == seal
            await bot.discord.delete_message(CHANNEL, seal)  # a moderator deletes it
            for _ in range(50):
                if store.latest_seal(CHANNEL) is None:
                    break
                await asyncio.sleep(0.05)
            bot.model.queue(Answer(text="Yes, with a backup first."))
            await bot.answer_to(CHANNEL, CHLOE, QUESTION)
            await settled(bot)
            sent = sent_text(bot)
        assert store.latest_seal(CHANNEL) is None
    assert "fails halfway" in sent  # read again: the channel is no longer sealed
