"""Per-channel settings end to end: the real client on the fake Discord, two fake model servers.

``#ops-help`` (the bundled log's channel) answers with a careful persona on the ``big`` endpoint,
the channels of one category with an off-topic persona and a cheaper model name on the default
endpoint, every other channel with the top level's; a thread follows its parent; ``/model``
switches a channel's endpoint for members with Manage Server only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from bot.config.reload import ConfigWatcher
from bot.config.schema import load_config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.serve.live_config import apply_to_client
from bot.serve.model_command import REFUSED
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, EXAMPLE, Harness, settled
from tests.fakes.zygote import fake_mcp_args

GUILD = 1300000000000000000
CATEGORY = 1300000000000000700
OFF_TOPIC = 1300000000000000701  # in CATEGORY
LOBBY = 1300000000000000702  # no category, no table: the top level
THREAD = 1300000000000000703  # under CHANNEL
MANAGE_GUILD = 1 << 5
SUPPORT = "You are the careful support engineer of {server}."
OFF_TOPIC_PERSONA = "You are the relaxed regular of #{channel}."
DEFAULT_PERSONA = "You are the default helper."


def config_text(discord: FakeDiscord, small: FakeOpenAI, big: FakeOpenAI, **extra: str) -> str:
    """The operator's file: [model] on ``small``, [models.big] on ``big``, two channel tables."""
    return f"""
[discord]
token = "{discord.token}"
api_base = "{discord.api_base}"
guild_ready_timeout = 0.1

[model]
base_url = "{small.url}"
name = "fake-model"
max_retries = 1
retry_base_seconds = 0.01
timeout_seconds = 20
system_prompt = "{DEFAULT_PERSONA}"

[models.big]
base_url = "{big.url}"
name = "big-model"
context_tokens = 16384
{extra.get("models", "")}
[articles]
enabled = false

[triggers]
burst_window_seconds = 0.05

[replies]
edit_interval_seconds = 0.2
{extra.get("metrics", "")}
[[channels]]
match = {{ channel_ids = [{CHANNEL}] }}
[channels.model]
use = "big"
system_prompt = "{SUPPORT}"
[channels.context]
max_total = 12

[[channels]]
match = {{ category_ids = [{CATEGORY}] }}
[channels.model]
name = "{extra.get("cheap_name", "cheap-model")}"
system_prompt = "{extra.get("off_topic", OFF_TOPIC_PERSONA)}"
temperature = 0.3
"""


@dataclass
class Bot(Harness):
    big: FakeOpenAI
    config_path: Path

    async def ask(self, channel: int, text: str, author: int = BEN) -> dict:
        reply = await self.answer_to(channel, author, f"<@{BOT_ID}> {text}")
        await settled(self)
        return reply


@contextlib.asynccontextmanager
async def channel_bot(tmp_path: Path, store=None, **extra: str) -> AsyncIterator[Bot]:
    async with (
        FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord,
        FakeOpenAI() as small,
        FakeOpenAI() as big,
    ):
        await discord.load_log(EXAMPLE)
        await discord.add_text_channel(OFF_TOPIC, GUILD, "off-topic", category_id=CATEGORY)
        await discord.add_text_channel(LOBBY, GUILD, "lobby")
        path = tmp_path / "config.toml"
        path.write_text(config_text(discord, small, big, **extra))
        config = load_config(path, env={})
        from bot.answering.recording import InteractionRecorder

        recorder = InteractionRecorder(store) if store is not None else None
        async with ModelClient(config.model) as model_client:
            client = ThreadwiseClient(
                config, articles=None, model=model_client, recorder=recorder, store=store
            )
            with discord.nextcord_pointed_here():
                async with discord.running(client) as ready:
                    yield Bot(discord=discord, model=small, client=ready, big=big, config_path=path)
        assert not discord.server_errors, discord.server_errors


def system_prompt(request) -> str:
    first = request.messages[0]
    assert first["role"] == "system"
    return first["content"]


