"""Discord message links in a trigger: parsed, followed like references, and left out with a
reason when the message is in another server or a channel the asker or the bot cannot read."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.answering.recording import InteractionRecorder
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from conversation.common.settings import ContextSettings
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.selection.message_links import MessageLink, message_links
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.harness import make_config, sent_contents

LOGS = Path(__file__).resolve().parents[1] / "logs"
GUILD, GENERAL, RANDOM = 400000000000000001, 500000000000000001, 500000000000000002
BOT_ID, ALICE, BOB = 1100000000000000001, 200000000000000001, 200000000000000002
SPACES = 1213065949347840000  # carol: "spaces", in #random
PARSER = 1213063181107200000  # alice: "morning all, anyone tried the new parser release?"
VIEW_CHANNEL, READ_HISTORY = 1 << 10, 1 << 16


def test_links_on_every_discord_host_are_found_once_each():
    text = (
        f"see https://discord.com/channels/{GUILD}/{RANDOM}/{SPACES} and "
        f"https://ptb.discord.com/channels/{GUILD}/{GENERAL}/{PARSER}, "
        f"again https://canary.discord.com/channels/{GUILD}/{RANDOM}/{SPACES} "
        "and https://discordapp.com/channels/@me/5/6 but not https://discord.com/channels/1/2"
    )
    assert message_links(text) == [
        MessageLink(GUILD, RANDOM, SPACES),
        MessageLink(GUILD, GENERAL, PARSER),
        MessageLink(None, 5, 6),
    ]


async def _build_last(source: LogSource, content: str, **overrides) -> tuple:
    """Builds the context of the log's last message with ``content`` as its text."""
    trigger = source.messages[-1]
    trigger.content = content
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    selection = await ContextBuilder(ContextSettings(**overrides)).build(trigger, reader)
    return selection, reader


async def test_a_link_into_the_same_channel_is_followed_like_a_reference():
    source = LogSource.from_file(LOGS / "fake_guild_general.json")
    link = f"https://discord.com/channels/{GUILD}/{GENERAL}/{PARSER}"
    selection, _ = await _build_last(source, f"about this: {link}", min_linear=1, max_total=3)
    assert PARSER in selection.ids
    reasons = selection.reasons[PARSER]
    assert reasons[0].kind == "link" and reasons[0].via == source.messages[-1].id
    assert len(selection.ids) <= 3  # the cap still holds
    assert selection.rest_calls == 1  # the page of recent messages covers it


@pytest.mark.parametrize(
    ("link", "why"),
    [
        (f"https://discord.com/channels/999/{GENERAL}/{PARSER}", "in another server"),
        (f"https://discord.com/channels/{GUILD}/{RANDOM}/{SPACES}", "only this channel"),
        (f"https://discord.com/channels/{GUILD}/{GENERAL}/1213063181107200001", "no longer"),
    ],
)
async def test_a_link_left_out_says_why(link: str, why: str):
    source = LogSource.from_file(LOGS / "fake_guild_general.json")
    selection, reader = await _build_last(source, f"look {link}", min_linear=1)
    assert PARSER not in selection.ids or "999" not in link
    problem = next(p for p in selection.problems if link in p)
    assert why in problem
    assert any(entry.action == "link_followed" for entry in reader.log)


# ------------------------------------------------------------------ through the fake Discord


@contextlib.asynccontextmanager
async def linked_guild(
    random_overwrites: list[dict] | None = None, store: Store | None = None
) -> AsyncIterator[tuple]:
    """The bot in a guild of two channels whose members may read history in both."""
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord, FakeOpenAI() as fake:
        await discord.load_log(LOGS / "fake_guild_general.json")
        await discord.load_log(LOGS / "fake_guild_random.json")
        everyone = discord.state.guilds[str(GUILD)].roles[str(GUILD)]
        everyone["permissions"] = str(VIEW_CHANNEL | READ_HISTORY)
        if random_overwrites is not None:
            discord.state.channels[str(RANDOM)]["permission_overwrites"] = random_overwrites
        config = make_config(discord, fake)
        async with ModelClient(config.model) as model_client:
            recorder = InteractionRecorder(store) if store is not None else None
            client = ThreadwiseClient(
                config, articles=None, model=model_client, recorder=recorder, store=store
            )
            with discord.nextcord_pointed_here():
                async with discord.running(client) as ready:
                    yield discord, fake, ready
        assert not discord.server_errors, discord.server_errors


async def settled(client: ThreadwiseClient) -> None:
    """Until the bot has no answer in progress and no record waiting for the store."""
    for _ in range(100):
        if not client._tasks and not client.answerer.records:
            return
        await asyncio.sleep(0.05)


async def _ask(discord: FakeDiscord, fake: FakeOpenAI, content: str) -> str:
    said = await discord.user_says(GENERAL, ALICE, f"<@{BOT_ID}> {content}")
    await discord.wait_for_bot_message(GENERAL, after=int(said["id"]), timeout=10)
    return sent_contents(fake.chat_requests[-1].messages)


async def test_a_link_to_another_channel_brings_its_message_in():
    async with linked_guild() as (discord, fake, _):
        link = f"https://discord.com/channels/{GUILD}/{RANDOM}/{SPACES}"
        prompt = await _ask(discord, fake, f"who is right here? {link}")
        assert "spaces" in prompt.split(link)[0] or "\nspaces" in prompt or "spaces\n" in prompt
        assert discord.requests_to("GET", f"/channels/{RANDOM}/messages/{SPACES}")


