"""Tools end to end: the real bot on the fake Discord, the real model client against the fake
OpenAI server, real tools on the test MCP server (stdio), a real SQLite store. The answer is
posted, the tool calls are in the store and in the export byte for byte as sent, a tool's
@everyone pings no one, the streamed message says what runs, a dead server comes back (and one
that writes a line without end)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator

import pytest

from bot.answering.catchup_tool import CATCH_UP
from bot.answering.recording import InteractionRecorder
from bot.answering.tool_use import tools_tokens
from bot.config.schema import Config
from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.demo.discord_permissions import DEFAULT_BOT_PERMISSIONS, MENTION_EVERYONE
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import Answer, CallTools, Fail
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from bot.tools.mcp_servers import McpServers
from bot.tools.toolbox import Toolbox
from conversation.prompt.tokens import text_tokens
from tests.bot.test_budget_e2e import chatter
from tests.bot.test_channels_e2e import scraped, value
from tests.fakes.anthropic_server import Answer as AnthropicAnswer
from tests.fakes.anthropic_server import FakeAnthropic, UseTools
from tests.fakes.harness import (
    ALICE,
    BOT_ID,
    CHANNEL,
    CHLOE,
    DEV,
    DM_CHANNEL,
    EXAMPLE,
    ROOT,
    Harness,
    running_bot,
    settled,
)
from tests.fakes.zygote import fake_mcp_args

TOOLS_ON = {"enabled": True, "read_page": False, "call_timeout_seconds": 2.0}


@pytest.fixture
async def toolbox() -> AsyncIterator[Toolbox]:
    server = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    servers = McpServers.from_settings([server], restart_delays=(0.1,), ping_interval=0.3)
    await servers.start(wait=30)
    try:
        yield Toolbox(ToolSettings(**TOOLS_ON), servers=servers)
    finally:
        await servers.close()


async def metrics_of(bot) -> dict:
    """What a Prometheus scrape of the running bot reads."""
    import aiohttp

    port = bot.client.metrics_server.port
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        return scraped(await response.text())


def offered(toolbox: Toolbox) -> list:
    """What an answer offers: the catch_up tool ([catchup] tool, on by default), then the
    toolbox's."""
    return [CATCH_UP, *toolbox.specs()]


def echo_the_tool(request) -> Answer | None:
    """The model's answer repeats what the tool said (as models do)."""
    results = [m["content"] for m in request.messages if m.get("role") == "tool"]
    return Answer(text=f"The tool said: {results[-1]}") if results else None


def prompt_limit(explanation, action: str, window: str = r"\d+") -> int:
    """The prompt's token limit in the answer's one ``action`` line ("budget", or
    "budget_refit" for the prompt rebuilt after "context too long"), of a ``window``."""
    [line] = [w.detail for w in explanation.work_log if w.action == action]
    return int(re.search(rf" of (\d+) tokens \(window {window}", line)[1])


async def ask(bot, text: str, channel: int = CHANNEL) -> dict:
    mention = f"<@{BOT_ID}> " if channel == CHANNEL else ""
    if channel == DM_CHANNEL:
        await bot.discord.load_log(ROOT / "tests" / "logs" / "dm_with_threadwise.json")
    who = CHLOE if channel == CHANNEL else ALICE
    reply = await bot.answer_to(channel, who, f"{mention}{text}")
    await settled(bot)
    return bot.discord.message(channel, int(reply["id"]))


