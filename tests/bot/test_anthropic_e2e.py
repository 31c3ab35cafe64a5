"""The bot end to end on ``provider = "anthropic"``: nextcord, fake Discord, fake Messages API."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

from bot.answering.recording import InteractionRecorder
from bot.config.schema import Config
from bot.demo.discord_server import FakeDiscord
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from conversation.graph.message_graph import MessageGraph
from tests.fakes.anthropic_server import Fail, FakeAnthropic, Overloaded
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, EXAMPLE, Harness, settled

PERSONA = "You are {bot_name}, answering in #{channel}."  # no {now}: the same prefix every minute


@contextlib.asynccontextmanager
async def claude_bot(store: Any = None, **model: Any) -> AsyncIterator[Harness]:
    async with (
        FakeDiscord(bot_id=BOT_ID, bot_name="threadwise", bot_nick="Threadwise") as discord,
        FakeAnthropic() as fake,
    ):
        await discord.load_log(EXAMPLE)
        config = Config.model_validate(
            {
                "discord": {
                    "token": discord.token,
                    "api_base": discord.api_base,
                    "guild_ready_timeout": 0.1,
                },
                "model": {
                    "provider": "anthropic",
                    "base_url": fake.url,
                    "name": "claude-test",
                    "system_prompt": PERSONA,
                    "retry_base_seconds": 0.01,
                    "idle_timeout_seconds": 5,
                    "timeout_seconds": 20,
                }
                | model,
                "articles": {"enabled": False},
                "triggers": {"burst_window_seconds": 0.05},
                "replies": {"edit_interval_seconds": 0.2},
            }
        )
        async with ModelClient(config.model) as model_client:
            recorder = InteractionRecorder(store) if store is not None else None
            client = ThreadwiseClient(
                config, articles=None, model=model_client, recorder=recorder, store=store
            )
            with discord.nextcord_pointed_here():
                async with discord.running(client) as ready:
                    yield Harness(discord=discord, model=fake, client=ready)  # type: ignore[arg-type]
        assert not discord.server_errors, discord.server_errors


def without_breakpoints(turns: list[dict]) -> list[dict]:
    return [
        {**turn, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                             for b in turn["content"]]}
        for turn in turns
    ]  # fmt: skip


async def test_answers_through_the_messages_api_and_records_what_it_was_built_from(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with claude_bot(store=store) as bot:
            # A reply to the bot's old turn: the log is months old, only references cross that.
            reply = await bot.answer_to(
                CHANNEL,
                CHLOE,
                f"<@{BOT_ID}> how long does the link mode take?",
                reply_to=bot.example_ids()["The usual route is a dum"],
            )
            await settled(bot)
            second = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> and the copy mode?")
            await settled(bot)
            first_request, second_request = bot.model.message_requests
            shown = bot.discord.message(CHANNEL, int(reply["id"]))["content"]
        exported = list(store.export())
    body = first_request.body
    assert shown == "echo: " + body["messages"][-1]["content"][-1]["text"]
    assert second["content"].startswith("echo: ")
    # {bot_name}: the bot's nickname in the log's server (its username is threadwise).
    assert body["system"][0]["text"] == "You are Threadwise, answering in #ops-help."
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    roles = [turn["role"] for turn in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))  # merged, alternating
    assert roles[-1] == "user" and "assistant" in roles
    # The second breakpoint ends the conversation, before the message answered (see below).
    marked = [b for turn in body["messages"] for b in turn["content"] if "cache_control" in b]
    assert len(marked) == 1 and "cache_control" not in body["messages"][-1]["content"][-1]
    # The second answer in the channel read at least the system prompt from the prompt cache.
    assert second_request.cache_read_tokens >= len(PERSONA.split())
    # The store and export keep the OpenAI-format messages the request was translated from.
    first_record = exported[0]["messages"][:-1]
    assert first_record[0] == {"role": "system", "content": body["system"][0]["text"]}
    unnamed = [{k: v for k, v in m.items() if k != "name"} for m in first_record]
    system, turns = MessageGraph.from_openai(unnamed).to_anthropic()
    assert system == body["system"][0]["text"]
    assert turns == without_breakpoints(body["messages"])
    assert exported[0]["messages"][-1] == {"role": "assistant", "content": shown}


async def test_overloaded_claude_gets_one_short_line_then_recovers():
    async with claude_bot(max_retries=1) as bot:
        bot.model.queue(Overloaded(), Overloaded())
        reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> are you there?")
        assert reply["content"] == "*The model is overloaded right now, try again in a minute.*"
        await settled(bot)
        reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> and now?")
        assert reply["content"].startswith("echo:")
        assert len(bot.model.message_requests) == 3


async def test_prompt_too_long_for_claude_is_rebuilt_smaller_and_answered():
    async with claude_bot(context_tokens=200000) as bot:
        bot.model.queue(Fail(400, "prompt is too long: 1500 tokens > 600 maximum"))
        reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> summarise the thread please")
        await settled(bot)
        refused, accepted = bot.model.message_requests
    assert reply["content"].startswith("echo:")
    assert len(json.dumps(accepted.body["messages"])) < len(json.dumps(refused.body["messages"]))
