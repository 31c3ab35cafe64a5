"""Posting answers end to end: runaway answers are capped, a failed post does not lose one."""

from __future__ import annotations

import json

from bot.demo.openai_server import Answer
from bot.discord.posting import CUT_NOTE
from bot.storage import Store
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, running_bot, settled


def runaway_answer(size: int) -> str:
    line = "I will keep going, sentence after sentence, as a runaway model does. "
    return "".join(f"{line}{i}\n" if i % 7 == 0 else line for i in range(size // len(line) + 1))


async def test_a_200k_character_answer_takes_at_most_the_configured_messages(tmp_path):
    text = runaway_answer(200_000)
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, replies={"max_messages_per_answer": 4}) as bot:
            bot.model.queue(Answer(text=text, chunk_chars=50))
            said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> go on and on")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
            await settled(bot)
            for _ in range(200):
                if not bot.client._tasks:
                    break
                await settled(bot)
            posted = [
                m["content"] for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
            ]
        recorded = list(store.export())
    assert len(posted) == 4
    assert all(len(content) <= 2000 for content in posted)
    assert posted[-1].endswith(CUT_NOTE.format(count=4))
    assert posted[0].startswith("I will keep going")
    # The record keeps the whole answer, as the model gave it.
    assert recorded[-1]["messages"][-1]["content"] == text


async def post_fails(status: int, count: int | None) -> tuple[list[dict], list[dict], dict]:
    answer = "A complete answer. " * 150  # two messages
    async with running_bot(store=None) as bot:
        bot.model.queue(Answer(text=answer, chunk_chars=100))
        bot.discord.add_error(f"/channels/{CHANNEL}/messages", status, method="POST", count=count)
        said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> tell me")
        await bot.model.wait_for_chat_requests(1)
        for _ in range(100):
            await settled(bot)
            if not bot.client._tasks:
                break
        posted = bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
        posts = bot.discord.requests_to("POST", f"/channels/{CHANNEL}/messages")
    return posted, [r.body for r in posts], {"answer": answer}


async def test_a_transient_error_on_the_first_post_is_retried():
    posted, _, expected = await post_fails(503, 1)
    assert " ".join(" ".join(m["content"] for m in posted).split()) == expected["answer"].strip()
    assert posted[0].get("message_reference") is not None


async def test_a_reply_refused_for_its_target_is_posted_without_the_reference():
    posted, bodies, expected = await post_fails(404, 1)
    assert " ".join(" ".join(m["content"] for m in posted).split()) == expected["answer"].strip()
    assert "message_reference" in json.dumps(bodies[0])
    assert posted[0].get("message_reference") is None


async def test_when_posting_is_impossible_the_whole_answer_is_recorded(tmp_path):
    answer = "Nobody will see this, but the record keeps it. " * 60
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            bot.model.queue(Answer(text=answer, chunk_chars=100))
            bot.discord.add_error(f"/channels/{CHANNEL}/messages", 403, method="POST", count=None)
            said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> tell me")
            await bot.model.wait_for_chat_requests(1)
            for _ in range(100):
                await settled(bot)
                found = store.find_interaction(int(said["id"]))
                if not bot.client._tasks and found:
                    break
            assert not bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
        record = store.get_interaction(store.find_interaction(int(said["id"])) or "")
    assert record.answer == answer
    assert record.outcome == "failure" and "403" in (record.error or "")
