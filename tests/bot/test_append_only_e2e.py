"""A follow-up's request starts with the previous request and the bot's answer, byte for byte,
with other talk in the channel between them (real nextcord client, fake Discord, fake OpenAI and
Anthropic servers)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from bot.answering.recording import InteractionRecorder
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from tests.bot.test_anthropic_e2e import claude_bot
from tests.bot.test_prompt_cache_e2e import conversation_with_lunch_between
from tests.bot.test_read_history import deny_history
from tests.fakes.harness import (
    BOT_ID,
    CHANNEL,
    CHLOE,
    ELI,
    EXAMPLE,
    Harness,
    make_config,
    running_bot,
    settled,
)


async def test_a_follow_up_request_starts_with_the_previous_request_and_answer():
    async with running_bot() as bot:
        await conversation_with_lunch_between(bot)
        _first, second, third = bot.model.chat_requests
        answers = [m["content"] for m in bot.discord.bot_messages(CHANNEL)]
    start = len(second.messages)
    assert json.dumps(third.messages[:start]) == json.dumps(second.messages)
    assert third.messages[start]["role"] == "assistant"
    assert third.messages[start]["content"] == answers[-2]  # the answer to the second
    # The lunch talk since is after the answer, the follow-up last.
    later = [m["content"] for m in third.messages[start + 1 :]]
    assert any("book a table" in c for c in later)
    assert "analyze step" in later[-1]


def _blocks(body: dict) -> list[tuple[str, dict]]:
    """Each content block with its turn's role, the cache marks taken off."""
    return [
        (turn["role"], {k: v for k, v in block.items() if k != "cache_control"})
        for turn in body["messages"]
        for block in turn["content"]
    ]


async def test_claude_reads_the_previous_request_and_answer_then_what_is_new():
    async with claude_bot() as bot:
        await conversation_with_lunch_between(bot)
        _first, second, third = bot.model.message_requests
        answers = [m["content"] for m in bot.discord.bot_messages(CHANNEL)]
    before, after = _blocks(second.body), _blocks(third.body)
    assert json.dumps(after[: len(before)]) == json.dumps(before)
    assert after[len(before)] == ("assistant", {"type": "text", "text": answers[-2]})
    # The cache breakpoint is at the end of the part sent before: the answer.
    marked = [
        i
        for i, block in enumerate(b for turn in third.body["messages"] for b in turn["content"])
        if "cache_control" in block
    ]
    assert marked == [len(before)]
    assert third.cache_read_tokens > 0


@contextlib.asynccontextmanager
async def bot_runs(store: Store, **sections: dict) -> AsyncIterator[Callable[[], Any]]:
    """One fake Discord and one fake model, and a way to run the bot on them again (a restart:
    a new client, the same store); ``sections``: config sections, as ``make_config`` takes."""
    async with (
        FakeDiscord(bot_id=BOT_ID, bot_name="threadwise", bot_nick="Threadwise") as discord,
        FakeOpenAI() as fake,
    ):
        await discord.load_log(EXAMPLE)
        config = make_config(discord, fake, **sections)

        @contextlib.asynccontextmanager
        async def run() -> AsyncIterator[Harness]:
            async with ModelClient(config.model) as model:
                client = ThreadwiseClient(
                    config, articles=None, model=model,
                    recorder=InteractionRecorder(store), store=store,
                )  # fmt: skip
                with discord.nextcord_pointed_here():
                    async with discord.running(client) as ready:
                        yield Harness(discord=discord, model=fake, client=ready)

        yield run


async def hard_links_asked(bot: Harness) -> dict:
    """Chloé asks the bot about the upgrade; its answer, once nothing is in progress."""
    answer = await bot.answer_to(
        CHANNEL, CHLOE, f"<@{BOT_ID}> can I use the hard-link mode for 800 GB?"
    )
    await settled(bot)
    return answer


async def test_after_a_restart_the_follow_up_starts_with_the_stored_request(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with bot_runs(store) as run:
            async with run() as bot:
                answer = await hard_links_asked(bot)
                said = bot.discord.message(CHANNEL, answer["id"])["content"]  # streamed: whole
                await bot.discord.user_says(CHANNEL, ELI, "lunch at the noodle place?")
            async with run() as bot:  # restarted: nothing in memory, the store remembers
                await bot.answer_to(
                    CHANNEL, CHLOE, "and if the upgrade fails halfway, what then?",
                    reply_to=int(answer["id"]), mention_author=False,
                )  # fmt: skip
                await settled(bot)
                first, second = bot.model.chat_requests
        latest, earlier = store.recent_interactions()[:2]
        explained = store.explain(earlier.trigger_message_id).work_log
        continued = store.explain(latest.trigger_message_id).work_log
    start = len(first.messages)
    assert json.dumps(second.messages[:start]) == json.dumps(first.messages)
    assert second.messages[start] == {"role": "assistant", "content": said}
    assert "fails halfway" in second.messages[-1]["content"]
    # explain says which request the follow-up's starts with; the first's starts with none.
    assert [e.detail for e in continued if e.action == "prompt_continued"] == [
        f"starts with the request for message {earlier.trigger_message_id} and its answer "
        f"({start + 1} messages sent again unchanged)"
    ]
    assert not [e for e in explained if e.action == "prompt_continued"]


async def test_a_member_who_may_not_read_history_gets_no_earlier_request():
    """Eli's first question was answered from the whole channel (Chloé's line among the other
    recent talk); once he may not read its history, his follow-up must not start with that
    request, which holds what he may no longer read."""
    async with running_bot(context={"min_linear": 4}) as bot:
        await bot.discord.user_says(CHANNEL, CHLOE, "the staging database is down again")
        answer = await bot.answer_to(CHANNEL, ELI, f"<@{BOT_ID}> is the ramen place open today?")
        await settled(bot)
        assert "staging database" in str(bot.model.chat_requests[-1].messages)  # read then
        await deny_history(bot, ELI)
        await bot.answer_to(CHANNEL, ELI, f"<@{BOT_ID}> and tomorrow?", reply_to=int(answer["id"]))
        await settled(bot)
        sent = bot.model.chat_requests[-1].messages
    assert "staging database" not in str(sent)
    assert "tomorrow" in sent[-1]["content"]


async def test_after_a_restart_a_conversation_answered_twice_keeps_its_whole_prefix(tmp_path):
    """The stored request holds the trigger it continues too, and the bot's answers were
    streamed in edits: neither may cut the request read back short."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with bot_runs(store) as run:
            async with run() as bot:
                answer = await hard_links_asked(bot)
                again = await bot.answer_to(
                    CHANNEL, CHLOE, "and if it fails?", reply_to=int(answer["id"]),
                    mention_author=False,
                )  # fmt: skip
                await settled(bot)
                second = bot.model.chat_requests[-1].messages
            async with run() as bot:
                await bot.answer_to(
                    CHANNEL, CHLOE, "and then?", reply_to=int(again["id"]), mention_author=False
                )
                await settled(bot)
                third = bot.model.chat_requests[-1].messages
    assert json.dumps(third[: len(second)]) == json.dumps(second)
    assert third[len(second)]["role"] == "assistant" and "and then?" in third[-1]["content"]