async def test_each_channel_answers_with_its_own_persona_and_model(tmp_path):
    async with channel_bot(tmp_path) as bot:
        await bot.ask(CHANNEL, "is the upgrade safe?")
        assert len(bot.big.chat_requests) == 1 and bot.model.chat_requests == []
        support = bot.big.chat_requests[-1]
        assert support.body["model"] == "big-model"
        assert system_prompt(support).startswith("You are the careful support engineer of Acme")

        await bot.ask(OFF_TOPIC, "lunch?")  # matched through its category
        assert len(bot.big.chat_requests) == 1 and len(bot.model.chat_requests) == 1
        casual = bot.model.chat_requests[-1]
        assert casual.body["model"] == "cheap-model"
        assert casual.body["temperature"] == 0.3
        assert system_prompt(casual).startswith("You are the relaxed regular of #off-topic.")

        await bot.ask(LOBBY, "hello?")  # no table: the top level
        plain = bot.model.chat_requests[-1]
        assert plain.body["model"] == "fake-model" and "temperature" not in plain.body
        assert system_prompt(plain).startswith(DEFAULT_PERSONA)

        # A thread of #ops-help takes its parent's settings.
        await bot.discord.add_thread(THREAD, CHANNEL, "upgrade questions", members=[BEN])
        await bot.ask(THREAD, "and in here?")
        assert len(bot.big.chat_requests) == 2
        in_thread = bot.big.chat_requests[-1]
        assert in_thread.body["model"] == "big-model"
        assert system_prompt(in_thread).startswith("You are the careful support engineer")


async def test_a_channel_table_sets_the_context_and_the_budget(tmp_path):
    async with channel_bot(tmp_path) as bot:
        answerer = bot.client.answerer
        support = answerer.channels.runtime_for(bot.client.get_channel(CHANNEL))
        lobby = answerer.channels.runtime_for(bot.client.get_channel(LOBBY))
        assert support.builder.settings.max_total == 12
        assert lobby.builder.settings.max_total == 50
        assert support.budgeter.budget().window == 16384  # the big model's window
        assert lobby.budgeter.budget().window == 8192
        # Built once per table: a second answer pays nothing.
        assert answerer.channels.runtime_for(bot.client.get_channel(CHANNEL)) is support


async def test_a_reload_changes_only_the_channel_it_edits(tmp_path, caplog):
    async with channel_bot(tmp_path) as bot:
        watcher = ConfigWatcher(
            bot.config_path,
            bot.client.config,
            lambda old, new: apply_to_client(bot.client, old, new),
        )
        edited = config_text(
            bot.discord, bot.model, bot.big, off_topic="You are the quiet regular of #{channel}."
        )
        bot.config_path.write_text(edited)
        with caplog.at_level(logging.INFO, logger="bot.config.reload"):
            assert watcher.check()
        assert "[[channels]] changed" in caplog.text

        await bot.ask(OFF_TOPIC, "lunch?")
        assert system_prompt(bot.model.chat_requests[-1]).startswith("You are the quiet regular")
        await bot.ask(CHANNEL, "still careful?")
        support = bot.big.chat_requests[-1]
        assert system_prompt(support).startswith("You are the careful support engineer")
        assert support.body["model"] == "big-model"
        await bot.ask(LOBBY, "and here?")
        assert system_prompt(bot.model.chat_requests[-1]).startswith(DEFAULT_PERSONA)


async def test_a_bad_channel_table_in_a_reload_is_refused_in_one_line(tmp_path, caplog):
    async with channel_bot(tmp_path) as bot:
        watcher = ConfigWatcher(
            bot.config_path,
            bot.client.config,
            lambda old, new: apply_to_client(bot.client, old, new),
        )
        text = config_text(bot.discord, bot.model, bot.big)
        bot.config_path.write_text(text.replace("max_total = 12", "max_totl = 12"))
        with caplog.at_level(logging.ERROR, logger="bot.config.reload"):
            assert not watcher.check()
        assert "[[channels]] 1 [context] max_totl: unknown key" in caplog.text
        await bot.ask(CHANNEL, "still here?")
        assert bot.big.chat_requests[-1].body["model"] == "big-model"


