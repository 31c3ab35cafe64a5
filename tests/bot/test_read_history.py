"""Read Message History, end to end: a member who may post in a channel but not read its history
gets a context of only what they may read (their messages, what they reply to, the bot's answers
to them), the explanation says why, and no page of history is fetched to be dropped."""

from __future__ import annotations

import asyncio

from bot.storage import Store
from tests.bot.test_context_privacy import context_text
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, Harness, running_bot, settled

GUILD = "1300000000000000000"
READ_HISTORY = 1 << 16
ANA = 1300000000000000101


async def deny_history(bot: Harness, user: int) -> None:
    """A member overwrite on the example channel taking Read Message History from ``user``."""
    channel = bot.discord.state.channels[str(CHANNEL)]
    channel["permission_overwrites"] = [
        {"id": str(user), "type": 1, "allow": "0", "deny": str(READ_HISTORY)}
    ]
    await bot.discord.gateway.dispatch("CHANNEL_UPDATE", channel)
    for _ in range(100):
        cached = bot.client.get_channel(CHANNEL)
        if cached is not None and cached._overwrites:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the overwrite never reached the bot")


async def asks(bot: Harness, user: int, text: str, **kwargs) -> tuple[int, str]:
    """``user`` asks the bot; the id of their message and everything the model was sent."""
    before = len(bot.model.chat_requests)
    said = await bot.discord.user_says(CHANNEL, user, f"<@{BOT_ID}> {text}", **kwargs)
    await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    await settled(bot)
    assert len(bot.model.chat_requests) == before + 1
    sent = bot.model.chat_requests[-1].body["messages"]
    return int(said["id"]), "\n".join(str(m["content"]) for m in sent)


async def test_without_read_history_the_context_holds_only_what_the_asker_may_read(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        # Four recent messages always in: the channel's older ones are in Ben's context.
        async with running_bot(store=store, context={"min_linear": 4}) as bot:
            await deny_history(bot, CHLOE)
            secret = await bot.discord.user_says(CHANNEL, BEN, "the vault code is 4417")
            await bot.discord.user_says(CHANNEL, CHLOE, "I moved the NAS to rack 3 yesterday")
            _, bens = await asks(bot, BEN, "what is the vault code again?")
            assert "4417" in bens  # Ben may read the history: the context has it
            assert "the deploy is green" in bens  # ... and the channel's older messages

            bot.discord.clear_requests()
            first, chloes = await asks(bot, CHLOE, "what was said here before I came?")
            for unreadable in ("4417", "vault code", "the deploy is green", "ramen"):
                assert unreadable not in chloes, unreadable
            assert "rack 3" in chloes  # her own message
            assert "what was said here before" in chloes  # the question
            # Her own message from before (cached when Ben's answer read the channel) is hers.
            assert "given the guide Dev linked" in chloes
            # Nothing was read from Discord to build it (no page fetched to be dropped).
            assert not bot.discord.requests_to("GET", f"/channels/{CHANNEL}/messages*")

            # Her next question sees the bot's answer to her first one, still nothing of Ben's.
            _, again = await asks(bot, CHLOE, "and what did you just tell me?")
            assert "echo: " in again and "what was said here before" in again
            assert "4417" not in again and "vault code" not in again

            # Replying to Ben's message brings that message, and only that one of his.
            _, replied = await asks(bot, CHLOE, "is this still true?", reply_to=int(secret["id"]))
            assert "4417" in replied
            assert "what is the vault code again" not in replied

            # The explanation says why the rest is absent.
            shown = await context_text(bot, CHLOE, first)
    assert "Only part of the channel" in shown
    assert "cannot read this channel's history" in shown


async def test_the_restriction_is_in_the_stored_work_log_and_links_say_why(tmp_path):
    rotate = 1350031449784320000  # Ben: "I'll rotate the old snapshots, they go back to 2023."
    link = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{rotate}"
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await deny_history(bot, ANA)
            trigger, sent = await asks(bot, ANA, f"is this done? {link}")
            await settled(bot)
            explanation = store.explain(trigger)
    assert "rotate the old snapshots" not in sent
    actions = [entry.action for entry in explanation.work_log]
    assert "history_restricted" in actions
    assert "history_page" not in actions
    (followed,) = [e.detail for e in explanation.work_log if e.action == "link_followed"]
    assert "not among what the asker may read" in followed