async def test_tool_call_answered_recorded_exported_and_defused(tmp_path, toolbox) -> None:
    permissions = DEFAULT_BOT_PERMISSIONS | MENTION_EVERYONE  # the bot could ping everyone
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(
            store=store, toolbox=toolbox, fake_discord={"bot_permissions": permissions},
            tools=TOOLS_ON,
        ) as bot:  # fmt: skip
            bot.model.queue(CallTools((("echo", '{"text": "@everyone the deploy is at 16:00"}'),)))
            bot.model.script(echo_the_tool)
            reply = await ask(bot, "what does the echo tool say?")
            requests = bot.model.chat_requests
            sent = requests[-1].body["messages"]
            shown = [
                (r.body or {}).get("content") or ""
                for r in bot.discord.requests_to(pattern=f"*channels/{CHANNEL}/messages*")
            ]
        lines = list(store.export_lines())
        explanation = await store.explain_async(int(reply["id"]))
    assert "the deploy is at 16:00" in reply["content"]
    assert "@\u200beveryone" in reply["content"]
    assert reply["mention_everyone"] is False and reply["mentions"] == []
    # The prompt, the call, the result, as the model received them; then the answer.
    assert [m["role"] for m in sent[-2:]] == ["assistant", "tool"]
    line = json.loads(lines[0])
    assert line["messages"][:-1] == sent
    assert lines[0].startswith(
        '{"messages":['
        + ",".join(json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in sent)
    )  # byte for byte
    assert line["messages"][-1] == {"role": "assistant", "content": reply["content"]}
    assert [t["function"]["name"] for t in line["tools"]][:3] == ["catch_up", "echo", "fail"]
    assert line["tools"] == requests[-1].body["tools"]  # as sent, descriptions and all
    assert len(requests) == 2
    for request in requests:  # on-policy: each request of the answer is a prefix of the line
        assert line["messages"][: len(request.messages)] == request.messages
    reasons = [m.reasons for m in explanation.context]
    assert reasons[-2:] == [["tool call: echo"], ["tool result: echo"]]
    assert "→ echo(" in explanation.context[-2].excerpt
    tool_lines = [w for w in explanation.work_log if w.action == "tool_call"]
    assert len(tool_lines) == 1 and tool_lines[0].status == "success"
    assert "-# using echo …" in shown  # while the tool ran, before the answer


async def test_answers_without_tools_export_as_before(tmp_path, toolbox) -> None:
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, toolbox=toolbox) as bot:  # [tools] enabled is off
            await ask(bot, "hello there")
            sent = bot.model.chat_requests[-1].body
        [line] = list(store.export_lines())
    assert "tools" not in sent
    assert '"tools":' not in line and line.endswith("}]}")


async def test_tools_are_off_in_dms_unless_allowed(tmp_path, toolbox) -> None:
    async with running_bot(toolbox=toolbox, **{"tools": TOOLS_ON}) as bot:
        await ask(bot, "hello in private", channel=DM_CHANNEL)
        assert "tools" not in bot.model.chat_requests[-1].body
    async with running_bot(toolbox=toolbox, **{"tools": TOOLS_ON | {"in_dms": True}}) as bot:
        await ask(bot, "hello in private", channel=DM_CHANNEL)
        assert "tools" in bot.model.chat_requests[-1].body


async def test_a_dead_server_is_restarted_and_the_answer_goes_on(tmp_path, toolbox) -> None:
    async with running_bot(toolbox=toolbox, **{"tools": TOOLS_ON}) as bot:
        bot.model.queue(CallTools((("die", "{}"),)), Answer(text="The tool broke."))
        reply = await ask(bot, "please crash your tool")
        assert reply["content"] == "The tool broke."
        error = bot.model.chat_requests[-1].body["messages"][-1]["content"]
        assert error.startswith('<tool_error tool="die">')
        await restarted_and_answering(bot, toolbox)


async def restarted_and_answering(bot, toolbox: Toolbox) -> None:
    """The server has been started again, and the bot's next tool call gets its answer."""
    server = toolbox.servers.servers[0]
    async with asyncio.timeout(30):
        while not (server.up and server.connections == 2):
            await asyncio.sleep(0.05)
    bot.model.queue(CallTools((("echo", '{"text": "back"}'),)))
    bot.model.script(echo_the_tool)
    reply = await ask(bot, "and now?")
    assert re.search(r"echo: back", reply["content"])


