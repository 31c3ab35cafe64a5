"""The cached window, end to end with the real nextcord client: a bot that saw a busy channel's
messages arrive weighs messages further back than one history page without asking Discord for
any; after a restart (a cold cache) it reads its one page, and a second one only when the
conversation reaches the first one's edge."""

from __future__ import annotations

import asyncio

from conversation.selection import walk
from tests.bot.test_read_history import asks
from tests.fakes.harness import BEN, CHANNEL, CHLOE, DEV, ELI, Harness, running_bot, settled

QUESTION = "the raid array went degraded right after the kernel update"
# Every candidate enters (threshold 0), so what the walk reached is what the prompt holds.
EVERY_CANDIDATE = {"relevance_threshold": 0.0, "max_total": 300}
ROOMY_MODEL = {"context_tokens": 65536}


async def busy_channel_after_a_question(bot: Harness, lines: int = 150) -> None:
    """The question, then ``lines`` messages of chatter, all delivered to the bot."""
    await bot.discord.user_says(CHANNEL, DEV, QUESTION)
    for i in range(lines):
        await bot.discord.user_says(CHANNEL, BEN if i % 2 else CHLOE, f"chatter line {i}")
    for _ in range(200):
        cache = bot.client.caches.get(CHANNEL)
        if cache is not None and len(cache) >= lines + 1:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the gateway never delivered the chatter")
    await settled(bot)
    bot.discord.clear_requests()


def history_pages(bot: Harness) -> int:
    return len(bot.discord.requests_to("GET", f"/channels/{CHANNEL}/messages"))


async def test_a_bot_that_saw_the_messages_arrive_reads_past_one_page_without_rest():
    async with running_bot(context=EVERY_CANDIDATE, model=ROOMY_MODEL) as bot:
        await busy_channel_after_a_question(bot)
        _, prompt = await asks(bot, ELI, "what went degraded?")
        assert QUESTION in prompt  # 151 messages back, past one page of 100
        assert "chatter line 0" in prompt
        # None of them was read from Discord. The question, the oldest message the bot saw,
        # entered: the conversation reaches the edge of what the cache holds, so one page is
        # asked for what came before it.
        pages = bot.discord.requests_to("GET", f"/channels/{CHANNEL}/messages")
        question_id = next(
            m["id"] for m in bot.discord.messages(CHANNEL) if m["content"] == QUESTION
        )
        assert [page.query.get("before") for page in pages] == [str(question_id)]


async def test_the_walk_stops_at_one_page_when_set_so_or_when_the_conversation_is_within_it():
    one_page = {**EVERY_CANDIDATE, "cached_candidate_window": 99}
    async with running_bot(context=one_page, model=ROOMY_MODEL) as bot:
        await busy_channel_after_a_question(bot)
        _, prompt = await asks(bot, ELI, "what went degraded?")
        assert "chatter line 60" in prompt
        assert QUESTION not in prompt
        assert history_pages(bot) == 0

    one_cold_page = {**EVERY_CANDIDATE, "max_total": 40}
    async with running_bot(context=one_cold_page, model=ROOMY_MODEL) as bot:
        await busy_channel_after_a_question(bot)
        bot.client.caches._caches.clear()  # restarted: nothing held, history costs REST
        _, prompt = await asks(bot, ELI, "what went degraded?")
        assert "chatter line 120" in prompt
        assert "chatter line 60" not in prompt  # the page's edge: it did not enter
        assert QUESTION not in prompt
        assert history_pages(bot) == 1


async def test_a_cold_build_reads_a_second_page_when_the_conversation_reaches_the_first_edge(
    monkeypatch,
):
    monkeypatch.setattr(walk, "OLDER_MARGIN", 0.0)  # the second page's messages enter too
    async with running_bot(context=EVERY_CANDIDATE, model=ROOMY_MODEL) as bot:
        await busy_channel_after_a_question(bot)
        bot.client.caches._caches.clear()  # restarted: nothing held, history costs REST
        _, prompt = await asks(bot, ELI, "what went degraded?")
        # Every candidate enters, those at the first page's edge too: the conversation goes
        # on past it, so a second page is read, and the question 151 messages back is in.
        assert QUESTION in prompt
        assert "chatter line 0" in prompt
        assert history_pages(bot) == 2