async def model_command(bot: Bot, channel: int, name: str | None, permissions: int | None) -> str:
    options = [] if name is None else [{"name": "name", "type": 3, "value": name}]
    record = await bot.discord.invoke_command(
        channel, CHLOE, "model", options, permissions=permissions
    )
    body = await bot.discord.wait_for_interaction_response(record, timeout=10)
    assert body["data"]["flags"] & 64  # ephemeral
    return body["data"]["content"]


async def test_model_command_needs_manage_server(tmp_path):
    async with channel_bot(tmp_path) as bot:
        registered = bot.discord.state.find_command("model", str(GUILD))
        (option,) = registered["options"]
        assert [c["value"] for c in option["choices"]] == ["big", "default"]
        assert registered["default_member_permissions"] == str(MANAGE_GUILD)
        listed = await model_command(bot, LOBBY, None, permissions=None)
        assert "`fake-model`" in listed and "`big` (big-model)" in listed

        refused = await model_command(bot, LOBBY, "big", permissions=None)
        assert refused == REFUSED
        await bot.ask(LOBBY, "who answers?")
        assert bot.big.chat_requests == []  # nothing changed

        chosen = await model_command(bot, LOBBY, "big", permissions=MANAGE_GUILD)
        assert chosen.startswith("Now answering here with `big` (big-model), from /model")
        await bot.ask(LOBBY, "and now?")
        request = bot.big.chat_requests[-1]
        assert request.body["model"] == "big-model"
        assert system_prompt(request).startswith(DEFAULT_PERSONA)  # the channel's own persona
        await bot.ask(OFF_TOPIC, "and there?")  # other channels keep theirs
        assert bot.model.chat_requests[-1].body["model"] == "cheap-model"

        unknown = await model_command(bot, LOBBY, "huge", permissions=MANAGE_GUILD)
        assert unknown.startswith("There is no model `huge`")
        back = await model_command(bot, LOBBY, "default", permissions=MANAGE_GUILD)
        assert back.startswith("Now answering here with `fake-model`, from [model]")
        await bot.ask(LOBBY, "back?")
        assert bot.model.chat_requests[-1].body["model"] == "fake-model"


async def test_an_unknown_model_name_is_shown_escaped_and_short(tmp_path):
    """Issue 43: the name is the member's: a backtick closed the code span around it (the rest
    then rendered as markdown: a mention, a link, a heading), a line break started a line of
    its own, and a 6000-character name was echoed whole."""
    hostile = "x` @everyone [link](https://evil.example)\n# big" + "y" * 3000
    async with channel_bot(tmp_path) as bot:
        unknown = await model_command(bot, LOBBY, hostile, permissions=MANAGE_GUILD)
    first, *rest = unknown.split("\n")
    assert rest == [] and len(unknown) < 200
    assert first.startswith("There is no model `x\u02cb @everyone [link](https://evil.example) ")
    assert first.count("`") == 4  # the name's span and the model's, each closed
    assert first.endswith("\u2026`. The models: `big`.")


async def test_a_model_chosen_by_command_ends_at_the_next_reload(tmp_path):
    async with channel_bot(tmp_path) as bot:
        watcher = ConfigWatcher(
            bot.config_path,
            bot.client.config,
            lambda old, new: apply_to_client(bot.client, old, new),
        )
        await model_command(bot, OFF_TOPIC, "big", permissions=MANAGE_GUILD)
        await bot.ask(OFF_TOPIC, "big now?")
        assert bot.big.chat_requests[-1].body["model"] == "big-model"
        bot.config_path.write_text(
            config_text(bot.discord, bot.model, bot.big, cheap_name="cheaper-model")
        )
        assert watcher.check()
        await bot.ask(OFF_TOPIC, "after the reload?")
        assert bot.model.chat_requests[-1].body["model"] == "cheaper-model"
        await asyncio.sleep(0)