async def test_a_server_writing_without_end_is_restarted_and_the_bot_answers(tmp_path) -> None:
    """A stdio server that writes a line that never ends: the model is told why its call
    failed, the bot answers, and the server, started again, answers the next call."""
    server = McpServerSettings(
        name="test", command=sys.executable, args=fake_mcp_args(), env={"FAKE_MCP_SPILL": "1"}
    )
    servers = McpServers.from_settings([server], restart_delays=(0.1,), max_response_bytes=64_000)
    await servers.start(wait=30)
    patient = TOOLS_ON | {"call_timeout_seconds": 20}
    toolbox = Toolbox(ToolSettings(**patient), servers=servers)
    try:
        async with running_bot(toolbox=toolbox, **{"tools": patient}) as bot:
            bot.model.queue(CallTools((("spill", "{}"),)), Answer(text="The tool broke."))
            async with asyncio.timeout(15):  # well within the call's 20 s
                reply = await ask(bot, "please use the spilling tool")
            assert reply["content"] == "The tool broke."
            error = bot.model.chat_requests[-1].body["messages"][-1]["content"]
            assert error == (
                '<tool_error tool="spill">MCP server test sent a message over the 64000-byte '
                "limit: connection dropped, it restarts; try again later</tool_error>"
            )
            await restarted_and_answering(bot, toolbox)
    finally:
        await servers.close()


@contextlib.asynccontextmanager
async def claude_bot(store: Store, toolbox: Toolbox) -> AsyncIterator[Harness]:
    """The bot on ``provider = "anthropic"`` with tools on."""
    async with (
        FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord,
        FakeAnthropic() as fake,
    ):
        await discord.load_log(EXAMPLE)
        config = Config.model_validate(
            {
                "discord": {"token": discord.token, "api_base": discord.api_base,
                            "guild_ready_timeout": 0.1},
                "model": {"provider": "anthropic", "base_url": fake.url, "name": "claude-test",
                          "retry_base_seconds": 0.01, "idle_timeout_seconds": 5},
                "articles": {"enabled": False},
                "triggers": {"burst_window_seconds": 0.05},
                "replies": {"edit_interval_seconds": 0.2},
                "tools": TOOLS_ON,
            }
        )  # fmt: skip
        async with ModelClient(config.model) as model_client:
            client = ThreadwiseClient(
                config, articles=None, model=model_client, store=store, tools=toolbox,
                recorder=InteractionRecorder(store),
            )  # fmt: skip
            with discord.nextcord_pointed_here():
                async with discord.running(client) as ready:
                    yield Harness(discord=discord, model=fake, client=ready)  # type: ignore[arg-type]


async def test_anthropic_tool_use_is_recorded_in_openai_format(tmp_path, toolbox) -> None:
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with claude_bot(store, toolbox) as bot:
            bot.model.queue(  # type: ignore[attr-defined]
                UseTools((("echo", '{"text": "a"}'), ("echo", '{"text": "b"}'))),
                AnthropicAnswer(text="Both said something."),
            )
            reply = await ask(bot, "use the echo tool twice")
            second = bot.model.message_requests[-1].body  # type: ignore[attr-defined]
            first = bot.model.message_requests[0].body  # type: ignore[attr-defined]
        [line] = [json.loads(text) for text in store.export_lines()]
    assert reply["content"] == "Both said something."
    assert [b["type"] for b in second["messages"][-1]["content"]][:2] == [
        "tool_result",
        "tool_result",
    ]
    call_turn, *results, answer = line["messages"][-4:]
    assert call_turn["role"] == "assistant" and call_turn["content"] is None
    assert [json.loads(c["function"]["arguments"]) for c in call_turn["tool_calls"]] == [
        {"text": "a"},
        {"text": "b"},
    ]
    assert [r["content"] for r in results] == [
        '<tool_result tool="echo">echo: a</tool_result>',
        '<tool_result tool="echo">echo: b</tool_result>',
    ]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in call_turn["tool_calls"]]
    assert answer == {"role": "assistant", "content": "Both said something."}
    assert line["tools"][0]["type"] == "function"  # OpenAI's format, whichever provider
    assert first["tools"] == second["tools"]
    assert line["tools"] == [as_openai_tool(tool) for tool in second["tools"]]  # as sent


def as_openai_tool(tool: dict) -> dict:
    """An Anthropic ``tools`` entry in OpenAI's format, as the export keeps it."""
    function = {"name": tool["name"], "description": tool["description"]}
    return {"type": "function", "function": function | {"parameters": tool["input_schema"]}}


