"""``{bot_name}`` is the name members see for the bot where it answers, on nextcord 2 and 3 alike:
its server nickname, else its global display name, else its username; replay and the studio name
it by the same rule from what a log keeps."""

from __future__ import annotations

import pytest

from conversation.replay.log_source import LogSource
from tests.fakes.harness import ALICE, BOT_ID, CHANNEL, DM_CHANNEL, EXAMPLE, ROOT, running_bot

PERSONA = {"system_prompt": "You are {bot_name}."}


async def _system_prompt(bot, channel: int, author: int) -> str:
    await bot.answer_to(channel, author, f"<@{BOT_ID}> who are you?")
    return str(bot.model.chat_requests[-1].messages[0]["content"])


@pytest.mark.parametrize(
    ("nick", "global_name", "in_server", "in_dm"),
    [
        ("Wiz", "Threadwise Helper", "Wiz", "Threadwise Helper"),
        (None, "Threadwise Helper", "Threadwise Helper", "Threadwise Helper"),
        (None, None, "threadwise", "threadwise"),
    ],
    ids=["nickname", "global-name", "username"],
)
async def test_the_bot_calls_itself_what_members_see(nick, global_name, in_server, in_dm):
    names = {"bot_name": "threadwise", "bot_nick": nick, "bot_global_name": global_name}
    async with running_bot(fake_discord=names, model=PERSONA) as bot:
        assert await _system_prompt(bot, CHANNEL, 1300000000000000103) == f"You are {in_server}."
        await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
        assert await _system_prompt(bot, DM_CHANNEL, ALICE) == f"You are {in_dm}."


async def test_replay_names_the_bot_as_the_live_bot_does_in_the_same_server():
    replayed = LogSource.from_file(EXAMPLE).bot_name
    assert replayed == "Threadwise"  # the example's bot: username threadwise, nickname Threadwise
    names = {"bot_name": "threadwise", "bot_nick": replayed}
    async with running_bot(fake_discord=names, model=PERSONA) as bot:
        assert await _system_prompt(bot, CHANNEL, 1300000000000000103) == f"You are {replayed}."
