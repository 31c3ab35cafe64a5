"""What the bot's answers can carry in the stand-in Discord, through the real nextcord client (2.6
and 3.x): attached files (stored, typed and served back), slash commands answered after a
deferral with several ephemeral follow-ups, and jump links to messages."""

from __future__ import annotations

import io

import aiohttp
import nextcord
import pytest

from bot.demo.discord_permissions import ATTACH_FILES
from bot.demo.discord_server import make_nextcord_client
from bot.demo.discord_state import MESSAGE_FLAG_EPHEMERAL, MESSAGE_FLAG_LOADING
from tests.fakes.mcp_server import png
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

# ----------------------------------------------------------------------------- attachments


async def test_files_the_bot_attaches_are_stored_typed_and_served(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    ids = log_ids(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "message", "guild_channel_update")
    await connect_client(client)
    channel = client.get_channel(GENERAL)
    image = png(3, 2)

    sent = await channel.send(
        "the chart you asked for",
        files=[
            nextcord.File(io.BytesIO(image), filename="chart.png"),
            nextcord.File(io.BytesIO(b"plain notes"), filename="my notes.txt", description="n"),
        ],
    )

    request = fake_discord.requests_to("POST", f"/channels/{GENERAL}/messages")[-1]
    assert request.files == ("chart.png", "my notes.txt")  # multipart: files[0], files[1]
    assert request.body["content"] == "the chart you asked for"
    chart, notes = sent.attachments
    assert (chart.filename, chart.content_type, chart.size) == (
        "chart.png",
        "image/png",
        len(image),
    )
    assert (chart.width, chart.height) == (3, 2)
    assert (notes.filename, notes.content_type) == ("my_notes.txt", "text/plain; charset=utf-8")
    assert notes.description == "n" and notes.width is None
    assert chart.url.startswith(fake_discord.base_url + "/attachments/")
    assert await chart.read() == image  # served back at its URL, as from Discord's CDN
    assert fake_discord.attachment_bytes(fake_discord.message(GENERAL, sent.id)["attachments"][0])
    echoed = (await recorder.wait("message"))[0]
    assert [a.filename for a in echoed.attachments] == ["chart.png", "my_notes.txt"]
    async with aiohttp.ClientSession() as session, session.get(chart.url + "x") as missing:
        assert missing.status == 404

    trigger = await channel.fetch_message(ids[6])
    reply = await trigger.reply("and a reply", file=nextcord.File(io.BytesIO(image), "r.png"))
    assert reply.reference.message_id == ids[6] and reply.attachments[0].filename == "r.png"

    # An edit keeps the attachments it lists and adds its files, as on Discord.
    edited = await sent.edit(
        content="updated", attachments=[chart], file=nextcord.File(io.BytesIO(b"v2"), "v2.txt")
    )
    assert [a.filename for a in edited.attachments] == ["chart.png", "v2.txt"]
    assert edited.attachments[0].id == chart.id

    await fake_discord.set_bot_overwrite(GENERAL, deny=ATTACH_FILES)
    await recorder.wait("guild_channel_update")
    with pytest.raises(nextcord.Forbidden) as refused:
        await channel.send("no files here", file=nextcord.File(io.BytesIO(image), "c.png"))
    assert refused.value.code == 50013
    await channel.send("text is still fine")


# ----------------------------------------------------------------------------- interactions


async def test_a_deferred_command_answers_with_several_ephemeral_follow_ups(
    fake_discord, connect_client
):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()
    too_long: list[int] = []

    @client.slash_command(name="catchup", description="What did I miss?", guild_ids=[GUILD])
    async def catchup(interaction: nextcord.Interaction, span: str = "1h") -> None:
        await interaction.response.defer(ephemeral=True)
        try:
            await interaction.followup.send("x" * 2001, ephemeral=True)
        except nextcord.HTTPException as error:
            too_long.append(error.code)
        await interaction.followup.send(f"over {span}: " + "a" * 1900, ephemeral=True)
        await interaction.followup.send("b" * 2000, ephemeral=True)
        image = nextcord.File(io.BytesIO(png(4, 4)), filename="map.png")
        await interaction.followup.send("c", file=image, ephemeral=True)

    await connect_client(client)
    await fake_discord.wait_for_request("POST", f"/applications/*/guilds/{GUILD}/commands")
    before = fake_discord.bot_messages(GENERAL)
    record = await fake_discord.invoke_command(
        GENERAL, ALICE, "catchup", [{"name": "span", "type": 3, "value": "2h"}]
    )

    callback = await fake_discord.wait_for_interaction_response(record)
    assert callback == {"type": 5, "data": {"flags": MESSAGE_FLAG_EPHEMERAL}}
    answers = await fake_discord.wait_for_interaction_messages(record, 3)
    assert too_long == [50035]
    # The first follow-up resolved the deferral (the same message); the others are new.
    assert answers[0]["id"] == record.original_message_id
    assert [m["content"][:10] for m in answers] == ["over 2h: a", "b" * 10, "c"]
    assert all(m["flags"] == MESSAGE_FLAG_EPHEMERAL for m in answers)
    attachment = answers[2]["attachments"][0]
    assert attachment["content_type"] == "image/png" and attachment["ephemeral"] is True
    assert fake_discord.bot_messages(GENERAL) == before  # nothing reached the channel


async def test_a_follow_up_to_a_public_deferral_is_public_then_ephemeral(
    fake_discord, connect_client
):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()
    recorder = EventRecorder(client, "raw_message_edit")

    @client.slash_command(name="slow", description="Deferred", guild_ids=[GUILD])
    async def slow(interaction: nextcord.Interaction) -> None:
        await interaction.response.defer()
        # As on Discord: the deferral was public, so its answer is, whatever the flag says.
        await interaction.followup.send("done", ephemeral=True)
        await interaction.followup.send("only for you", ephemeral=True)

    await connect_client(client)
    await fake_discord.wait_for_request("POST", f"/applications/*/guilds/{GUILD}/commands")
    record = await fake_discord.invoke_command(GENERAL, BOB, "slow")

    first, second = await fake_discord.wait_for_interaction_messages(record, 2)
    assert first["id"] == record.original_message_id and first["content"] == "done"
    assert not first["flags"] & (MESSAGE_FLAG_EPHEMERAL | MESSAGE_FLAG_LOADING)
    assert fake_discord.message(GENERAL, first["id"])["content"] == "done"
    edit = (await recorder.wait("raw_message_edit"))[0]  # the loading message was updated
    assert edit.message_id == int(first["id"])
    assert second["flags"] == MESSAGE_FLAG_EPHEMERAL and second["content"] == "only for you"


async def test_an_immediate_ephemeral_response_carries_its_file(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    client = make_nextcord_client()

    @client.slash_command(name="draw", description="Draws", guild_ids=[GUILD])
    async def draw(interaction: nextcord.Interaction) -> None:
        image = nextcord.File(io.BytesIO(png(5, 1)), filename="line.png")
        await interaction.response.send_message("drawn", file=image, ephemeral=True)

    await connect_client(client)
    await fake_discord.wait_for_request("POST", f"/applications/*/guilds/{GUILD}/commands")
    record = await fake_discord.invoke_command(GENERAL, ALICE, "draw")

    (answer,) = await fake_discord.wait_for_interaction_messages(record)
    callback = fake_discord.requests_to("POST", "/interactions/*/callback")[-1]
    assert callback.files == ("line.png",)  # multipart: payload_json and files[0]
    assert answer["content"] == "drawn" and answer["flags"] == MESSAGE_FLAG_EPHEMERAL
    attachment = answer["attachments"][0]
    assert (attachment["width"], attachment["height"]) == (5, 1)
    assert fake_discord.attachment_bytes(attachment) == png(5, 1)


# ----------------------------------------------------------------------------- jump links


async def test_jump_urls_of_guild_thread_and_dm_messages(fake_discord, connect_client):
    await fake_discord.load_log(GENERAL_LOG)
    await fake_discord.load_log(DM_LOG)
    ids = log_ids(GENERAL_LOG)
    client = await connect_client()
    channel = client.get_channel(GENERAL)

    message = await channel.fetch_message(ids[3])
    assert message.jump_url == f"https://discord.com/channels/{GUILD}/{GENERAL}/{ids[3]}"
    sent = await channel.send("a link to me")
    assert sent.jump_url == f"https://discord.com/channels/{GUILD}/{GENERAL}/{sent.id}"
    thread = await message.create_thread(name="side")
    in_thread = await thread.send("in the thread")
    assert in_thread.jump_url == f"https://discord.com/channels/{GUILD}/{thread.id}/{in_thread.id}"
    dm = await client.fetch_channel(DM)
    first = await anext(dm.history(limit=1))
    assert first.jump_url == f"https://discord.com/channels/@me/{DM}/{first.id}"
