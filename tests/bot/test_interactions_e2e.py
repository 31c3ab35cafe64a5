"""Interactions recorded end to end: the bot, fake Discord and model, a real SQLite file."""

from __future__ import annotations

import asyncio
import json

from bot.cli.main import main
from bot.demo.discord_gateway import INTENT_GUILD_MESSAGES
from bot.storage import Store
from tests.fakes.harness import (
    ALICE,
    BEN,
    BOT_ID,
    CHANNEL,
    CHLOE,
    DEV,
    DM_CHANNEL,
    ROOT,
    running_bot,
    settled,
)


async def ask(bot, author: int, text: str, **kwargs) -> dict:
    reply = await bot.answer_to(CHANNEL, author, f"<@{BOT_ID}> {text}", **kwargs)
    await settled(bot)
    return bot.discord.message(CHANNEL, int(reply["id"]))  # as it stands after streaming


async def test_answer_is_recorded_and_exported_exactly_as_sent(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            reply = await ask(bot, CHLOE, "how long does the link mode take?")
            sent = bot.model.chat_requests[-1].body["messages"]
        lines = list(store.export())
        explanation = await store.explain_async(int(reply["id"]))
    assert len(lines) == 1
    assert lines[0]["messages"][:-1] == sent  # byte for byte what the fake model received
    assert lines[0]["messages"][-1] == {"role": "assistant", "content": reply["content"]}
    reasons = [entry.reasons for entry in explanation.context if entry.reasons]
    assert ["trigger"] in reasons and any(r != ["trigger"] for r in reasons)


async def test_edit_after_the_answer_keeps_the_record_and_feeds_the_next(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            first = await bot.discord.user_says(CHANNEL, BEN, "the deploy window is at 14:00")
            await ask(bot, BEN, "when is the deploy window?")
            before = json.dumps(list(store.export()))
            await bot.discord.edit_message(
                CHANNEL, int(first["id"]), "the deploy window is at 16:00"
            )
            for _ in range(50):
                if len(store.message_versions(int(first["id"]))) >= 2:
                    break
                await asyncio.sleep(0.05)
            await ask(bot, BEN, "sorry, when again?")
            latest = bot.model.chat_requests[-1].body["messages"]
        exported = list(store.export())
        versions = store.message_versions(int(first["id"]))
    assert exported[0] == json.loads(before)[0]  # the old interaction is exactly as it was
    assert "14:00" in json.dumps(exported[0]) and "16:00" not in json.dumps(exported[0])
    assert any("16:00" in str(m["content"]) for m in latest)
    assert not any("deploy window is at 14:00" in str(m["content"]) for m in latest)
    assert [v.state for v in versions][-1] == "active" and versions[0].state == "superseded"


async def test_context_command_lists_the_reasons(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            # A reply: the bundled log is months old, and only references cross that silence.
            guide = bot.example_ids()["Yes, last month. This gu"]
            await ask(bot, CHLOE, "how long does the link mode take?", reply_to=guide)
            record = await bot.discord.invoke_command(CHANNEL, CHLOE, "context")
            body = await bot.discord.wait_for_interaction_response(record, timeout=10)
    data = body["data"]
    assert data["flags"] & 64  # ephemeral: only the asker sees it
    text = data["content"]
    assert len(text) <= 2000
    assert "reference via" in text or "mention via" in text
    assert "(score " in text  # the learned score and what raised it
    assert "trigger" in text


async def test_forget_user_leaves_no_trace_in_the_file(tmp_path, capsys):
    path = tmp_path / "store.sqlite3"
    secret = "my-very-private-passphrase-42"
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            await ask(bot, CHLOE, f"remember {secret} for me")
        assert secret in json.dumps(list(store.export()))
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{path}"\n')
    # The CLI runs its own event loop, as from a shell.
    assert await asyncio.to_thread(main, ["forget-user", str(CHLOE), "--config", str(config)]) == 0
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))
    assert secret.encode() not in raw
    assert await asyncio.to_thread(main, ["export", "--config", str(config)]) == 0
    assert secret not in capsys.readouterr().out


async def test_bulk_delete_invalidates_like_a_single_delete(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            single = int((await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> one"))["id"])
            await settled(bot)
            bulk = int((await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> two"))["id"])
            await bot.discord.wait_for_bot_message(CHANNEL, after=bulk, timeout=10)
            await settled(bot)
            await bot.discord.delete_message(CHANNEL, single)
            guild_id = bot.discord.message(CHANNEL, bulk)["guild_id"]
            bot.discord.state.delete_message(CHANNEL, bulk)
            await bot.discord.gateway.dispatch(
                "MESSAGE_DELETE_BULK",
                {"ids": [str(bulk)], "channel_id": str(CHANNEL), "guild_id": guild_id},
                intent=INTENT_GUILD_MESSAGES,
            )
            for _ in range(50):
                if store.message_versions(bulk)[-1].state == "invalidated":
                    break
                await asyncio.sleep(0.05)
            assert bot.client.caches.get(CHANNEL).is_deleted(bulk)
        assert [v.state for v in store.message_versions(single)] == ["invalidated"]
        assert [v.state for v in store.message_versions(bulk)] == ["invalidated"]


async def test_an_edit_in_a_dm_reaches_the_cache_and_the_store(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
            said = await bot.discord.user_says(DM_CHANNEL, ALICE, "the port is 5432?")
            await bot.discord.wait_for_bot_message(DM_CHANNEL, after=int(said["id"]), timeout=10)
            await settled(bot)
            trigger = int(said["id"])
            await bot.discord.edit_message(DM_CHANNEL, trigger, "the port is 6543?")
            for _ in range(50):
                if len(store.message_versions(trigger)) > 1:
                    break
                await asyncio.sleep(0.05)
            cached = bot.client.caches.get(DM_CHANNEL).get(trigger)
        states = [v.state for v in store.message_versions(trigger)]
    assert cached.content == "the port is 6543?"
    assert states == ["superseded", "active"]


async def test_forget_user_removes_their_name_from_everyone_elses_messages(tmp_path):
    path = tmp_path / "store.sqlite3"
    chloe_asked = 1350098139217920000  # Chloé's question in the example log
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            await ask(bot, BEN, f"what do you think, <@{CHLOE}>?", reply_to=chloe_asked)
            await ask(bot, BEN, "and anyone else?")
            sent = json.dumps(bot.model.chat_requests[-1].body["messages"], ensure_ascii=False)
        exported = json.dumps(list(store.export()), ensure_ascii=False)
    # Her name was in Ben's reply header, in his mention, and in the bot's answer quoting him.
    assert "(replying to Chloé)" in sent and "@Chloé" in sent
    assert "Chloé" in exported
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{path}"\n')
    assert await asyncio.to_thread(main, ["forget-user", str(CHLOE), "--config", str(config)]) == 0
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))
    assert "Chloé".encode() not in raw
    with Store.open(path) as store:
        after = json.dumps(list(store.export()), ensure_ascii=False)
    assert "and anyone else?" in after and "Chloé" not in after


async def test_forget_user_reaches_every_name_they_go_by_in_free_text(tmp_path, capsys):
    """Her nickname is shown, but members type her username too, and in any case; the bot's
    answer repeats what it was asked."""
    path = tmp_path / "store.sqlite3"
    mireille = 1300000000000000199
    with Store.open(path) as store:
        async with running_bot(store=store) as bot:
            bot.discord.add_user(mireille, "zoltan_k", nick="Mireillé")
            await bot.discord.user_says(
                CHANNEL, mireille, "Ben, I think the hard link mode is fine"
            )
            await ask(bot, BEN, "Mireillé says hard links are fine, do you agree with ZOLTAN_K?")
            await ask(bot, DEV, "and what about mireille's other idea?")
        exported = json.dumps(list(store.export()), ensure_ascii=False)
    assert "Mireillé" in exported and "ZOLTAN_K" in exported
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{path}"\n')
    assert (
        await asyncio.to_thread(main, ["forget-user", str(mireille), "--config", str(config)]) == 0
    )
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite3*"))
    for needle in ("mireill", "zoltan"):
        assert needle.encode() not in raw.lower()
    assert await asyncio.to_thread(main, ["export", "--config", str(config)]) == 0
    after = capsys.readouterr().out
    assert "hard links are fine" in after
    for needle in ("mireill", "zoltan"):
        assert needle not in after.lower()
