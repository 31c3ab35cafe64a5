"""Conversations moved into threads end to end: the real bot on the stand-in Discord and model.
A conversation that reaches ``[threads] after_answers`` answers (or whose member asks) moves
into a public thread opened from the bot's answer; the thread's first request starts with the
channel's last request and its answer, byte for byte (the prompt cache holds), and the thread
is followed without a mention. Without Create Public Threads it stays in the channel, silent."""

from __future__ import annotations

import json

from bot.demo.discord_permissions import CREATE_PUBLIC_THREADS
from bot.demo.openai_server import Answer
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, running_bot, settled

THREADS_ON = {"enabled": True, "after_answers": 2}


async def said_and_answered(bot, channel: int, text: str) -> tuple[dict, dict]:
    said = await bot.discord.user_says(channel, CHLOE, text)
    reply = await bot.discord.wait_for_bot_message(channel, after=int(said["id"]), timeout=10)
    await settled(bot)
    return said, bot.discord.message(channel, int(reply["id"]))


def canonical(messages: list[dict]) -> list[str]:
    return [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in messages]


def threads_from(bot, message: dict) -> dict | None:
    """The thread opened from ``message`` (a thread started from a message has its id)."""
    try:
        return bot.discord.state.channel(message["id"])
    except Exception:
        return None


async def test_a_long_conversation_moves_into_a_thread_and_its_cache_holds() -> None:
    async with running_bot(threads=THREADS_ON) as bot:
        bot.model.queue(Answer(text="Dump and restore, or an in-place upgrade."))
        await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> how do I upgrade postgres?")
        bot.model.queue(Answer(text="With hard links it takes minutes."))
        _, second = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> and for 800 GB?")
        channel_request = bot.model.chat_requests[-1].body["messages"]
        thread = threads_from(bot, second)
        assert thread is not None and thread["parent_id"] == str(CHANNEL)
        assert thread["owner_id"] == str(BOT_ID) and thread["type"] == 11  # public
        bot.model.queue(Answer(text="A failed upgrade leaves the old cluster as it was."))
        _, in_thread = await said_and_answered(bot, int(thread["id"]), "what if it fails?")
        thread_request = bot.model.chat_requests[-1].body["messages"]
        assert in_thread["content"] == "A failed upgrade leaves the old cluster as it was."
        bot.model.queue(Answer(text="Keep the old data directory."))
        await said_and_answered(bot, int(thread["id"]), "and how do I roll back?")  # no mention
        next_request = bot.model.chat_requests[-1].body["messages"]
    # The thread's first request starts with the channel's request and its answer, byte for byte.
    prefix = canonical([*channel_request, {"role": "assistant", "content": second["content"]}])
    assert canonical(thread_request)[: len(prefix)] == prefix
    assert "what if it fails?" in thread_request[-1]["content"]
    assert len(thread_request) > len(prefix)
    assert all(m["content"] for m in thread_request)  # not the thread's empty starter message
    # The thread's next request continues its first.
    then = canonical([*thread_request, {"role": "assistant", "content": in_thread["content"]}])
    assert canonical(next_request)[: len(then)] == then


async def test_a_member_asks_for_a_thread() -> None:
    async with running_bot(threads={"enabled": True, "after_answers": 50}) as bot:
        bot.model.queue(Answer(text="Sure."))
        _, first = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> what is a WAL file?")
        assert threads_from(bot, first) is None  # one answer: not long enough
        bot.model.queue(Answer(text="Moving on there."))
        _, reply = await said_and_answered(
            bot, CHANNEL, f"<@{BOT_ID}> can we move this to a thread?"
        )
        assert threads_from(bot, reply) is not None


async def test_off_by_default_and_without_create_public_threads() -> None:
    async with running_bot() as bot:
        for text in ("how do I upgrade?", "and for 800 GB?", "please move this to a thread"):
            _, reply = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> {text}")
            assert threads_from(bot, reply) is None
    async with running_bot(threads=THREADS_ON) as bot:
        await bot.discord.set_bot_overwrite(CHANNEL, deny=CREATE_PUBLIC_THREADS)
        for text in ("how do I upgrade?", "and for 800 GB?", "and then?"):
            _, reply = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> {text}")
            assert threads_from(bot, reply) is None
        assert bot.discord.requests_to("POST", "*/threads") == []  # not tried, and not said
        assert len(bot.discord.bot_messages(CHANNEL, after=0)) >= 3


async def test_a_channel_message_deleted_after_the_move_leaves_the_thread_requests() -> None:
    """The thread's requests continue the channel's, which held a member's message: deleted in
    the channel after the move, it is sent in no thread request again."""
    async with running_bot(threads=THREADS_ON) as bot:
        slip = await bot.discord.user_says(CHANNEL, CHLOE, "my db password is hunter2-rosebud")
        bot.model.queue(Answer(text="Dump and restore, or an in-place upgrade."))
        await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> how do I upgrade postgres?")
        bot.model.queue(Answer(text="With hard links it takes minutes."))
        _, second = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> and for 800 GB?")
        assert "hunter2-rosebud" in json.dumps(bot.model.chat_requests[-1].body["messages"])
        thread = threads_from(bot, second)
        assert thread is not None
        await bot.discord.delete_message(CHANNEL, slip["id"])
        await settled(bot)
        bot.model.queue(Answer(text="A failed upgrade leaves the old cluster as it was."))
        await said_and_answered(bot, int(thread["id"]), "what if it fails?")
        assert "hunter2-rosebud" not in json.dumps(bot.model.chat_requests[-1].body["messages"])


async def test_a_conversation_moves_once_and_its_thread_is_named_without_the_members_words():
    """Members who keep talking in the channel after the move are answered there, and no
    second thread is opened from each later answer. The thread's name is public and outlives
    what the member wrote: it names the bot and the time, never their words."""
    async with running_bot(threads=THREADS_ON) as bot:
        bot.model.queue(Answer(text="Dump and restore, or an in-place upgrade."))
        await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> how do I upgrade postgres?")
        bot.model.queue(Answer(text="With hard links it takes minutes."))
        _, second = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> and for 800 GB?")
        thread = threads_from(bot, second)
        assert thread is not None
        bot.model.queue(Answer(text="Then plan a short downtime."))
        _, third = await said_and_answered(bot, CHANNEL, f"<@{BOT_ID}> and with replicas?")
        assert "and for 800 GB" in json.dumps(bot.model.chat_requests[-1].body["messages"])
        assert threads_from(bot, third) is None  # moved once already
    assert thread["name"].startswith("Conversation with Threadwise, ")
    assert "upgrade" not in thread["name"] and "Chloe" not in thread["name"]
