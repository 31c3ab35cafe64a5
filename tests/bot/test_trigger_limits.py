"""What one member can make the bot do: typed ids that are not ids, edits of messages the bot
never used, a flood of triggers, role blocks that follow a member into DMs. Real nextcord client
against the fake Discord, real SQLite."""

from __future__ import annotations

import asyncio

import pytest

from bot.config.schema import ConfigError, load_config
from bot.demo.discord_gateway import INTENT_GUILDS
from bot.demo.openai_server import Answer
from bot.storage import Store
from tests.fakes.harness import (
    ALICE,
    BEN,
    BOT_ID,
    CHANNEL,
    CHLOE,
    DM_CHANNEL,
    ELI,
    ROOT,
    running_bot,
    settled,
)


async def context_reply(bot, message_id: str) -> str:
    options = [{"name": "message_id", "type": 3, "value": message_id}]
    record = await bot.discord.invoke_command(CHANNEL, CHLOE, "context", options)
    body = await bot.discord.wait_for_interaction_response(record, timeout=10)
    return body["data"]["content"]


async def test_a_huge_number_as_context_message_id_gets_one_line(tmp_path):
    # int() refuses strings of more than 4300 digits: it must not be reached with one.
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            text = await context_reply(bot, "9" * 5000)
            assert text == "That is not a message id (right-click a message, Copy Message ID)."
            assert "not a message id" in await context_reply(bot, "9" * 20)


async def test_edits_of_messages_the_bot_never_used_are_not_stored(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, permissions={"blocked_channels": [CHANNEL]}) as bot:
            said = await bot.discord.user_says(CHANNEL, ELI, "private chat, nothing for the bot")
            for n in range(5):
                await bot.discord.edit_message(CHANNEL, said["id"], f"secret v{n}")
            # The cache follows the edits; once it shows the last, the store has had them all.
            for _ in range(100):
                cache = bot.client.caches.get(CHANNEL)
                cached = cache.get(int(said["id"])) if cache is not None else None
                if cached is not None and cached.content == "secret v4":
                    break
                await asyncio.sleep(0.02)
            assert cached is not None and cached.content == "secret v4"
            await asyncio.sleep(0.1)
        assert store.message_versions(int(said["id"])) == []
        assert store.counts()["message_versions"] == 0


