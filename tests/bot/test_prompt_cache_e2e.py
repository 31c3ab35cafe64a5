"""The prompt reuses the model server's cache: follow-ups in one conversation send the same start
while other conversations go on in the channel (real nextcord client, fake Discord, fake OpenAI
and Anthropic servers with their simulated prompt caches, a real SQLite store)."""

from __future__ import annotations

import json

from bot.demo.openai_server import count_tokens
from bot.storage import Store, render_text
from conversation.prompt.layout import OTHERS_LABEL
from tests.bot.test_anthropic_e2e import claude_bot
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, ELI, Harness, running_bot, settled


async def conversation_with_lunch_between(bot: Harness) -> None:
    """Chloé asks the bot, Eli and Ben talk about lunch, Chloé follows up twice (replies to the
    bot's answers), with more lunch talk between. (The first prompt holds an old message of the
    log the follow-ups leave out, and the mention of the bot reads differently: the follow-ups
    are compared.)"""
    first = await bot.answer_to(
        CHANNEL, CHLOE, f"<@{BOT_ID}> can I use the hard-link mode for an 800 GB database?"
    )
    await settled(bot)
    say = bot.discord.user_says
    await say(CHANNEL, ELI, f"<@{BEN}> lunch at the noodle place?", mentions=[BEN])
    await say(CHANNEL, BEN, f"<@{ELI}> yes, noon works for me", mentions=[ELI])
    second = await bot.answer_to(
        CHANNEL, CHLOE, "and if the upgrade fails halfway, what then?", reply_to=int(first["id"]),
        mention_author=False,
    )  # fmt: skip
    await settled(bot)
    await say(CHANNEL, ELI, f"<@{BEN}> I'll book a table for four", mentions=[BEN])
    await bot.answer_to(
        CHANNEL, CHLOE, "thanks, and how long does the analyze step take?",
        reply_to=int(second["id"]), mention_author=False,
    )  # fmt: skip
    await settled(bot)


async def test_follow_ups_send_the_same_start_keyed_by_their_conversation(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await conversation_with_lunch_between(bot)
            first, second, third = bot.model.chat_requests
        exported = list(store.export())
        recorded = store.recent_interactions()[::-1]
        explained = render_text(store.explain(recorded[2].trigger_message_id))
    # One cache key for the conversation: its first message, the same for both follow-ups.
    key = second.body["prompt_cache_key"]
    assert key == third.body["prompt_cache_key"] == f"conversation-{recorded[0].trigger_message_id}"
    # The follow-up's request starts with the request before it and the bot's answer (issue 42).
    end = len(second.messages)
    assert third.messages[end]["role"] == "assistant"
    # Byte for byte the same start, although the lunch talk went on in between.
    assert json.dumps(third.messages[:end]) == json.dumps(second.messages[:end])
    assert third.cached_tokens >= count_tokens(second.messages[:end])
    # The lunch talk is there, after its label, and the follow-up is last.
    contents = [m["content"] for m in third.messages]
    label = contents.index(OTHERS_LABEL)
    assert any("book a table" in c for c in contents[label:])
    assert not any("noon works" in c or "book a table" in c for c in contents[:label])
    assert "analyze step" in contents[-1]
    # The server's cached-token counts reach the store; the export is exactly what was sent.
    for line, record, request in zip(exported, recorded, (first, second, third), strict=True):
        assert line["messages"][:-1] == request.messages
        assert record.usage["cached_prompt_tokens"] == request.cached_tokens
    cached = recorded[2].usage["cached_prompt_tokens"]
    assert cached > 0
    assert f"({cached} of the prompt's tokens from the server's prompt cache)" in explained


async def test_claude_caches_the_conversation_and_reads_it_on_the_follow_up(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with claude_bot(store=store) as bot:
            await conversation_with_lunch_between(bot)
            first, second, third = bot.model.message_requests
        recorded = store.recent_interactions()[::-1]
    for request in (first, second, third):
        body = request.body
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        blocks = [b for turn in body["messages"] for b in turn["content"]]
        marked = [i for i, b in enumerate(blocks) if "cache_control" in b]
        # The end of the conversation, not the message answered; the first question may have no
        # conversation before it (the old message of the log may score as elsewhere): no mark.
        assert len(marked) == (1 if request is not first else len(marked[:1]))
        if marked:
            after = blocks[marked[0] + 1]
            assert after["text"] == OTHERS_LABEL or after is blocks[-1]
    system = len(first.body["system"][0]["text"].split()) + 3
    blocks = [b for turn in second.body["messages"] for b in turn["content"]]
    end = next(i for i, b in enumerate(blocks) if "cache_control" in b) + 1
    conversation = sum(len(b["text"].split()) + 3 for b in blocks[:end])
    # The request before it and the bot's answer (issue 42).
    assert end == sum(len(turn["content"]) for turn in first.body["messages"]) + 1
    # The second follow-up read the system prompt and the whole conversation from the cache.
    assert third.cache_read_tokens >= system + conversation
    for record, request in zip(recorded, (first, second, third), strict=True):
        assert record.usage["cached_prompt_tokens"] == request.cache_read_tokens