def scraped(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text as ``{(sample name, sorted labels): value}``."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_scraped_over_http_count_what_happened(tmp_path):
    import aiohttp

    from bot.demo.openai_server import Fail, count_tokens
    from bot.storage import Store

    with Store.open(tmp_path / "store.sqlite3") as store:
        async with channel_bot(tmp_path, store=store, metrics="[metrics]\nport = 0\n") as bot:
            server = bot.client.metrics_server
            assert server is not None and server.port
            bot.client.caches._caches.clear()  # a cold cache: the first answers read over REST
            rest_before = len(bot.discord.requests_to("GET", "/channels/*/messages*"))
            await bot.ask(CHANNEL, "first")  # big-model, a mention
            answer = await bot.ask(LOBBY, "second")  # fake-model, a mention
            reply = await bot.answer_to(
                LOBBY, BEN, "third, as a reply", reply_to=int(answer["id"]), mention_author=False
            )
            await settled(bot)
            assert reply["content"].startswith("echo:")
            bot.model.queue(Fail(status=503), Fail(status=503))
            failed = await bot.ask(OFF_TOPIC, "fourth fails")  # cheap-model, after a retry
            assert "model server had a problem" in failed["content"]
            rest_calls = len(bot.discord.requests_to("GET", "/channels/*/messages*")) - rest_before
            cached = sum(len(cache) for cache in bot.client.caches)
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{server.port}/metrics") as response,
            ):
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain")
                samples = scraped(await response.text())

    answers = "threadwise_answers_total"
    assert value(samples, answers, outcome="success", trigger="mention") == 2
    assert value(samples, answers, outcome="success", trigger="reply") == 1
    assert value(samples, answers, outcome="failure", trigger="mention") == 1
    latency = "threadwise_model_latency_seconds_count"
    assert value(samples, latency, model="big-model") == 1
    assert value(samples, latency, model="fake-model") == 2
    assert value(samples, latency, model="cheap-model") == 0
    first_token = "threadwise_model_time_to_first_token_seconds_count"
    assert value(samples, first_token, model="big-model") == 1
    assert value(samples, "threadwise_model_errors_total", model="cheap-model") == 1
    # Tokens as the servers reported them: the fake counts each request's messages.
    tokens = "threadwise_model_tokens_total"
    for fake, model in ((bot.big, "big-model"), (bot.model, "fake-model")):
        answered = [r for r in fake.chat_requests if r.body["model"] == model]
        expected = sum(count_tokens(r.messages) for r in answered)
        assert value(samples, tokens, model=model, kind="prompt") == expected > 0
        assert value(samples, tokens, model=model, kind="completion") > 0
    assert value(samples, "threadwise_discord_rest_calls_total") == rest_calls > 0
    assert value(samples, "threadwise_store_write_seconds_count") == 4
    assert value(samples, "threadwise_answer_queue_length") == 0
    assert value(samples, "threadwise_cache_messages") == cached > 0
    assert value(samples, "process_resident_memory_bytes") > 0


async def test_without_a_metrics_port_nothing_is_served_or_counted(tmp_path):
    async with channel_bot(tmp_path) as bot:
        assert bot.client.metrics is None and bot.client.metrics_server is None
        await bot.ask(LOBBY, "hello")


async def test_a_channel_naming_a_model_added_in_the_same_edit_waits_for_a_restart(
    tmp_path, caplog
):
    async with channel_bot(tmp_path) as bot:
        watcher = ConfigWatcher(
            bot.config_path,
            bot.client.config,
            lambda old, new: apply_to_client(bot.client, old, new),
        )
        text = config_text(bot.discord, bot.model, bot.big)
        added = text.replace(
            "[articles]", f'[models.huge]\nbase_url = "{bot.big.url}"\nname = "huge"\n\n[articles]'
        ).replace('use = "big"', 'use = "huge"')
        bot.config_path.write_text(added)
        with caplog.at_level(logging.ERROR, logger="bot.config.reload"):
            assert not watcher.check()
        line = next(r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
        assert "[[channels]] 1 [model] use: no [models.huge] table" in line
        assert "take effect after a restart" in line and "\n" not in line
        await bot.ask(CHANNEL, "which model?")
        assert bot.big.chat_requests[-1].body["model"] == "big-model"


async def test_a_taken_metrics_port_is_one_error_line_and_the_bot_answers(tmp_path, caplog):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="bot.serve.metrics_server"):
            async with channel_bot(tmp_path, metrics=f"[metrics]\nport = {port}\n") as bot:
                reply = await bot.ask(LOBBY, "still answering?")
                assert reply["content"].startswith("echo:")
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert line.startswith(f"metrics: cannot listen on 127.0.0.1:{port} ([metrics] host, port)")