async def test_an_edit_of_a_trigger_is_still_a_new_version(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            said = await bot.discord.user_says(CHANNEL, ELI, f"<@{BOT_ID}> port 5432?")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
            await settled(bot)
            await bot.discord.edit_message(CHANNEL, said["id"], f"<@{BOT_ID}> port 6543?")
            for _ in range(100):
                if len(store.message_versions(int(said["id"]))) > 1:
                    break
                await asyncio.sleep(0.02)
        versions = store.message_versions(int(said["id"]))
    assert [v.state for v in versions] == ["superseded", "active"]
    assert versions[-1].content.endswith("port 6543?")


def asked(request, words: str) -> bool:
    return words in str(request.messages[-1]["content"]) if request.messages else False


async def flood(bot, author: int, count: int, word: str) -> None:
    for n in range(count):  # each past the burst window: a trigger of its own
        await bot.discord.user_says(CHANNEL, author, f"<@{BOT_ID}> {word} {n}")
        await asyncio.sleep(0.08)


async def test_a_flooding_member_holds_one_place_in_line():
    async with running_bot(fake_model={"default": Answer(text="ok", first_byte_delay=1.0)}) as bot:
        await bot.discord.user_says(CHANNEL, ELI, f"<@{BOT_ID}> first")
        await bot.model.wait_for_chat_requests(1)  # Eli's first answer is being written
        await flood(bot, ELI, 10, "spam")
        said = await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> urgent: is prod down?")
        started = len(bot.model.chat_requests)
        await flood(bot, ELI, 5, "more spam")
        waiting = [t.message.author.id for t in bot.client.queue.waiting(CHANNEL)]
        assert len(waiting) == len(set(waiting)) <= 2, waiting  # one place per member
        for _ in range(600):  # the reply to Ben (answers to Eli may come before it)
            if any(
                (m.get("message_reference") or {}).get("message_id") == said["id"]
                for m in bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
            ):
                break
            await asyncio.sleep(0.05)
        order = [asked(r, "urgent") for r in bot.model.chat_requests]
        # Ahead of Ben: the answers already started when he asked and Eli's one waiting
        # trigger; none of Eli's later ones, though they came while Ben waited.
        assert True in order and order.index(True) <= started + 1, (order, started)
        await settled(bot)
        spam = [r for r in bot.model.chat_requests if asked(r, "spam")]
        assert asked(spam[-1], "more spam 4")  # the member's latest trigger is the one answered
        assert len(spam) < 10, [r.messages[-1]["content"] for r in spam]  # not one per message


async def test_answers_across_channels_wait_for_a_free_slot():
    answer = Answer(text="ok", first_byte_delay=0.6)
    async with running_bot(
        fake_model={"default": answer}, triggers={"max_concurrent_answers": 1}
    ) as bot:
        await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
        in_dm = await bot.discord.user_says(DM_CHANNEL, ALICE, "what port again?")
        in_channel = await bot.discord.user_says(CHANNEL, ELI, f"<@{BOT_ID}> and the host?")
        await bot.discord.wait_for_bot_message(DM_CHANNEL, after=int(in_dm["id"]), timeout=10)
        await bot.discord.wait_for_bot_message(CHANNEL, after=int(in_channel["id"]), timeout=10)
        first, second = (r.received_at for r in bot.model.chat_requests[:2])
    # One slot: the second answer's request starts only once the first answer is written.
    assert (second - first).total_seconds() >= answer.first_byte_delay


@pytest.mark.parametrize(
    ("bad", "bound"), [(0, "at least 1, got 0"), (1001, "at most 1000, got 1001")]
)
def test_max_concurrent_answers_out_of_range_is_one_line(tmp_path, bad, bound):
    path = tmp_path / "config.toml"
    path.write_text(f"[triggers]\nmax_concurrent_answers = {bad}\n")
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    message = str(error.value)
    assert "[triggers] max_concurrent_answers: " in message, message
    assert bound in message and "\n" not in message


MUTED, HELPER = 1300000000000000901, 1300000000000000902


async def give_role(bot, user_id: int, role_id: int) -> None:
    """The operator creates a role in the server and gives it to a member."""
    guild_id = bot.discord.state.guild_of(CHANNEL)
    role = {"id": str(role_id), "name": f"role-{role_id}", "permissions": "0", "position": 2,
            "color": 0, "hoist": False, "managed": False, "mentionable": False}  # fmt: skip
    guild = bot.discord.state.guilds[guild_id]
    if str(role_id) not in guild.roles:
        guild.roles[str(role_id)] = role
        await bot.discord.gateway.dispatch(
            "GUILD_ROLE_CREATE", {"guild_id": guild_id, "role": role}, intent=INTENT_GUILDS
        )
    guild.members[str(user_id)]["roles"].append(str(role_id))
    for _ in range(100):
        if bot.client.get_guild(int(guild_id)).get_role(role_id) is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the client never saw the new role")


async def dm(bot, user_id: int, text: str) -> dict:
    channel = bot.discord.state.open_dm(bot.discord.state.user(user_id))
    return await bot.discord.user_says(channel["id"], user_id, text)


async def answered(bot, said: dict) -> bool:
    """Whether the bot answers the message (waiting out the burst window and the answer)."""
    try:
        await bot.discord.wait_for_bot_message(said["channel_id"], after=int(said["id"]), timeout=2)
    except TimeoutError:
        return False
    return True


async def test_a_blocked_role_follows_the_member_into_dms():
    async with running_bot(permissions={"blocked_roles": [MUTED]}) as bot:
        await give_role(bot, ELI, MUTED)
        assert not await answered(bot, await dm(bot, ELI, "hello? it's me, muted"))
        assert not await answered(bot, await dm(bot, ELI, "still muted?"))
        assert not any(asked(r, "muted") for r in bot.model.chat_requests)
        # One member lookup for both: roles are remembered briefly.
        assert len(bot.discord.requests_to("GET", f"/guilds/*/members/{ELI}")) == 1
        assert await answered(bot, await dm(bot, BEN, "hello? not muted"))


async def test_an_allowed_role_admits_a_member_in_dms_and_only_them():
    async with running_bot(permissions={"allowed_roles": [HELPER]}) as bot:
        await give_role(bot, ELI, HELPER)
        assert await answered(bot, await dm(bot, ELI, "a helper asks"))
        assert not await answered(bot, await dm(bot, BEN, "not a helper"))
        assert not any(asked(r, "not a helper") for r in bot.model.chat_requests)


async def test_roles_that_cannot_be_checked_refuse_the_dm():
    async with running_bot(permissions={"blocked_roles": [MUTED]}) as bot:
        await give_role(bot, ELI, MUTED)
        bot.discord.add_error("/guilds/*/members/*", 403, method="GET", count=None)
        assert not await answered(bot, await dm(bot, BEN, "can anyone tell?"))
        bot.discord.clear_rules()
        assert await answered(bot, await dm(bot, BEN, "and now?"))
