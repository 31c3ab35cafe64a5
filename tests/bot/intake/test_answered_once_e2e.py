"""A message is answered once, end to end: the real nextcord client against the fake Discord
and the fake model, the gateway delivering the same MESSAGE_CREATE again (a RESUME replay, a
duplicate), in the same run and after a restart on the same store."""

from __future__ import annotations

import asyncio

from bot.demo.openai_server import Answer
from bot.storage import Store, render_text
from tests.bot.test_follow_e2e import UPGRADE_ANSWER, follow_up
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, Harness, running_bot, settled

QUESTION = f"<@{BOT_ID}> how do I upgrade the 800 GB database quickly?"


async def replies_to(bot: Harness, said: dict, wait: float = 0.5) -> list[dict]:
    """The bot's messages replying to ``said``, after ``wait`` seconds and any answer ends."""
    await asyncio.sleep(wait)
    await settled(bot)
    return [
        m
        for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
        if (m.get("message_reference") or {}).get("message_id") == said["id"]
    ]


async def deliver_again(bot: Harness, said: dict) -> None:
    await bot.discord.gateway.dispatch_message("MESSAGE_CREATE", said)


async def test_a_message_delivered_again_after_its_answer_is_not_answered_again():
    async with running_bot() as bot:
        bot.model.queue(Answer(text="Use pg_upgrade --link."), Answer(text="A second answer."))
        said = await bot.discord.user_says(CHANNEL, CHLOE, QUESTION)
        assert len(await replies_to(bot, said)) == 1
        requests = len(bot.model.chat_requests)
        await deliver_again(bot, said)
        assert len(await replies_to(bot, said)) == 1
        assert len(bot.model.chat_requests) == requests


async def test_a_copy_within_the_burst_window_gets_one_answer_that_keeps_its_kind(tmp_path):
    """A follow-up delivered twice while its burst window is open: one answer, still recorded
    as followed (the copy once took the original's place and lost why it was answered)."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, triggers={"burst_window_seconds": 0.3}) as bot:
            bot.model.queue(Answer(text=UPGRADE_ANSWER))
            await bot.answer_to(CHANNEL, CHLOE, QUESTION)
            await settled(bot)
            bot.model.queue(Answer(text="It does not."), Answer(text="A second answer."))
            requests = len(bot.model.chat_requests)
            said = await follow_up(bot)
            await deliver_again(bot, said)
            assert len(await replies_to(bot, said, wait=0.8)) == 1
            assert len(bot.model.chat_requests) == requests + 1
        explanation = await store.explain_async(int(said["id"]))
    assert "followed: no mention, continues the conversation with Chloé" in render_text(explanation)


async def test_a_message_answered_before_a_restart_is_not_answered_after_it(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            bot.model.queue(Answer(text="Use pg_upgrade --link."))
            said = await bot.discord.user_says(CHANNEL, CHLOE, QUESTION)
            assert len(await replies_to(bot, said)) == 1
        async with running_bot(store=store) as bot:  # a new process, the same store
            bot.model.queue(Answer(text="A second answer."))
            await deliver_again(bot, said)
            await asyncio.sleep(0.5)
            await settled(bot)
            assert bot.model.chat_requests == []
            assert bot.discord.bot_messages(CHANNEL, after=int(said["id"])) == []