async def test_a_named_anthropic_model_answers_a_channel_through_its_own_client(tmp_path):
    from tests.fakes.anthropic_server import FakeAnthropic

    async with FakeAnthropic() as claude:
        models = f'[models.claude]\nprovider = "anthropic"\nbase_url = "{claude.url}"\n'
        models += 'name = "claude-x"\n'
        async with channel_bot(tmp_path, models=models) as bot:
            chosen = await model_command(bot, LOBBY, "claude", permissions=MANAGE_GUILD)
            assert chosen.startswith("Now answering here with `claude` (claude-x)")
            reply = await bot.ask(LOBBY, "hello claude")
            assert reply["content"]
            (request,) = claude.message_requests
            assert request.body["model"] == "claude-x"
            assert DEFAULT_PERSONA in str(request.body["system"])
            assert bot.model.chat_requests == [] and bot.big.chat_requests == []
            clients = bot.client.answerer.channels.clients
            assert set(clients._opened) == {"claude"}  # one client per endpoint used


async def test_a_channel_table_turns_following_off_and_follow_ups_are_counted(tmp_path):
    """[triggers] follow (issue 24) per channel, generically: the table of #ops-help turns it
    off there; elsewhere a follow-up is answered and counted as such."""
    import aiohttp

    from tests.bot.test_follow_e2e import answered, follow_up, talk_to_bot
    from tests.fakes.harness import running_bot

    off = [{"match": {"channel_ids": [CHANNEL]}, "triggers": {"follow": False}}]
    async with running_bot(channels=off) as bot:
        await talk_to_bot(bot)
        requests = len(bot.model.chat_requests)
        assert not await answered(bot, await follow_up(bot))
        assert len(bot.model.chat_requests) == requests

    async with running_bot(metrics={"port": 0}) as bot:  # the control: following on
        await talk_to_bot(bot)
        assert await answered(bot, await follow_up(bot))
        port = bot.client.metrics_server.port
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            samples = scraped(await response.text())
    answers = "threadwise_answers_total"
    assert value(samples, answers, outcome="success", trigger="mention") == 1
    assert value(samples, answers, outcome="success", trigger="follow") == 1


async def test_a_channel_table_turns_tools_off_there(tmp_path):
    """[tools] (issue 26) per channel, generically: on at the top level, off in #ops-help."""
    import sys

    from bot.config.tool_settings import McpServerSettings, ToolSettings
    from bot.tools.mcp_servers import McpServers
    from bot.tools.toolbox import Toolbox
    from tests.fakes.harness import running_bot

    tools_on = {"enabled": True, "read_page": False, "call_timeout_seconds": 2.0}
    server = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    servers = McpServers.from_settings([server], restart_delays=(0.1,), ping_interval=0.3)
    await servers.start(wait=30)
    off = [{"match": {"channel_ids": [CHANNEL]}, "tools": {"enabled": False}}]
    try:
        toolbox = Toolbox(ToolSettings(**tools_on), servers=servers)
        async with running_bot(toolbox=toolbox, tools=tools_on, channels=off) as bot:
            await bot.discord.add_text_channel(LOBBY, GUILD, "lobby")
            for _ in range(100):
                if bot.client.get_channel(LOBBY) is not None:
                    break
                await asyncio.sleep(0.05)
            await bot.answer_to(LOBBY, BEN, f"<@{BOT_ID}> any tools here?")
            await settled(bot)
            assert [t["function"]["name"] for t in bot.model.chat_requests[-1].body["tools"]]
            await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> and here?")
            await settled(bot)
            assert "tools" not in bot.model.chat_requests[-1].body
    finally:
        await servers.close()
