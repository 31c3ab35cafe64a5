"""Following after a restart, end to end: the bot's recent answers come from the store at start
(real nextcord client, fake Discord, fake model, a real SQLite store), so a follow-up right after
a restart is followed as it was before it."""

from __future__ import annotations

from bot.storage import Store, render_text
from tests.bot.test_follow_e2e import answered, follow_up, talk_to_bot
from tests.fakes.harness import CHANNEL, running_bot


async def test_a_follow_up_right_after_a_restart_is_followed(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            await talk_to_bot(bot)
        async with running_bot(store=store) as bot:  # a new process, the same store
            said = await follow_up(bot)
            assert await answered(bot, said)
        explanation = await store.explain_async(int(said["id"]))
    assert "followed: no mention, continues the conversation with" in render_text(explanation)


async def test_without_a_store_a_restart_forgets_whom_it_talked_with():
    """The same follow-up is left alone by a bot with nothing to remember from."""
    async with running_bot() as bot:
        await talk_to_bot(bot)
    async with running_bot() as bot:
        assert not await answered(bot, await follow_up(bot))


async def test_after_a_restart_a_channel_table_s_follow_minutes_holds(tmp_path):
    """The channel's ``[[channels]]`` table follows for 30 minutes, the top level for under a
    second: a follow-up a second after the answer, across a restart, is followed (the table's
    window), as it is without the restart."""
    import asyncio

    tables = {
        "triggers": {"follow_minutes": 0.01},
        "channels": [{"match": {"channel_ids": [CHANNEL]}, "triggers": {"follow_minutes": 30}}],
    }
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, **tables) as bot:
            await talk_to_bot(bot)
        await asyncio.sleep(1)  # past the top level's window
        async with running_bot(store=store, **tables) as bot:
            assert await answered(bot, await follow_up(bot))
