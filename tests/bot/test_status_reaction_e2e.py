"""The status reaction end to end: the real bot on the stand-in Discord and model. The trigger
gets "seen" while the answer is prepared, "using a tool" while a tool runs, and nothing once
the answer is posted; a failed answer leaves "failed"; where the bot may not react, or Discord
refuses the reaction, the answer is posted all the same."""

from __future__ import annotations

import asyncio

from bot.demo.discord_permissions import ADD_REACTIONS
from bot.demo.openai_server import Answer, CallTools, Fail
from bot.storage import Store
from tests.bot.tools import test_tools_e2e
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, running_bot, settled

STATUS_ON = {"reactions": True}
TOOLS_ON = test_tools_e2e.TOOLS_ON
toolbox = test_tools_e2e.toolbox  # the fixture: the test MCP server over stdio


async def asked(bot, text: str) -> tuple[dict, dict]:
    """A member mentions the bot; the trigger and the bot's answer, once it is done."""
    said = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> {text}")
    reply = await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    await settled(bot)
    return said, bot.discord.message(CHANNEL, int(reply["id"]))


def bots_changes(bot, message: dict) -> list[tuple[str, bool]]:
    return [(c.emoji, c.added) for c in bot.discord.reaction_changes(message["id"], user=BOT_ID)]


async def test_seen_while_answering_and_gone_once_posted() -> None:
    async with running_bot(status=STATUS_ON) as bot:
        bot.model.queue(Answer(text="Here you are."))
        said, reply = await asked(bot, "what is new?")
        assert reply["content"] == "Here you are."
        changes = await bot.discord.wait_for_reaction_changes(said["id"], 2, user=BOT_ID)
        assert [(c.emoji, c.added) for c in changes] == [("👀", True), ("👀", False)]
        assert bot.discord.reactions_on(said["id"]) == {}


async def test_a_running_tool_shows_and_goes(toolbox) -> None:
    async with running_bot(status=STATUS_ON, toolbox=toolbox, tools=TOOLS_ON) as bot:
        bot.model.queue(CallTools((("echo", '{"text": "hi"}'),)), Answer(text="It said hi."))
        said, reply = await asked(bot, "use the echo tool")
        assert reply["content"] == "It said hi."
        await bot.discord.wait_for_reaction_changes(said["id"], 4, user=BOT_ID)
        assert bots_changes(bot, said) == [
            ("👀", True), ("👀", False), ("🛠️", True), ("🛠️", False),
        ]  # fmt: skip
        assert bot.discord.reactions_on(said["id"]) == {}


async def test_a_failed_answer_leaves_failed() -> None:
    async with running_bot(status=STATUS_ON) as bot:
        bot.model.queue(Fail(status=400, message="no such model"))
        said, reply = await asked(bot, "hello?")
        await bot.discord.wait_for_reaction_changes(said["id"], 3, user=BOT_ID)
        assert bots_changes(bot, said) == [("👀", True), ("👀", False), ("⚠️", True)]
        assert bot.discord.reactions_on(said["id"]) == {"⚠️": [BOT_ID]}
        assert reply["content"]  # the failure line was posted too


async def test_off_by_default_and_where_the_bot_may_not_react() -> None:
    async with running_bot() as bot:
        said, reply = await asked(bot, "hello")
        assert reply["content"] and bots_changes(bot, said) == []
    async with running_bot(status=STATUS_ON) as bot:
        await bot.discord.set_bot_overwrite(CHANNEL, deny=ADD_REACTIONS)
        said, reply = await asked(bot, "hello")
        assert reply["content"] and bots_changes(bot, said) == []
        refused = bot.discord.requests_to(pattern="*reactions*")
        assert refused == []  # not tried: the permission said so


async def test_a_refused_reaction_never_stops_the_answer() -> None:
    """Discord refuses the emoji (400 Unknown Emoji): the answer is posted all the same."""
    async with running_bot(status=STATUS_ON | {"seen": "ok"}) as bot:
        bot.model.queue(Answer(text="Still here."))
        said, reply = await asked(bot, "hello")
        assert reply["content"] == "Still here."
        assert bots_changes(bot, said) == []
        assert bot.discord.requests_to(pattern="*reactions*")  # it was tried, and refused


async def test_a_stop_while_the_reaction_settles_still_records_the_posted_answer(
    tmp_path,
) -> None:
    """The answer is posted and its reaction's removal is slow when the bot stops: the stop
    cuts the wait for the reaction short, never the answer's record."""
    store = Store.open(tmp_path / "store.sqlite3")
    try:
        async with running_bot(store=store, status=STATUS_ON) as bot:
            bot.discord.add_latency("*/reactions/*", 4.0, method="DELETE")
            bot.model.queue(Answer(text="Here you are."))
            said = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> what is new?")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
            for _ in range(100):  # the answer posted whole, its turn now waits on the reaction
                if any(m["content"] == "Here you are." for m in bot.discord.messages(CHANNEL)):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            assert bot.client._tasks  # still settling when the bot stops
        assert store.find_interaction(int(said["id"])) is not None
    finally:
        store.close()
