"""The fake Discord, exercised through the real nextcord client (2.6 and 3.x).

These tests pin the fake's Discord semantics (paging, reference resolution, gateway resume,
intents, faults) so that end-to-end bot tests built on it test the bot, not the fake.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import nextcord
import pytest

from bot.demo.discord_gateway import RESUME_PATH
from bot.demo.discord_server import FakeDiscord, ManualClock, make_nextcord_client
from bot.demo.discord_state import ChannelMessages, Signal
from conversation.replay.dce import parse_export
from conversation.sources.snowflakes import snowflake_time, time_snowflake

LOGS = Path(__file__).parent / "logs"
GENERAL_LOG = LOGS / "fake_guild_general.json"
RANDOM_LOG = LOGS / "fake_guild_random.json"
DM_LOG = LOGS / "fake_dm_alice.json"

GUILD = 400000000000000001
GENERAL = 500000000000000001
RANDOM = 500000000000000002
DM = 500000000000000099
ALICE, BOB, CAROL = 200000000000000001, 200000000000000002, 200000000000000003


def log_ids(path: Path) -> list[int]:
    return [int(m["id"]) for m in json.loads(path.read_text())["messages"]]


class EventRecorder:
    """Collects nextcord events by name; tests wait for counts instead of sleeping."""

    def __init__(self, client: nextcord.Client, *names: str) -> None:
        self.events: dict[str, list[Any]] = {name: [] for name in names}
        self._signal = Signal()
        for name in names:
            client.event(self._handler(name))

    def _handler(self, name: str):
        async def handler(*args: Any) -> None:
            self.events[name].append(args[0] if len(args) == 1 else args)
            self._signal.notify()

        handler.__name__ = f"on_{name}"
        return handler

    async def wait(
        self,
        name: str,
        count: int = 1,
        timeout: float = 3.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> list[Any]:
        return await self._signal.wait_for(
            lambda: len(self.events[name]) >= count and self.events[name],
            timeout,
            f"{count} {name} event(s)",
        )


def synthetic_export(channel_id: int, count: int, *, start: datetime) -> Any:
    """A DCE export of ``count`` messages one minute apart, alternating two authors."""
    authors = [
        {"id": str(ALICE), "name": "alice", "discriminator": "0000", "isBot": False},
        {"id": str(BOB), "name": "bob", "discriminator": "0000", "isBot": False},
    ]
    messages = []
    for index in range(count):
        moment = start + timedelta(minutes=index)
        messages.append(
            {
                "id": str(time_snowflake(moment)),
                "type": "Default",
                "timestamp": moment.isoformat(),
                "content": f"message {index}",
                "author": authors[index % 2],
            }
        )
    raw = {
        "guild": {"id": str(GUILD), "name": "Fake Guild"},
        "channel": {"id": str(channel_id), "type": "GuildTextChat", "name": f"c{channel_id}"},
        "messages": messages,
    }
    return parse_export(raw, source=f"<synthetic {channel_id}>")


# ----------------------------------------------------------------------------- connection


async def test_client_connects_and_sees_guild_channels_and_dm(fake_discord, connect_client):
    for log in (GENERAL_LOG, RANDOM_LOG, DM_LOG):
        await fake_discord.load_log(log)
    client = make_nextcord_client(members=True)  # privileged: members cached, chunked
    recorder = EventRecorder(client, "ready")
    await connect_client(client)

    await recorder.wait("ready")
    assert client.user.id == fake_discord.bot_id
    guild = client.get_guild(GUILD)
    assert guild is not None and guild.name == "Fake Guild"
    assert sorted(channel.name for channel in guild.text_channels) == ["general", "random"]
    assert guild.me is not None and guild.me.id == fake_discord.bot_id
    assert guild.get_member(ALICE).display_name == "Alice" and guild.chunked
    found = await guild.query_members("ali")  # gateway op 8 REQUEST_GUILD_MEMBERS
    assert [member.id for member in found] == [ALICE]
    assert fake_discord.gateway.frames_with_op(8)[0].data["query"] == "ali"
    dm = await client.fetch_channel(DM)
    assert isinstance(dm, nextcord.DMChannel) and dm.recipient.id == ALICE
    # One IDENTIFY over the compressed JSON transport nextcord asks for.
    assert fake_discord.gateway.identify_count == 1
    query = fake_discord.gateway.connections[0].query
    assert query["encoding"] == "json" and query["compress"] == "zlib-stream"
    assert all(request.handled for request in fake_discord.requests)


async def test_login_with_wrong_token_fails(fake_discord):
    client = make_nextcord_client()
    with pytest.raises(nextcord.LoginFailure):
        await client.login("not-the-token")
    await client.close()
    assert fake_discord.requests[-1].status == 401


async def test_responses_are_plain_application_json_and_unknown_routes_are_recorded(
    fake_discord,
):
    await fake_discord.load_log(GENERAL_LOG)
    headers = {"Authorization": f"Bot {fake_discord.token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.get(f"{fake_discord.api_base}/channels/{GENERAL}") as response:
            assert response.headers["Content-Type"] == "application/json"
            assert (await response.json())["name"] == "general"
        url = f"{fake_discord.api_base}/channels/{GENERAL}/messages?limit=101"
        async with session.get(url) as response:
            body = await response.json()
            assert response.status == 400 and body["code"] == 50035 and "limit" in body["errors"]
        async with session.get(f"{fake_discord.api_base}/no/such/route") as response:
            assert response.status == 404
    assert fake_discord.requests[-1].handled is False
    assert fake_discord.requests[-2].query == {"limit": "101"}


# ----------------------------------------------------------------------------- history


def test_page_semantics_match_discord():
    store = ChannelMessages()
    for message_id in (50, 10, 40, 20, 30):  # out of order on purpose
        store.put({"id": str(message_id)})
    assert store.page(2) == [50, 40]
    assert store.page(2, before=40) == [30, 20]
    assert store.page(2, after=10) == [30, 20]  # the oldest after, served newest first
    assert store.page(3, around=30) == [40, 30, 20]
    assert store.page(4, around=30) == [40, 30, 20, 10]
    assert store.page(3, around=35) == [40, 30, 20]  # absent anchor: older side fills
    assert store.page(5, after=20, before=40) == [50, 40, 30]  # after wins over before
    store.remove(30)
    assert store.page(10) == [50, 40, 20, 10]


async def test_history_pages_before_after_and_around(fake_discord, connect_client):
    start = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    export = synthetic_export(GENERAL, 230, start=start)
    await fake_discord.load_log(export)
    ids = [int(message.id) for message in export.messages]
    client = await connect_client()
    channel = client.get_channel(GENERAL)

    fake_discord.clear_requests()
    newest_first = [
        m.id async for m in channel.history(limit=250, before=nextcord.Object(ids[-1] + 1))
    ]
    assert newest_first == ids[::-1]
    pages = fake_discord.requests_to("GET", f"/channels/{GENERAL}/messages")
    assert [request.query.get("before") for request in pages] == [
        str(ids[-1] + 1),
        str(ids[130]),
        str(ids[30]),
    ]

    fake_discord.clear_requests()
    after = [m.id async for m in channel.history(limit=150, after=nextcord.Object(ids[9]))]
    assert after == ids[10:160]  # nextcord gives oldest first with after=
    assert [r.query["after"] for r in fake_discord.requests] == [str(ids[9]), str(ids[109])]

    around = [m.id async for m in channel.history(limit=7, around=nextcord.Object(ids[100]))]
    assert around == ids[97:104][::-1]
    assert fake_discord.requests[-1].query == {"limit": "7", "around": str(ids[100])}

    first = await channel.fetch_message(ids[0])
    assert first.content == "message 0" and first.created_at == snowflake_time(ids[0])


async def test_fetch_message_and_unknown_message(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = await connect_client()
    channel = client.get_channel(GENERAL)

    message = await channel.fetch_message(ids[1])
    assert (message.author.id, message.content) == (BOB, "yes, it broke our build")
    with pytest.raises(nextcord.NotFound) as caught:
        await channel.fetch_message(ids[1] + 1)
    assert caught.value.code == 10008 and caught.value.text == "Unknown Message"


async def test_replayed_replies_resolve_like_discord(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = await connect_client()
    channel = client.get_channel(GENERAL)

    reply = await channel.fetch_message(ids[3])  # alice replying to bob
    assert reply.reference.message_id == ids[1]
    assert isinstance(reply.reference.resolved, nextcord.Message)
    assert reply.reference.resolved.content == "yes, it broke our build"

    outside = await channel.fetch_message(ids[2])  # reply to a message older than the log
    assert outside.reference.message_id is not None and outside.reference.resolved is None

    to_deleted = await channel.fetch_message(ids[5])  # reply into a gap of the log
    assert isinstance(to_deleted.reference.resolved, nextcord.DeletedReferencedMessage)

    history = [m async for m in channel.history(limit=20)]
    by_id = {m.id: m for m in history}
    assert by_id[ids[8]].reference.resolved.author.id == fake_discord.bot_id


# ----------------------------------------------------------------------------- posting


async def test_bot_reply_is_recorded_and_echoed(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message")
    await connect_client(client)
    channel = client.get_channel(GENERAL)
    trigger = await channel.fetch_message(ids[6])

    async with channel.typing():
        sent = await channel.send(
            f"hi <@{BOB}> and @everyone",
            reference=trigger,
            allowed_mentions=nextcord.AllowedMentions.none(),
            mention_author=False,
        )

    post = fake_discord.requests_to("POST", f"/channels/{GENERAL}/messages")[-1]
    assert int(post.body["message_reference"]["message_id"]) == ids[6]
    assert post.body["allowed_mentions"] == {"parse": [], "replied_user": False}
    assert fake_discord.requests_to("POST", f"/channels/{GENERAL}/typing")
    stored = fake_discord.message(GENERAL, sent.id)
    assert stored["type"] == 19 and stored["referenced_message"]["id"] == str(ids[6])
    assert stored["mentions"] == [] and stored["mention_everyone"] is False
    assert sent.reference.resolved.id == ids[6]
    echoed = (await recorder.wait("message"))[0]
    assert echoed.id == sent.id and echoed.author.id == fake_discord.bot_id

    pinging = await channel.send(f"hi <@{BOB}>", reference=trigger)  # nextcord defaults
    assert {user.id for user in pinging.mentions} == {BOB, ALICE}  # ALICE: replied user

    edited = await sent.edit(content="edited")
    assert edited.content == "edited" and edited.edited_at is not None
    assert fake_discord.message(GENERAL, sent.id)["content"] == "edited"
    await sent.delete()
    with pytest.raises(nextcord.NotFound):
        await channel.fetch_message(sent.id)

    with pytest.raises(nextcord.HTTPException) as too_long:
        await channel.send("x" * 2001)
    assert too_long.value.code == 50035


async def test_user_messages_edits_and_deletes_arrive_as_events(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message", "raw_message_edit", "raw_message_delete")
    await connect_client(client)

    said = await fake_discord.user_says(
        GENERAL, CAROL, f"<@{fake_discord.bot_id}> what about this?", reply_to=ids[7]
    )
    message = (await recorder.wait("message"))[0]
    assert message.id == int(said["id"]) and message.author.id == CAROL
    assert fake_discord.bot_id in {user.id for user in message.mentions}
    assert message.reference.resolved.content.startswith("The tokenizer")
    assert message.created_at == snowflake_time(said["id"])
    assert int(said["id"]) > ids[-1]

    await fake_discord.edit_message(GENERAL, said["id"], "never mind")
    edit = (await recorder.wait("raw_message_edit"))[0]
    assert edit.message_id == int(said["id"]) and edit.data["content"] == "never mind"
    await fake_discord.delete_message(GENERAL, said["id"])
    deleted = (await recorder.wait("raw_message_delete"))[0]
    assert deleted.message_id == int(said["id"])
    with pytest.raises(nextcord.NotFound):
        await client.get_channel(GENERAL).fetch_message(int(said["id"]))


async def test_dm_log_and_dm_messages(fake_discord, connect_client):
    await fake_discord.load_log(DM_LOG)
    ids = log_ids(DM_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message")
    await connect_client(client)

    alice = await client.fetch_user(ALICE)
    dm = await alice.create_dm()
    assert dm.id == DM
    history = [m async for m in dm.history(limit=10)]
    assert [m.id for m in history] == ids[::-1]
    assert history[0].reference.resolved.author.id == fake_discord.bot_id

    await fake_discord.user_says(DM, ALICE, "one more question")
    message = (await recorder.wait("message"))[0]
    assert isinstance(message.channel, nextcord.DMChannel) and message.guild is None


async def test_snowflakes_increase_and_follow_the_clock():
    clock = ManualClock(datetime(2030, 1, 1, tzinfo=UTC))
    async with FakeDiscord(clock=clock) as fake:
        await fake.load_log(GENERAL_LOG)
        first = await fake.user_says(GENERAL, ALICE, "a")
        second = await fake.user_says(GENERAL, BOB, "b")  # same millisecond
        clock.advance(minutes=40)
        third = await fake.user_says(GENERAL, ALICE, "c")
    first_id, second_id, third_id = (int(m["id"]) for m in (first, second, third))
    assert first_id < second_id < third_id
    assert snowflake_time(first_id) == clock.now - timedelta(minutes=40)
    assert snowflake_time(third_id) == clock.now
    assert third["timestamp"] == clock.now.isoformat()


# ----------------------------------------------------------------------------- gateway faults


async def test_reconnect_resumes_and_replays_missed_dispatches(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message", "resumed")
    await connect_client(client)
    gateway = fake_discord.gateway

    async with gateway.held():
        assert await gateway.send_reconnect() == 1
        await gateway.wait_for_disconnected()
        await fake_discord.user_says(GENERAL, ALICE, "while you were away")
        await fake_discord.user_says(GENERAL, BOB, "me too")

    await recorder.wait("resumed")
    messages = await recorder.wait("message", 2)
    assert [m.content for m in messages] == ["while you were away", "me too"]
    assert gateway.replayed == [2] and gateway.identify_count == 1
    assert gateway.connections[-1].path == RESUME_PATH  # resume_gateway_url was used

    await fake_discord.gateway.close_connections(4000)  # an abnormal close also resumes
    await recorder.wait("resumed", 2)
    assert gateway.identify_count == 1

    await client.close()  # a clean close (1000) ends the session: nothing buffers for it
    await gateway.wait_for_disconnected()
    assert not any(session.valid for session in gateway.sessions.values())


class QuickReidentifyClient(nextcord.Client):
    """nextcord waits 5 s before every non-initial IDENTIFY (Discord's identify rate limit);
    this documented hook is overridden so the test does not sit through it."""

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        return None


async def test_invalid_session_leads_to_fresh_identify(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    intents = nextcord.Intents.default()
    intents.message_content = True
    client = QuickReidentifyClient(intents=intents, guild_ready_timeout=0.1)
    recorder = EventRecorder(client, "ready", "message")
    await connect_client(client)
    await recorder.wait("ready")

    assert await fake_discord.gateway.invalidate_sessions(resumable=False) == 1
    await recorder.wait("ready", 2)
    assert fake_discord.gateway.identify_count == 2
    assert len(fake_discord.requests_to("GET", "/gateway")) == 2
    await fake_discord.user_says(GENERAL, ALICE, "still there?")
    assert (await recorder.wait("message"))[0].content == "still there?"


async def test_refused_message_content_intent_raises_privileged_intents_required(
    fake_discord,
):
    await fake_discord.load_log(GENERAL_LOG)
    fake_discord.allowed_privileged_intents = 0
    client = make_nextcord_client(message_content=True)
    with pytest.raises(nextcord.PrivilegedIntentsRequired):
        async with fake_discord.running(client):
            pass
    assert fake_discord.gateway.identify_count == 1


async def test_without_message_content_guild_messages_are_blank_unless_mentioned(
    fake_discord, connect_client
):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client(message_content=False)
    recorder = EventRecorder(client, "message")
    await connect_client(client)

    await fake_discord.user_says(GENERAL, ALICE, "secret plans")
    await fake_discord.user_says(GENERAL, ALICE, f"<@{fake_discord.bot_id}> hello")
    messages = await recorder.wait("message", 2)
    assert [m.content for m in messages] == ["", f"<@{fake_discord.bot_id}> hello"]

    # REST follows the application's privilege, not the connection's intents.
    history = await _collect(client.get_channel(GENERAL))
    assert history[1].content == "secret plans"
    fake_discord.allowed_privileged_intents = 0
    history = await _collect(client.get_channel(GENERAL))
    assert [m.content for m in history[:2]] == [f"<@{fake_discord.bot_id}> hello", ""]
    bot_own = next(m for m in history if m.author.id == fake_discord.bot_id)
    assert bot_own.content.startswith("The tokenizer")


async def test_many_channels_at_once(fake_discord, connect_client):
    start = datetime(2024, 6, 1, tzinfo=UTC)
    channel_ids = [700000000000000000 + n for n in range(100)]
    for n, channel_id in enumerate(channel_ids):
        await fake_discord.load_log(
            synthetic_export(channel_id, 3, start=start + timedelta(hours=n))
        )
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message")
    await connect_client(client)
    assert len(client.get_guild(GUILD).text_channels) == 100

    await asyncio.gather(*(fake_discord.user_says(cid, ALICE, f"hi {cid}") for cid in channel_ids))
    messages = await recorder.wait("message", 100)
    assert {m.channel.id for m in messages} == set(channel_ids)
    histories = await asyncio.gather(*(_collect(client.get_channel(cid)) for cid in channel_ids))
    assert all(len(history) == 4 for history in histories)


async def _collect(channel: Any) -> list[Any]:
    return [m async for m in channel.history(limit=10)]


# ----------------------------------------------------------------------------- REST faults


async def test_injected_403_404_429_and_latency(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = await connect_client()
    channel = client.get_channel(GENERAL)

    forbidden = fake_discord.forbid_history(GENERAL, count=1)
    with pytest.raises(nextcord.Forbidden) as caught:
        await _collect(channel)
    assert caught.value.code == 50001 and caught.value.text == "Missing Access"
    assert len(await _collect(channel)) == 10  # count=1: the next call succeeds
    assert forbidden.hits == 1 and forbidden.remaining == 0

    fake_discord.add_error(f"/channels/{GENERAL}/messages/{ids[0]}", 404, method="GET")
    with pytest.raises(nextcord.NotFound) as missing:
        await channel.fetch_message(ids[0])
    assert missing.value.code == 10008

    limited = fake_discord.add_error(
        f"/channels/{GENERAL}/messages/{ids[1]}", 429, retry_after=0.05
    )
    message = await channel.fetch_message(ids[1])  # nextcord waits and retries
    assert message.id == ids[1] and limited.hits == 1
    statuses = [r.status for r in fake_discord.requests_to("GET", f"/channels/*/{ids[1]}")]
    assert statuses == [429, 200]

    slow = fake_discord.add_latency(f"/channels/{GENERAL}/messages/*", 0.3, count=1)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await channel.fetch_message(ids[2])
    assert loop.time() - began >= 0.3  # a lower bound: the injected delay happened
    assert slow.hits == 1 and fake_discord.requests[-1].delay == pytest.approx(0.3)

    fake_discord.add_error(f"/channels/{GENERAL}/messages", 503, method="POST", count=None)
    with pytest.raises(nextcord.DiscordServerError):
        await channel.send("never stored")
    assert all(m["content"] != "never stored" for m in fake_discord.messages(GENERAL))


# ----------------------------------------------------------------------------- interactions


async def test_slash_command_round_trip(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()

    @client.slash_command(name="ping", description="Ping", guild_ids=[GUILD])
    async def ping(interaction: nextcord.Interaction, word: str = "x") -> None:
        await interaction.response.send_message(f"pong {word}")
        await interaction.followup.send("and more")

    @client.slash_command(name="slow", description="Deferred", guild_ids=[GUILD])
    async def slow(interaction: nextcord.Interaction) -> None:
        await interaction.response.defer()
        await interaction.edit_original_message(content="done thinking")

    await connect_client(client)
    await fake_discord.wait_for_request("POST", f"/applications/*/guilds/{GUILD}/commands", count=2)
    options = [{"name": "word", "type": 3, "value": "hi"}]
    interaction = await fake_discord.invoke_command(GENERAL, ALICE, "ping", options)

    response = await fake_discord.wait_for_interaction_response(interaction)
    assert response["type"] == 4 and response["data"]["content"] == "pong hi"
    await fake_discord.wait_for_request("POST", "/webhooks/*")
    contents = [m["content"] for m in fake_discord.bot_messages(GENERAL)]
    assert contents[-2:] == ["pong hi", "and more"]
    assert interaction.original_message_id is not None

    deferred = await fake_discord.invoke_command(GENERAL, BOB, "slow")
    assert (await fake_discord.wait_for_interaction_response(deferred))["type"] == 5
    await fake_discord.wait_for_request("PATCH", "/webhooks/*/messages/@original")
    original = fake_discord.message(GENERAL, deferred.original_message_id)
    assert original["content"] == "done thinking" and original["flags"] == 0
    assert original["interaction"]["name"] == "slow"


async def test_bulk_overwrite_keeps_ids_of_surviving_commands(fake_discord):
    await fake_discord.load_log(GENERAL_LOG)
    app = fake_discord.application_id
    headers = {"Authorization": f"Bot {fake_discord.token}"}
    global_url = f"{fake_discord.api_base}/applications/{app}/commands"
    guild_url = f"{fake_discord.api_base}/applications/{app}/guilds/{GUILD}/commands"
    commands = [{"name": "ask", "description": "Ask"}, {"name": "why", "description": "Why"}]
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.put(global_url, json=commands) as response:
            first = {c["name"]: c["id"] for c in await response.json()}
        async with session.put(global_url, json=commands[:1]) as response:
            second = {c["name"]: c["id"] for c in await response.json()}
        async with session.get(global_url) as response:
            listed = [c["name"] for c in await response.json()]
        async with session.put(guild_url, json=commands[1:]) as response:
            assert (await response.json())[0]["guild_id"] == str(GUILD)
        async with session.get(f"{fake_discord.api_base}/applications/1/commands") as response:
            assert response.status == 403  # not this application
    assert second == {"ask": first["ask"]} and listed == ["ask"]
    assert fake_discord.state.find_command("why", str(GUILD))["guild_id"] == str(GUILD)
