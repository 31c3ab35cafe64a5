"""Reactions in the stand-in Discord, through the real nextcord client (2.6 and 3.x): the bot's and
members' reactions come and go with Discord's events, counts and permission rules, and a test
can read every change in order."""

from __future__ import annotations

import nextcord
import pytest

from bot.demo.discord_permissions import (
    ADD_REACTIONS,
    DEFAULT_BOT_PERMISSIONS,
    READ_MESSAGE_HISTORY,
    channel_permissions,
)
from bot.demo.discord_server import FakeDiscord, make_nextcord_client
from tests.test_fake_discord import (
    ALICE,
    BOB,
    DM,
    DM_LOG,
    GENERAL,
    GENERAL_LOG,
    GUILD,
    EventRecorder,
    log_ids,
)

EYES, WRENCH = "\N{EYES}", "\N{WRENCH}"


async def test_reactions_come_and_go(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(
        client, "message", "raw_reaction_add", "raw_reaction_remove", "reaction_add"
    )
    await connect_client(client)
    bot = fake_discord.bot_id
    said = await fake_discord.user_says(GENERAL, ALICE, f"<@{bot}> slow question")
    trigger = (await recorder.wait("message"))[0]

    await trigger.add_reaction(EYES)
    added = (await recorder.wait("raw_reaction_add"))[0]
    assert (added.user_id, added.message_id, str(added.emoji)) == (bot, trigger.id, EYES)
    assert added.member is not None and added.member.id == bot
    reaction, user = (await recorder.wait("reaction_add"))[0]  # the cached message counts it
    assert reaction.count == 1 and reaction.me and user.id == bot
    put = fake_discord.requests_to("PUT", "/channels/*/reactions/*/@me")[-1]
    assert put.path == f"/channels/{GENERAL}/messages/{said['id']}/reactions/{EYES}/@me"
    assert fake_discord.reactions_on(trigger.id) == {EYES: [bot]}
    served = (await trigger.channel.fetch_message(trigger.id)).reactions
    assert [(str(r.emoji), r.count, r.me) for r in served] == [(EYES, 1, True)]

    await trigger.add_reaction(EYES)  # again: nothing changes, no event
    await fake_discord.user_reacts(GENERAL, trigger.id, BOB, EYES)
    await trigger.add_reaction(WRENCH)
    await recorder.wait("raw_reaction_add", 3)
    served = (await trigger.channel.fetch_message(trigger.id)).reactions
    assert [(str(r.emoji), r.count, r.me) for r in served] == [(EYES, 2, True), (WRENCH, 1, True)]
    reactors = [u.id async for u in served[0].users()]  # GET …/reactions/{emoji}
    assert sorted(reactors) == sorted([bot, BOB])

    await trigger.remove_reaction(EYES, client.user)  # DELETE …/@me
    await trigger.remove_reaction(WRENCH, client.get_guild(GUILD).me)
    removed = await recorder.wait("raw_reaction_remove", 2)
    assert [(r.user_id, str(r.emoji)) for r in removed] == [(bot, EYES), (bot, WRENCH)]
    assert fake_discord.reactions_on(trigger.id) == {EYES: [BOB]}
    served = (await trigger.channel.fetch_message(trigger.id)).reactions
    assert [(str(r.emoji), r.count, r.me) for r in served] == [(EYES, 1, False)]

    changes = await fake_discord.wait_for_reaction_changes(trigger.id, 5)
    assert [(c.user_id, c.emoji, c.added) for c in changes] == [
        (bot, EYES, True),
        (BOB, EYES, True),
        (bot, WRENCH, True),
        (bot, EYES, False),
        (bot, WRENCH, False),
    ]
    assert changes == sorted(changes, key=lambda change: change.time)
    by_bot = fake_discord.reaction_changes(trigger.id, user=bot)
    assert [(c.emoji, c.added) for c in by_bot] == [
        (EYES, True),
        (WRENCH, True),
        (EYES, False),
        (WRENCH, False),
    ]

    # Taking back a reaction one never made changes nothing; others' need Manage Messages.
    await trigger.remove_reaction(WRENCH, client.user)
    with pytest.raises(nextcord.Forbidden) as refused:
        await trigger.remove_reaction(EYES, nextcord.Object(BOB))
    assert refused.value.code == 50013
    with pytest.raises(nextcord.Forbidden):
        await trigger.clear_reactions()
    with pytest.raises(nextcord.HTTPException) as unknown:
        await trigger.add_reaction("eyes")  # a name, not an emoji
    assert unknown.value.code == 10014
    assert len(fake_discord.reaction_changes(trigger.id)) == 5


async def test_without_add_reactions_only_existing_reactions_can_be_joined(
    fake_discord, connect_client
):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message", "guild_channel_update")
    await connect_client(client)
    await fake_discord.user_says(GENERAL, ALICE, "hello")
    message = (await recorder.wait("message"))[0]

    await fake_discord.set_bot_overwrite(GENERAL, deny=ADD_REACTIONS)
    await recorder.wait("guild_channel_update")
    assert not message.channel.permissions_for(message.guild.me).add_reactions
    with pytest.raises(nextcord.Forbidden) as refused:
        await message.add_reaction(EYES)
    assert refused.value.code == 50013
    assert fake_discord.reactions_on(message.id) == {}

    # As on Discord: an emoji someone already reacted with needs only Read Message History.
    await fake_discord.user_reacts(GENERAL, message.id, ALICE, EYES)
    await message.add_reaction(EYES)
    assert fake_discord.reactions_on(message.id) == {EYES: [ALICE, fake_discord.bot_id]}
    await message.remove_reaction(EYES, client.user)  # taking one's own back needs nothing
    assert fake_discord.reactions_on(message.id) == {EYES: [ALICE]}
    await fake_discord.set_bot_overwrite(GENERAL, deny=READ_MESSAGE_HISTORY)
    await recorder.wait("guild_channel_update", 2)
    with pytest.raises(nextcord.Forbidden):
        await message.add_reaction(EYES)  # without Read Message History, not even that
    assert fake_discord.reactions_on(message.id) == {EYES: [ALICE]}


async def test_a_bot_role_without_add_reactions_cannot_react():
    async with FakeDiscord(bot_permissions=DEFAULT_BOT_PERMISSIONS & ~ADD_REACTIONS) as fake:
        await fake.load_log(GENERAL_LOG)
        ids = log_ids(GENERAL_LOG)
        with fake.nextcord_pointed_here():
            async with fake.running(make_nextcord_client()) as client:
                message = await client.get_channel(GENERAL).fetch_message(ids[0])
                assert not message.channel.permissions_for(message.guild.me).add_reactions
                with pytest.raises(nextcord.Forbidden):
                    await message.add_reaction(EYES)
        assert not fake.server_errors


async def test_reactions_in_a_dm(fake_discord, connect_client):
    await fake_discord.load_log(DM_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message", "raw_reaction_add", "raw_reaction_remove")
    await connect_client(client)
    await fake_discord.user_says(DM, ALICE, "a question in private")
    message = (await recorder.wait("message"))[0]

    await message.add_reaction(EYES)
    added = (await recorder.wait("raw_reaction_add"))[0]
    assert added.guild_id is None and added.member is None
    await fake_discord.user_unreacts(DM, message.id, ALICE, EYES)  # never reacted: nothing
    await message.remove_reaction(EYES, client.user)
    await recorder.wait("raw_reaction_remove")
    assert [(c.emoji, c.added) for c in fake_discord.reaction_changes(message.id)] == [
        (EYES, True),
        (EYES, False),
    ]


def test_channel_permissions_follow_discords_order():
    guild = "1"
    roles = {
        guild: {"permissions": str(ADD_REACTIONS | READ_MESSAGE_HISTORY | (1 << 10))},
        "2": {"permissions": "0"},
        "3": {"permissions": str(1 << 3)},  # Administrator
    }
    member = {"user": {"id": "9"}, "roles": ["2"]}
    everyone_denies = {"id": guild, "type": 0, "allow": "0", "deny": str(ADD_REACTIONS)}
    role_allows = {"id": "2", "type": 0, "allow": str(ADD_REACTIONS), "deny": "0"}
    member_denies = {"id": "9", "type": 1, "allow": "0", "deny": str(ADD_REACTIONS)}
    hidden = {"id": guild, "type": 0, "allow": "0", "deny": str(1 << 10)}

    assert channel_permissions(guild, roles, member, []) & ADD_REACTIONS
    assert not channel_permissions(guild, roles, member, [everyone_denies]) & ADD_REACTIONS
    assert channel_permissions(guild, roles, member, [everyone_denies, role_allows]) & ADD_REACTIONS
    overwrites = [everyone_denies, role_allows, member_denies]
    assert not channel_permissions(guild, roles, member, overwrites) & ADD_REACTIONS
    assert channel_permissions(guild, roles, member, [hidden]) == 0  # no View Channel: nothing
    admin = member | {"roles": ["3"]}
    assert channel_permissions(guild, roles, admin, [hidden, member_denies]) & ADD_REACTIONS