async def test_each_request_of_a_tool_loop_is_a_prefix_of_the_export(tmp_path, toolbox) -> None:
    """Three rounds: every request the model saw is where the exported line begins, and the
    line's tools are those the requests offered."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
            bot.model.queue(
                CallTools((("echo", '{"text": "one"}'),)),
                CallTools((("echo", '{"text": "two"}'), ("echo", '{"text": "three"}'))),
            )
            bot.model.script(echo_the_tool)
            reply = await ask(bot, "use the echo tool, then again")
            requests = bot.model.chat_requests
        [line] = [json.loads(text) for text in store.export_lines()]
    assert "echo: three" in reply["content"]
    assert len(requests) == 3
    lengths = [len(r.messages) for r in requests]
    assert lengths == sorted(lengths) and len(set(lengths)) == 3
    for request in requests:
        assert line["messages"][: len(request.messages)] == request.messages
        assert line["tools"] == request.body["tools"]
    assert len(line["messages"]) == len(requests[-1].messages) + 1


async def test_with_tools_the_prompt_leaves_room_for_their_results(tmp_path, toolbox) -> None:
    """In a small window the context gives way a little, so a result is read whole."""
    limits: dict[bool, int] = {}
    for tools_on in (False, True):
        with Store.open(tmp_path / f"store-{tools_on}.sqlite3") as store:
            async with running_bot(
                store=store, toolbox=toolbox, model={"context_tokens": 4000},
                tools=TOOLS_ON | {"enabled": tools_on, "max_result_chars": 900},
            ) as bot:  # fmt: skip
                if tools_on:
                    bot.model.queue(CallTools((("huge", '{"size": 800}'),)))
                    bot.model.script(echo_the_tool)
                reply = await ask(bot, "how long does the link mode take?")
                sent = bot.model.chat_requests[-1].body["messages"]
            explanation = await store.explain_async(int(reply["id"]))
        limits[tools_on] = prompt_limit(explanation, "budget")
        if tools_on:
            assert "[result truncated" not in sent[-1]["content"]  # read whole
    # 2 x 900 characters at 3 per token, and the tool definitions every request carries
    assert limits[True] == limits[False] - 600 - tools_tokens(offered(toolbox))


async def test_tool_definitions_do_not_inflate_the_calibration(tmp_path, toolbox) -> None:
    """The server's prompt_tokens count the tool definitions: so does the estimate beside it."""
    ratios: dict[bool, float] = {}
    question = "how long does the link mode take when the channel is busy? " * 8
    for tools_on in (False, True):
        with Store.open(tmp_path / f"store-{tools_on}.sqlite3") as store:
            async with running_bot(
                store=store, toolbox=toolbox, tools=TOOLS_ON | {"enabled": tools_on}
            ) as bot:
                bot.model.queue(Answer(text="About a minute."))
                await ask(bot, question)
                assert ("tools" in bot.model.chat_requests[-1].body) is tools_on
            [limits] = store.model_limits().values()
            assert limits.samples == 1
            ratios[tools_on] = limits.ratio
    # Not equal: the fake counts JSON a little more densely than prose. Without the definitions
    # in the estimate the ratio came out 2.15 times as high (1.60 against 0.74).
    assert ratios[True] < ratios[False] * 1.25


async def test_a_prompt_rebuilt_after_too_long_keeps_the_tools_room(tmp_path, toolbox) -> None:
    """The server's window is smaller than configured: the prompt rebuilt for it still leaves
    room for the tool definitions and results, as the first one did."""
    limits: dict[bool, int] = {}
    for tools_on in (False, True):
        with Store.open(tmp_path / f"store-{tools_on}.sqlite3") as store:
            async with running_bot(
                store=store, toolbox=toolbox, fake_model={"context_window": 1800},
                model={"reserve_tokens": 200}, context={"min_linear": 20},  # all of it
                tools=TOOLS_ON | {"enabled": tools_on, "max_result_chars": 300},
                # Without catch_up's definition: with it the room kept would pass half the
                # window's, its cap, and this window is small.
                catchup={"tool": False},
            ) as bot:  # fmt: skip
                await chatter(bot, 20)
                reply = await ask(bot, "summarise please")
            explanation = await store.explain_async(int(reply["id"]))
        assert reply["content"].startswith("echo:")
        limits[tools_on] = prompt_limit(explanation, "budget_refit", window="1800")
    # 2 x 300 characters at 3 per token, and the tool definitions every request carries
    assert limits[True] == limits[False] - 200 - tools_tokens(toolbox.specs())