async def test_a_channel_the_asker_cannot_view_is_not_read(tmp_path):
    hidden = [
        {"id": str(GUILD), "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)},
        {"id": str(BOT_ID), "type": 1, "allow": str(VIEW_CHANNEL | READ_HISTORY), "deny": "0"},
    ]
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with linked_guild(hidden, store) as (discord, fake, client):
            link = f"https://discord.com/channels/{GUILD}/{RANDOM}/{SPACES}"
            prompt = await _ask(discord, fake, f"what did they say? {link}")
            await settled(client)
            assert "heretic" not in prompt and "\nspaces" not in prompt
            assert not discord.requests_to("GET", f"/channels/{RANDOM}/messages/{SPACES}")
            # The explanation (/context, explain) says what was left out and why.
            record = await discord.invoke_command(GENERAL, ALICE, "context")
            body = await discord.wait_for_interaction_response(record, timeout=10)
    text = body["data"]["content"]
    assert "Message links:" in text and "you cannot view that channel" in text


async def test_a_channel_the_bot_cannot_read_is_not_read():
    hidden = [{"id": str(BOT_ID), "type": 1, "allow": "0", "deny": str(READ_HISTORY)}]
    async with linked_guild(hidden) as (discord, fake, _):
        link = f"https://discord.com/channels/{GUILD}/{RANDOM}/{SPACES}"
        await _ask(discord, fake, f"what did they say? {link}")
        assert not discord.requests_to("GET", f"/channels/{RANDOM}/messages/{SPACES}")


# ------------------------------------------------------------------ links into threads

THREAD = 600000000000000001


async def _thread_with_a_secret(
    discord: FakeDiscord, client: ThreadwiseClient, *, private: bool, archived: bool, members
) -> str:
    """A thread under #random holding one message from Bob; returns the link to it."""
    await discord.add_thread(
        THREAD, RANDOM, "plans", private=private, archived=archived, members=members
    )
    said = discord.state.create_message(THREAD, discord.state.user(BOB), "the surprise is cake")
    if not archived:
        for _ in range(100):
            if client.get_channel(THREAD) is not None:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the thread never reached the bot")
    return f"https://discord.com/channels/{GUILD}/{THREAD}/{said['id']}"


async def _context_of_last_answer(discord: FakeDiscord) -> str:
    record = await discord.invoke_command(GENERAL, ALICE, "context")
    body = await discord.wait_for_interaction_response(record, timeout=10)
    return body["data"]["content"]


@pytest.mark.parametrize("archived", [False, True], ids=["active", "archived"])
async def test_a_private_thread_the_asker_has_not_joined_is_not_read(tmp_path, archived):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with linked_guild(store=store) as (discord, fake, client):
            link = await _thread_with_a_secret(
                discord, client, private=True, archived=archived, members=[BOB, BOT_ID]
            )
            prompt = await _ask(discord, fake, f"what is the surprise? {link}")
            await settled(client)
            assert "cake" not in prompt
            assert not discord.requests_to("GET", f"/channels/{THREAD}/messages/*")
            text = await _context_of_last_answer(discord)
    assert "Message links:" in text and "you cannot view that channel" in text


@pytest.mark.parametrize("archived", [False, True], ids=["active", "archived"])
async def test_a_private_thread_the_asker_joined_is_read(archived):
    async with linked_guild() as (discord, fake, client):
        link = await _thread_with_a_secret(
            discord, client, private=True, archived=archived, members=[BOB, ALICE, BOT_ID]
        )
        prompt = await _ask(discord, fake, f"what is the surprise? {link}")
        assert "cake" in prompt
        # Without the members intent the bot does not see who joined: it asked Discord.
        assert discord.requests_to("GET", f"/channels/{THREAD}/thread-members/{ALICE}")


async def test_a_private_thread_the_bot_has_not_joined_is_not_read():
    async with linked_guild() as (discord, fake, client):
        link = await _thread_with_a_secret(
            discord, client, private=True, archived=False, members=[BOB, ALICE]
        )
        prompt = await _ask(discord, fake, f"what is the surprise? {link}")
        assert "cake" not in prompt
        assert not discord.requests_to("GET", f"/channels/{THREAD}/messages/*")


@pytest.mark.parametrize("archived", [False, True], ids=["active", "archived"])
async def test_a_public_thread_is_read_by_anyone_who_can_read_its_channel(archived):
    async with linked_guild() as (discord, fake, client):
        link = await _thread_with_a_secret(
            discord, client, private=False, archived=archived, members=[BOB]
        )
        prompt = await _ask(discord, fake, f"what is the surprise? {link}")
        assert "cake" in prompt
        assert not discord.requests_to("GET", f"/channels/{THREAD}/thread-members/*")


async def test_a_public_thread_of_a_channel_the_asker_cannot_view_is_not_read():
    hidden = [
        {"id": str(GUILD), "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)},
        {"id": str(BOT_ID), "type": 1, "allow": str(VIEW_CHANNEL | READ_HISTORY), "deny": "0"},
    ]
    async with linked_guild(hidden) as (discord, fake, client):
        link = await _thread_with_a_secret(
            discord, client, private=False, archived=False, members=[BOB]
        )
        prompt = await _ask(discord, fake, f"what is the surprise? {link}")
        assert "cake" not in prompt
