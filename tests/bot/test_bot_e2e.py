"""The bot end to end: the real nextcord client against the local fake Discord and fake model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import nextcord
import pytest

from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import Answer, Fail, FakeOpenAI
from bot.serve.run import run_bot
from conversation.prompt.layout import OTHERS_LABEL
from tests.fakes.harness import (
    ALICE,
    BEN,
    BOT_ID,
    CHANNEL,
    CHLOE,
    DEV,
    DM_CHANNEL,
    ELI,
    ROOT,
    Harness,
    make_config,
    running_bot,
    sent_contents,
    settled,
)


@pytest.fixture
async def bot() -> AsyncIterator[Harness]:
    async with running_bot() as harness:
        yield harness


async def test_mention_in_busy_channel_sends_the_right_context(bot: Harness):
    ids = bot.example_ids()
    guide = ids["Yes, last month. This gu"]
    reply = await bot.answer_to(
        CHANNEL, CHLOE, f"<@{BOT_ID}> and how long does the link mode take?", reply_to=guide
    )
    request = bot.model.chat_requests[-1]
    prompt = sent_contents(request.messages)
    assert "This guide covers it well" in prompt  # the replied-to message
    assert "800 GB" in prompt  # Chloé's earlier turn in this conversation
    assert "backup job failed" not in prompt  # sealed by a four-hour silence
    assert request.messages[0]["role"] == "system"
    # Named as members see it: its server nickname in the log (its username is "threadwise").
    assert "You are Threadwise," in request.messages[0]["content"]
    assert any(m["role"] == "assistant" for m in request.messages)  # the bot's own turn
    # The answer is a reply to the trigger and pings nobody.
    assert reply["message_reference"]["message_id"] == str(bot.discord.messages(CHANNEL)[-2]["id"])
    post = bot.discord.requests_to("POST", f"/channels/{CHANNEL}/messages")[-1]
    assert post.body["allowed_mentions"]["parse"] == []
    assert reply["content"].startswith("echo:")


async def test_reply_to_the_bot_without_mention_is_answered(bot: Harness):
    ids = bot.example_ids()
    bot_turn = ids["The usual route is a dum"]
    reply = await bot.answer_to(CHANNEL, DEV, "what about logical replication?", reply_to=bot_turn,
                                mention_author=False)  # fmt: skip
    assert reply["content"]
    prompt = sent_contents(bot.model.chat_requests[-1].messages)
    assert "what about logical replication?" in prompt


async def test_unaddressed_message_is_not_answered(bot: Harness):
    await bot.discord.user_says(CHANNEL, ELI, "anyone up for coffee?")
    await asyncio.sleep(0.4)
    assert bot.model.chat_requests == []
    assert bot.discord.bot_messages(CHANNEL) == [] or all(
        int(m["id"]) < 1400000000000000000 for m in bot.discord.bot_messages(CHANNEL)
    )


async def test_direct_message_is_answered():
    async with running_bot(context={"min_linear": 4}) as bot:  # the old exchange is recent
        await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
        reply = await bot.answer_to(DM_CHANNEL, ALICE, "and what about tests?")
        assert reply["content"]
        # Two years after the log, the old exchange is in as recent messages, labelled as such.
        prompt = [m for m in bot.model.chat_requests[-1].messages if m["content"] != OTHERS_LABEL]
        assert [m["role"] for m in prompt[1:]] == ["user", "assistant", "user", "user"]
        assert "pin versions" in prompt[2]["content"]


async def test_direct_messages_can_be_switched_off():
    async with running_bot(triggers={"allow_dms": False}) as bot:
        await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
        await bot.discord.user_says(DM_CHANNEL, ALICE, "hello?")
        await asyncio.sleep(0.4)
        assert bot.model.chat_requests == []


async def test_blocked_user_gets_no_answer():
    async with running_bot(permissions={"blocked_users": [CHLOE]}) as bot:
        await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> hello?")
        await asyncio.sleep(0.5)
        assert bot.model.chat_requests == []
        reply = await bot.answer_to(CHANNEL, DEV, f"<@{BOT_ID}> hello?")
        assert reply["content"]


async def test_everyone_in_the_answer_pings_no_one(bot: Harness):
    bot.model.queue(Answer(text="Sure! @everyone look at this, and <@&1300000000000000999> too"))
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> announce it")
    post = bot.discord.requests_to("POST", f"/channels/{CHANNEL}/messages")[-1]
    assert post.body["allowed_mentions"] == {"parse": []}  # replied_user unset: not pinged
    await settled(bot)
    final = bot.discord.message(CHANNEL, int(reply["id"]))
    assert "@\u200beveryone look at this" in final["content"]
    assert final["mention_everyone"] is False and final["mention_roles"] == []
    edits = bot.discord.requests_to("PATCH", f"/channels/{CHANNEL}/messages/*")
    assert all(edit.body["allowed_mentions"] == {"parse": []} for edit in edits)


async def test_long_answer_arrives_split_at_boundaries(bot: Harness):
    paragraphs = [f"Paragraph {i}: " + "words and more words. " * 20 for i in range(12)]
    text = "\n\n".join(paragraphs)
    assert len(text) > 5000
    bot.model.queue(Answer(text=text, chunk_chars=400))
    said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> write a lot")
    await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    await settled(bot)
    posted = [m["content"] for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))]
    assert len(posted) >= 3
    assert all(len(content) <= 2000 for content in posted)
    assert all(content.rstrip().endswith("words.") for content in posted)  # paragraph cuts
    # Nothing lost or repeated: only whitespace differs at the cuts.
    assert " ".join(" ".join(posted).split()) == " ".join(text.split())


async def test_model_failure_then_recovery(bot: Harness):
    bot.model.queue(Fail(status=503), Fail(status=503))
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> are you there?")
    assert reply["content"] == "*The model server had a problem, try again in a minute.*"
    await settled(bot)
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> and now?")
    assert reply["content"].startswith("echo:")


async def test_history_forbidden_still_answers_with_a_note(bot: Harness):
    bot.discord.forbid_history(CHANNEL)
    bot.client.caches._caches.clear()  # a cold cache: history must be read over REST
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> what did I miss?")
    await settled(bot)
    final = bot.discord.message(CHANNEL, int(reply["id"]))
    assert "can't read this channel's history" in final["content"]
    assert final["content"].startswith("echo:")


async def test_missing_referenced_message_is_survived(bot: Harness):
    bot.client.caches._caches.clear()
    bot.discord.add_error(f"/channels/{CHANNEL}/messages*", 404, method="GET", count=5)
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> still here?")
    assert reply["content"]


async def test_gateway_reconnect_mid_conversation(bot: Harness):
    await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> first")
    await bot.discord.gateway.send_reconnect()
    for _ in range(100):
        if bot.discord.gateway.resume_count:
            break
        await asyncio.sleep(0.05)
    assert bot.discord.gateway.resume_count == 1
    reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> second, after the reconnect")
    await settled(bot)
    final = bot.discord.message(CHANNEL, int(reply["id"]))
    assert "second, after the reconnect" in final["content"]


async def test_trigger_deleted_before_the_answer_is_not_answered():
    async with running_bot(triggers={"burst_window_seconds": 0.5}) as bot:
        said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> never mind")
        await bot.discord.delete_message(CHANNEL, int(said["id"]))
        await asyncio.sleep(0.9)
        assert bot.model.chat_requests == []


async def test_a_burst_gets_one_answer():
    async with running_bot(triggers={"burst_window_seconds": 0.4}) as bot:
        for text in ("hey", "one more thing", "actually, a question"):
            last = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> {text}")
        await bot.discord.wait_for_bot_message(CHANNEL, after=int(last["id"]), timeout=10)
        await settled(bot)
        assert len(bot.model.chat_requests) == 1
        assert "actually, a question" in sent_contents(bot.model.chat_requests[0].messages)


async def test_refused_message_content_intent_is_explained(tmp_path, capsys):
    async with FakeDiscord(bot_id=BOT_ID) as discord, FakeOpenAI() as model:
        discord.allowed_privileged_intents = 0
        config = make_config(discord, model, storage={"path": tmp_path / "store.sqlite3"})
        try:
            code = await asyncio.to_thread(run_bot, config)
        finally:
            nextcord.http.Route.BASE = "https://discord.com/api/v10"
    assert code == 3
    err = capsys.readouterr().err
    assert "Discord refused the Message Content intent" in err
    assert "Traceback" not in err


async def test_secrets_never_reach_the_logs(caplog):
    caplog.set_level(logging.DEBUG)
    secret_key = "sk-test-very-secret-key-123"
    async with running_bot(model={"api_key": secret_key}) as bot:
        await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> hello")
        bot.model.queue(Fail(status=401))
        await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> again")
        await settled(bot)
        token = bot.discord.token
        assert bot.model.chat_requests[0].headers["Authorization"] == f"Bearer {secret_key}"
    ours = "\n".join(
        record.getMessage() for record in caplog.records if not record.name.startswith("nextcord")
    )
    assert "answer channel=" in ours  # the one INFO line per answer
    assert secret_key not in caplog.text
    assert token not in ours


async def test_an_answer_full_of_mass_mentions_loses_no_text(bot: Harness):
    text = "@everyone " * 150 + "the end."
    bot.model.queue(Answer(text=text))
    said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> ping them all")
    await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    await settled(bot)
    posted = [m["content"] for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))]
    assert all(len(content) <= 2000 for content in posted)
    joined = " ".join(posted)
    assert joined.count("@\u200beveryone") == 150 and joined.endswith("the end.")
    assert all(not m["mention_everyone"] for m in bot.discord.bot_messages(CHANNEL))


@pytest.mark.parametrize("answer_bots", [False, True])
async def test_other_bots_are_answered_only_when_configured(answer_bots):
    async with running_bot(triggers={"answer_bots": answer_bots}) as bot:
        bot.discord.add_user(1300000000000000300, "otherbot", bot=True)
        said = await bot.discord.user_says(CHANNEL, 1300000000000000300, f"<@{BOT_ID}> beep")
        if answer_bots:
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
        else:
            await asyncio.sleep(0.4)
        assert len(bot.model.chat_requests) == (1 if answer_bots else 0)


async def test_a_member_has_one_name_whether_read_from_history_or_the_gateway(bot: Harness):
    """Discord sends member fields (the server nickname) with gateway events only: Chloé's
    earlier turns come from history as the user "chloe", her question from the gateway as the
    member "Chloé". The prompt names her one way, the way members see her."""
    guide = bot.example_ids()["Yes, last month. This gu"]
    await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> and how long?", reply_to=guide)
    lines = [str(m["content"]) for m in bot.model.chat_requests[-1].messages[1:]]
    hers = [line for line in lines if line.startswith(("Chloé", "chloe"))]
    assert any("800 GB" in line for line in hers)  # an earlier turn, read from history
    assert len(hers) >= 2 and all(line.startswith("Chloé") for line in hers), hers
    assert "(replying to chloe)" not in "\n".join(lines)


async def test_the_live_prompt_names_whom_each_reply_answers(bot: Harness):
    """Dev's guide reaches the bot as the trigger's reference; it still replies to Chloé."""
    guide = bot.example_ids()["Yes, last month. This gu"]
    await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> is link mode safe?", reply_to=guide)
    contents = [str(m["content"]) for m in bot.model.chat_requests[-1].messages]
    assert any(c.startswith("Dev (replying to Chloé): Yes, last month.") for c in contents)
    assert contents[-1].startswith("Chloé (replying to Dev): ")
