"""The bot's own notices (a failure line, a cut note) never come back to the model as its words."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from bot.demo.openai_server import Answer, BrokenStream, Fail
from conversation.sources.snowflakes import time_snowflake
from tests.fakes.harness import (
    BEN,
    BOT_ID,
    CHANNEL,
    Harness,
    run_cli,
    running_bot,
    settled,
    with_offline_pages,
)
from tests.fakes.later import asked_later

NOT_AVAILABLE = "The bot's model is not available right now; the operator must check the setup."
STOPPED = "The model stopped in the middle of its answer."


@pytest.fixture
async def bot() -> AsyncIterator[Harness]:
    async with running_bot() as harness:
        yield harness


def assistant_turns(bot: Harness) -> list[str]:
    return [m["content"] for m in bot.model.chat_requests[-1].messages if m["role"] == "assistant"]


async def test_a_failure_notice_is_left_out_of_the_next_prompt(bot: Harness):
    bot.model.queue(Fail(status=404))
    notice = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> are you there?")
    assert notice["content"] == f"*{NOT_AVAILABLE}*"
    await settled(bot)
    bot.model.queue(Answer(text="yes, back now"))
    await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> and now?", reply_to=int(notice["id"]))
    prompt = "\n".join(str(m["content"]) for m in bot.model.chat_requests[-1].messages)
    assert "are you there?" in prompt  # the conversation is there...
    assert NOT_AVAILABLE not in prompt  # ...but not the notice, as anyone's words


async def test_a_notice_after_a_partial_answer_is_stripped_from_the_turn(bot: Harness):
    partial = "Use the hard-link mode, it is much faster on big databases"
    bot.model.queue(BrokenStream(mode="drop", text=partial, after_chunks=3, chunk_chars=20))
    cut = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> which upgrade mode should I use?")
    await settled(bot)
    shown = bot.discord.message(CHANNEL, int(cut["id"]))["content"]
    assert shown.endswith(f"\n*{STOPPED}*")  # the member sees both
    bot.model.queue(Answer(text="it keeps the old files"))
    await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> what does it keep?", reply_to=int(cut["id"]))
    turns = assistant_turns(bot)
    answered = shown.removesuffix(f"\n*{STOPPED}*")
    assert answered in turns  # the part of the answer that arrived is the bot's turn...
    assert not any(STOPPED in turn for turn in turns)  # ...without the notice


def test_replay_of_an_export_holding_notices_leaves_them_out(tmp_path):
    export = asked_later(f"<@{BOT_ID}> so, which mode?", days=0.001)
    chloe_question = export["messages"][-2]
    bot_author = next(m["author"] for m in export["messages"] if m["author"]["isBot"])

    def bot_says(content: str, minutes: int) -> dict:
        moment = datetime.fromisoformat(chloe_question["timestamp"]) + timedelta(seconds=minutes)
        return {**chloe_question, "id": str(time_snowflake(moment)), "author": bot_author,
                "timestamp": moment.isoformat(), "content": content, "mentions": [],
                "type": "Default", "reference": None}  # fmt: skip

    export["messages"][-1:-1] = [
        bot_says(f"*{NOT_AVAILABLE}*", 10),
        bot_says(f"Hard links are faster\n*{STOPPED}*", 20),
    ]
    path = with_offline_pages(tmp_path) / "with-notices.json"
    path.write_text(json.dumps(export))
    result = run_cli("replay", str(path), "--no-model")
    assert result.returncode == 0, result.stderr
    prompt, _, notes = result.stdout.partition("\nnote: ")
    assert "Hard links are faster" in prompt
    assert NOT_AVAILABLE not in prompt and STOPPED not in prompt
    assert "left out: the bot's own notice" in notes
