"""Threads in the stand-in Discord, through the real nextcord client (2.6 and 3.x): a thread
started from a message carries Discord's events and first message, posting in a thread joins the
poster and unarchives it, and Create Public Threads is needed as on Discord."""

from __future__ import annotations

import nextcord
import pytest

from bot.demo.discord_permissions import CREATE_PUBLIC_THREADS, SEND_MESSAGES_IN_THREADS
from bot.demo.discord_server import make_nextcord_client
from tests.test_fake_discord import ALICE, BOB, GENERAL, GENERAL_LOG, GUILD, EventRecorder, log_ids


async def test_the_bot_starts_a_thread_from_a_message_as_on_discord(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = make_nextcord_client(members=True)
    recorder = EventRecorder(
        client, "thread_create", "thread_join", "raw_message_edit", "message", "thread_member_join"
    )
    await connect_client(client)
    channel = client.get_channel(GENERAL)
    source = await channel.fetch_message(ids[6])

    thread = await source.create_thread(name="tokenizer talk", auto_archive_duration=60)

    request = fake_discord.requests_to("POST", f"/channels/{GENERAL}/messages/*/threads")[-1]
    assert request.path == f"/channels/{GENERAL}/messages/{ids[6]}/threads"
    assert request.body == {"name": "tokenizer talk", "auto_archive_duration": 60}
    assert request.status == 201
    assert thread.id == ids[6]  # a thread takes the id of the message it starts from
    assert (thread.parent_id, thread.owner_id) == (GENERAL, fake_discord.bot_id)
    assert thread.type is nextcord.ChannelType.public_thread
    assert thread.auto_archive_duration == 60 and not thread.archived
    created = (await recorder.wait("thread_create"))[0]  # THREAD_CREATE, newly_created
    assert created.id == thread.id and created.name == "tokenizer talk"
    await recorder.wait("thread_join", 2)  # THREAD_CREATE, then the bot's THREAD_MEMBERS_UPDATE
    cached = client.get_guild(GUILD).get_thread(thread.id)
    assert cached is not None and cached.me is not None and cached.me.id == fake_discord.bot_id
    assert fake_discord.thread_members(thread.id) == [fake_discord.bot_id]

    edit = (await recorder.wait("raw_message_edit"))[0]  # the message now has its thread
    assert edit.message_id == ids[6] and edit.data["thread"]["id"] == str(thread.id)
    refetched = await channel.fetch_message(ids[6])
    assert refetched.flags.has_thread and refetched.thread.id == thread.id

    # The thread's first message: a Thread Starter Message pointing at the source.
    starter = (await recorder.wait("message"))[0]
    assert starter.channel.id == thread.id
    assert starter.type is nextcord.MessageType.thread_starter_message
    assert starter.content == "" and starter.author.id == fake_discord.bot_id
    assert starter.reference.message_id == ids[6] and starter.reference.channel_id == GENERAL
    history = [m async for m in cached.history(limit=10)]
    assert [m.id for m in history] == [starter.id]
    assert history[0].reference.resolved.content == source.content

    sent = await cached.send("let us continue here")
    echoed = (await recorder.wait("message", 2))[1]
    assert echoed.id == sent.id and echoed.channel.id == thread.id
    assert [m.id async for m in cached.history(limit=10)] == [sent.id, starter.id]
    fetched = await client.fetch_channel(thread.id)
    assert fetched.message_count == 1  # the starter message is not counted, as on Discord
    assert fetched.me is not None  # the bot joined: GET serves its thread member

    await fake_discord.user_says(thread.id, ALICE, "joining in")
    joined = (await recorder.wait("thread_member_join"))[0]  # members intent: others' joins
    assert joined.id == ALICE and joined.thread_id == thread.id
    assert fake_discord.thread_members(thread.id) == [fake_discord.bot_id, ALICE]
    listed = await cached.fetch_members()  # GET …/thread-members: the members privilege
    assert [member.id for member in listed] == [fake_discord.bot_id, ALICE]

    later = await connect_client()  # a client connecting now learns it from GUILD_CREATE
    known = later.get_guild(GUILD).get_thread(thread.id)
    assert known.me is not None and known.message_count == 2

    with pytest.raises(nextcord.HTTPException) as again:
        await source.create_thread(name="twice")
    assert again.value.code == 160004
    with pytest.raises(nextcord.HTTPException) as too_long:
        await (await channel.fetch_message(ids[7])).create_thread(name="x" * 101)
    assert too_long.value.code == 50035


async def test_without_create_public_threads_the_bot_is_refused(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "guild_channel_update", "thread_join")
    await connect_client(client)
    channel = client.get_channel(GENERAL)
    me = client.get_guild(GUILD).me
    assert channel.permissions_for(me).create_public_threads
    assert fake_discord.bot_permissions_in(GENERAL) & CREATE_PUBLIC_THREADS

    await fake_discord.set_bot_overwrite(GENERAL, deny=CREATE_PUBLIC_THREADS)
    await recorder.wait("guild_channel_update")  # the client's cache knows, as on Discord
    assert not channel.permissions_for(me).create_public_threads
    source = await channel.fetch_message(ids[6])
    with pytest.raises(nextcord.Forbidden) as refused:
        await source.create_thread(name="not allowed")
    assert refused.value.code == 50013 and refused.value.text == "Missing Permissions"
    assert fake_discord.state.channels.get(str(ids[6])) is None

    # A member may still start one; the bot may post in it while it may send in threads.
    thread = await fake_discord.user_starts_thread(GENERAL, ids[6], BOB, "bob's thread")
    await recorder.wait("thread_join")
    cached = client.get_channel(int(thread["id"]))
    assert cached.owner_id == BOB and cached.me is None
    await cached.send("the bot may still answer here")  # posting joins the bot
    await recorder.wait("thread_join", 2)  # the bot's THREAD_MEMBERS_UPDATE
    assert cached.me is not None
    assert fake_discord.thread_members(thread["id"]) == [BOB, fake_discord.bot_id]
    other = await fake_discord.user_starts_thread(GENERAL, ids[8], BOB, "another")
    await recorder.wait("thread_join", 3)
    await client.get_channel(int(other["id"])).join()  # PUT …/thread-members/@me
    assert fake_discord.thread_members(other["id"]) == [BOB, fake_discord.bot_id]
    await fake_discord.set_bot_overwrite(GENERAL, deny=SEND_MESSAGES_IN_THREADS)
    with pytest.raises(nextcord.Forbidden):
        await cached.send("but not now")

    await fake_discord.set_bot_overwrite(GENERAL)  # the overwrite removed: allowed again
    await recorder.wait("guild_channel_update", 3)
    assert channel.permissions_for(me).create_public_threads
    await (await channel.fetch_message(ids[7])).create_thread(name="allowed")


async def test_a_post_unarchives_an_archived_thread(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    thread_id = 600000000000000001
    await fake_discord.add_thread(thread_id, GENERAL, "old plans", archived=True, members=[BOB])
    client = make_nextcord_client()
    recorder = EventRecorder(client, "thread_join")
    await connect_client(client)
    assert client.get_channel(thread_id) is None  # archived: not in the cache

    archived = await client.fetch_channel(thread_id)
    assert archived.archived
    await archived.send("reviving this")
    revived = (await recorder.wait("thread_join"))[0]  # THREAD_UPDATE of an unknown thread
    assert revived.id == thread_id and not revived.archived
    assert not fake_discord.state.channels[str(thread_id)]["thread_metadata"]["archived"]