async def test_calls_already_run_are_recorded_when_the_model_then_fails(tmp_path, toolbox) -> None:
    """A tool may have done something (written, sent): when the request after its round fails,
    the interaction still holds the call, its result and every request's attempts."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
            bot.model.queue(CallTools((("echo", '{"text": "written"}'),)))
            bot.model.queue(Fail(status=400, message="the server refuses this request"))
            reply = await ask(bot, "write it down, then tell me")
            failed = bot.model.chat_requests[-1].messages
        explanation = await store.explain_async(int(reply["id"]))
        record = store.get_interaction(explanation.interaction_id)
    assert explanation.outcome == "failure"
    assert [m["role"] for m in failed[-2:]] == ["assistant", "tool"]
    assert record.request_messages == failed  # the call and its result, as last sent
    assert [m.reasons for m in explanation.context][-2:] == [
        ["tool call: echo"],
        ["tool result: echo"],
    ]
    [call] = [w for w in explanation.work_log if w.action == "tool_call"]
    assert call.status == "success" and "round 1: echo" in call.detail
    attempts = [w.detail for w in explanation.work_log if w.action == "model_attempt"]
    assert attempts[0].endswith("ok") and "400" in attempts[-1]  # the round's request, then


async def test_a_call_run_for_a_prompt_refused_as_too_long_is_not_run_again(tmp_path, toolbox):
    """The server refuses the first prompt at once and the rebuilt one after a round, as too
    long: the third prompt's loop asks for the same call again (its arguments spelled
    otherwise) and gets the result the tool gave, without running it a second time; the record
    says what ran for which prompt and what was reused, and the metrics count both."""
    too_long = (
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages."
    )
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(
            store=store, toolbox=toolbox, tools=TOOLS_ON, metrics={"port": 0}
        ) as bot:
            bot.model.queue(
                Fail(status=400, message=too_long),  # prompt 1: refused before any round
                CallTools((("tally", '{"label": "deploys"}'), ("no_such_tool", "{}"))),
                Fail(status=400, message=too_long),  # prompt 2: refused after one
                CallTools((("tally", '{ "label" : "deploys" }'),)),
            )
            bot.model.script(echo_the_tool)
            reply = await ask(bot, "count the deploys, then tell me")
            requests = bot.model.chat_requests
            samples = await metrics_of(bot)
        lines = list(store.export_lines())
        explanation = await store.explain_async(int(reply["id"]))
    assert len(requests) == 5  # refused, call, refused, call again, answer
    assert "tally deploys: run 1" in reply["content"]  # the first run's result, not a second
    assert [m["role"] for m in requests[-1].messages[-2:]] == ["assistant", "tool"]
    assert json.loads(lines[0])["messages"][:-1] == requests[-1].messages  # as last sent
    calls = [w for w in explanation.work_log if w.action == "tool_call"]
    assert [c.status for c in calls] == ["success", "failure", "success"]
    assert calls[0].detail.startswith("prompt 2 (refused as too long), round 1: tally")
    assert calls[1].detail.startswith("prompt 2 (refused as too long), round 1: no_such_tool")
    assert calls[2].detail.startswith("round 1: tally")
    assert "not run again" in calls[2].detail
    assert [w.action for w in explanation.work_log].count("budget_refit") == 2
    # The operator's numbers: one run, one reuse, a name nobody offered kept out of the labels.
    tool_calls = "threadwise_tool_calls_total"
    assert value(samples, tool_calls, tool="tally", result="ok") == 1
    assert value(samples, tool_calls, tool="tally", result="reused") == 1
    assert value(samples, tool_calls, tool="other", result="error") == 1
    assert value(samples, "threadwise_tool_call_seconds_count", tool="tally") == 1
    assert value(samples, "threadwise_prompt_refits_total", model="fake-model") == 2


async def test_a_server_going_down_mid_answer_keeps_the_room_and_the_offer_agreed(tmp_path) -> None:
    """The tools are taken once per answer: a server that goes down between the budget and the
    request does not leave room kept for tools the request no longer offers (its tools are
    still offered, and a call to one is answered "try again later")."""
    first = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    second = McpServerSettings(
        name="naps", command=sys.executable, args=fake_mcp_args(),
        env={"FAKE_MCP_MANY": "1"}, allow=["nap"],
    )  # fmt: skip
    servers = McpServers.from_settings([first, second], restart_delays=(30.0,), ping_interval=30)
    await servers.start(wait=30)
    toolbox = Toolbox(ToolSettings(**TOOLS_ON), servers=servers)
    limits: dict[bool, int] = {}
    try:
        for tools_on in (False, True):
            with Store.open(tmp_path / f"store-{tools_on}.sqlite3") as store:
                async with running_bot(
                    store=store, toolbox=toolbox, model={"context_tokens": 4000},
                    tools=TOOLS_ON | {"enabled": tools_on, "max_result_chars": 900},
                ) as bot:  # fmt: skip
                    history = f"/channels/{CHANNEL}/messages"
                    fetch = bot.discord.add_latency(history, 1.0, method="GET", count=1)
                    asking = asyncio.create_task(ask(bot, "how long does the link mode take?"))
                    if tools_on:  # the budget is made; the prompt's history is being read
                        async with asyncio.timeout(10):
                            while not fetch.hits:
                                await asyncio.sleep(0.01)
                        await servers.servers[1].close()
                    reply = await asking
                    sent = bot.model.chat_requests[-1].body.get("tools", [])
                explanation = await store.explain_async(int(reply["id"]))
            limits[tools_on] = prompt_limit(explanation, "budget")
    finally:
        await servers.close()
    assert "nap" in [tool["function"]["name"] for tool in sent]  # offered as budgeted
    definitions = text_tokens(json.dumps(sent, ensure_ascii=False))
    assert limits[True] == limits[False] - 600 - definitions  # room for exactly what is offered


async def test_forget_user_leaves_nothing_of_them_in_a_store_the_bot_wrote(
    tmp_path, toolbox, capsys
) -> None:
    """The tool's arguments as the model wrote them (the name JSON-escaped, the id bare and as a
    mention), its result, the work log's tool line with an error naming them, and the bot's
    answer holding ``<@!id>``, in an answer to someone else: after ``forget-user``, none of it is
    in any table or line."""
    from bot.cli.main import main
    from tests.bot.storage.test_forget_everywhere import text_cells

    path = tmp_path / "store.sqlite3"
    about = f'{{"text": "Chlo\\u00e9 (<@!{CHLOE}>, user_id {CHLOE}) asked"}}'
    with Store.open(path) as store:
        async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
            bot.model.queue(
                CallTools((("echo", about), ("fail", f'{{"reason": "no chloe {CHLOE}"}}'))),
                Answer(text=f"<@!{CHLOE}> Chloé: the deploy is at 16:00."),
            )
            await bot.answer_to(CHANNEL, DEV, f"<@{BOT_ID}> when is the deploy Chloé asked about?")
            await settled(bot)
        before = "\n".join(store.export_lines())
    assert "Chlo\\\\u00e9" in before and f"<@!{CHLOE}>" in before  # what the bot wrote
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{path}"\n')
    assert await asyncio.to_thread(main, ["forget-user", str(CHLOE), "--config", str(config)]) == 0
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["export", "--config", str(config)]) == 0
    exported = capsys.readouterr().out
    cells = text_cells(str(path))
    assert any("the deploy is at 16:00" in cell for cell in cells)
    for spelling in ("Chloé", "chloe", "Chlo\\u00e9", "Chlo\\\\u00e9", str(CHLOE)):
        assert spelling not in exported, spelling
        assert not [cell for cell in cells if spelling in cell], spelling
