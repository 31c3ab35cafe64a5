"""A follow-up's request starts with the previous request and the bot's answer, byte for byte,
with other talk in the channel between them (real nextcord client, fake Discord, fake OpenAI and
Anthropic servers)."""

from __future__ import annotations

import json

from tests.bot.test_anthropic_e2e import claude_bot
from tests.bot.test_prompt_cache_e2e import conversation_with_lunch_between
from tests.fakes.harness import CHANNEL, running_bot


async def test_a_follow_up_request_starts_with_the_previous_request_and_answer():
    async with running_bot() as bot:
        await conversation_with_lunch_between(bot)
        _first, second, third = bot.model.chat_requests
        answers = [m["content"] for m in bot.discord.bot_messages(CHANNEL)]
    start = len(second.messages)
    assert json.dumps(third.messages[:start]) == json.dumps(second.messages)
    assert third.messages[start]["role"] == "assistant"
    assert third.messages[start]["content"] == answers[-2]  # the answer to the second
    # The lunch talk since is after the answer, the follow-up last.
    later = [m["content"] for m in third.messages[start + 1 :]]
    assert any("book a table" in c for c in later)
    assert "analyze step" in later[-1]


def _blocks(body: dict) -> list[tuple[str, dict]]:
    """Each content block with its turn's role, the cache marks taken off."""
    return [
        (turn["role"], {k: v for k, v in block.items() if k != "cache_control"})
        for turn in body["messages"]
        for block in turn["content"]
    ]


async def test_claude_reads_the_previous_request_and_answer_then_what_is_new():
    async with claude_bot() as bot:
        await conversation_with_lunch_between(bot)
        _first, second, third = bot.model.message_requests
        answers = [m["content"] for m in bot.discord.bot_messages(CHANNEL)]
    before, after = _blocks(second.body), _blocks(third.body)
    assert json.dumps(after[: len(before)]) == json.dumps(before)
    assert after[len(before)] == ("assistant", {"type": "text", "text": answers[-2]})
    # The cache breakpoint is at the end of the part sent before: the answer.
    marked = [
        i
        for i, block in enumerate(b for turn in third.body["messages"] for b in turn["content"])
        if "cache_control" in block
    ]
    assert marked == [len(before)]
    assert third.cache_read_tokens > 0
