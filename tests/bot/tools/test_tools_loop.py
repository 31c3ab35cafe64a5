"""The tool loop with the real model client against the fake OpenAI and Anthropic servers, and
real tools on the test MCP server: one call, parallel calls, more rounds than allowed, and a
tool that fails or hangs, streamed and not."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator

import pytest

from bot.config.model_settings import ModelSettings
from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.demo import openai_server as openai_fake
from bot.model.client import ModelClient
from bot.model.tool_loop import complete_with_tools
from bot.tools.mcp_servers import McpServers
from bot.tools.toolbox import Toolbox
from tests.fakes import anthropic_server as anthropic_fake
from tests.fakes.zygote import fake_mcp_args

PROMPT = [
    {"role": "system", "content": "You are a bot."},
    {"role": "user", "content": "alice: what does the echo say?", "name": "alice"},
]


@pytest.fixture
async def toolbox() -> AsyncIterator[Toolbox]:
    server = McpServerSettings(name="test", command=sys.executable, args=fake_mcp_args())
    servers = McpServers.from_settings([server], restart_delays=(0.1,))
    await servers.start(wait=30)
    settings = ToolSettings(enabled=True, read_page=False, call_timeout_seconds=1.0)
    try:
        yield Toolbox(settings, servers=servers)
    finally:
        await servers.close()


def settings_for(url: str, provider: str, stream: bool) -> ModelSettings:
    return ModelSettings(
        provider=provider, base_url=url, name="fake-model", stream=stream, timeout_seconds=20,
        idle_timeout_seconds=5, retry_base_seconds=0.01, retry_max_seconds=0.1,
    )  # fmt: skip


class Seen:
    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.statuses: list[str] = []

    async def delta(self, text: str) -> None:
        self.deltas.append(text)

    async def status(self, text: str) -> None:
        self.statuses.append(text)


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_one_call_then_the_answer(toolbox: Toolbox, stream: bool) -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", stream)
    ) as model:  # fmt: skip
        fake.queue(
            openai_fake.CallTools((("echo", '{"text": "hi @everyone"}'),), text="Let me look."),
            openai_fake.Answer(text="It says hi."),
        )
        seen = Seen()
        result = await complete_with_tools(
            model, PROMPT, toolbox, max_steps=4, on_delta=seen.delta, on_status=seen.status
        )
    assert result.completion.text == "It says hi."
    assert "".join(seen.deltas) == "Let me look.It says hi."
    assert seen.statuses == ["using echo …"]
    first, second = fake.chat_requests
    assert [t["function"]["name"] for t in first.body["tools"]][:2] == ["echo", "fail"]
    assert "tool_choice" not in first.body
    call_id = second.messages[2]["tool_calls"][0]["id"]
    assert second.messages[2:] == [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "hi @everyone"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": '<tool_result tool="echo">echo: hi @\u200beveryone</tool_result>',
        },
    ]
    assert result.added == second.messages[2:]
    assert result.completion.request["messages"] == second.messages  # what is recorded
    assert [o.status for r in result.rounds for o in r.outcomes] == ["ok"]
    # The budget learns from the prompt alone, not from the prompt plus the tool turns.
    assert result.first_usage is not None and result.completion.usage is not None
    assert result.first_usage.prompt_tokens < result.completion.usage.prompt_tokens


async def test_openai_parallel_calls_fail_and_hang_as_results(toolbox: Toolbox) -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        calls = (("hang", "{}"), ("echo", '{"text": "a"}'), ("fail", "{}"))
        fake.queue(openai_fake.CallTools(calls), openai_fake.Answer(text="Partly."))
        began = time.monotonic()
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
    assert time.monotonic() - began < 4  # the hang cost its 1 s timeout once, beside the rest
    tool_turns = fake.chat_requests[1].messages[3:]
    assert [t["tool_call_id"] for t in tool_turns] == [
        c["id"] for c in fake.chat_requests[1].messages[2]["tool_calls"]
    ]
    assert tool_turns[0]["content"] == '<tool_error tool="hang">no result within 1 s</tool_error>'
    assert tool_turns[1]["content"] == '<tool_result tool="echo">echo: a</tool_result>'
    assert tool_turns[2]["content"].startswith('<tool_error tool="fail">')
    assert result.completion.text == "Partly."


async def test_openai_more_rounds_than_allowed(toolbox: Toolbox) -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        again = openai_fake.CallTools((("echo", '{"text": "again"}'),), text="")
        fake.script(lambda request: again if "tool_choice" not in request.body else None)
        fake.default = openai_fake.CallTools((("echo", '{"text": "one more"}'),), text="Enough.")
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=2)
    requests = fake.chat_requests
    assert len(requests) == 3  # two rounds, then one request that may not call
    assert [r.body.get("tool_choice") for r in requests] == [None, None, "none"]
    assert len(result.rounds) == 2 and result.ignored_calls == 1
    assert result.completion.text == "Enough."
    assert len(requests[2].messages) == len(PROMPT) + 4


@pytest.mark.parametrize("stream", [True, False])
async def test_anthropic_tool_use_round_trip(toolbox: Toolbox, stream: bool) -> None:
    async with anthropic_fake.FakeAnthropic() as fake, ModelClient(
        settings_for(fake.url, "anthropic", stream)
    ) as model:  # fmt: skip
        fake.queue(
            anthropic_fake.UseTools(
                (("echo", '{"text": "one"}'), ("echo", '{"text": "two"}')), text="Checking."
            ),
            anthropic_fake.Answer(text="Both echoed."),
        )
        seen = Seen()
        result = await complete_with_tools(
            model, PROMPT, toolbox, max_steps=4, on_delta=seen.delta, on_status=seen.status
        )
    assert result.completion.text == "Both echoed."
    first, second = fake.message_requests
    assert first.body["tools"][0] == {
        "name": "echo",
        "description": "Say the text back.",
        "input_schema": first.body["tools"][0]["input_schema"],
    }
    assistant, results = second.body["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert [b["input"] for b in assistant["content"][1:]] == [{"text": "one"}, {"text": "two"}]
    assert results["role"] == "user"
    assert [(b["type"], b["tool_use_id"]) for b in results["content"]] == [
        ("tool_result", assistant["content"][1]["id"]),
        ("tool_result", assistant["content"][2]["id"]),
    ]
    assert results["content"][1]["content"] == '<tool_result tool="echo">echo: two</tool_result>'
    # The record keeps OpenAI's format: the arguments exactly as the model streamed them.
    assert json.loads(result.added[0]["tool_calls"][0]["function"]["arguments"]) == {"text": "one"}
    assert [t["role"] for t in result.added] == ["assistant", "tool", "tool"]


async def test_anthropic_failed_calls_are_marked_is_error(toolbox: Toolbox) -> None:
    async with anthropic_fake.FakeAnthropic() as fake, ModelClient(
        settings_for(fake.url, "anthropic", True)
    ) as model:  # fmt: skip
        fake.queue(
            anthropic_fake.UseTools((("fail", "{}"), ("echo", '{"text": "ok"}'))),
            anthropic_fake.Answer(text="One failed."),
        )
        await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
    results = fake.message_requests[1].body["messages"][-1]["content"]
    assert [b.get("is_error", False) for b in results[:2]] == [True, False]


async def test_anthropic_last_round_declares_tools_but_forbids_them(toolbox: Toolbox) -> None:
    async with anthropic_fake.FakeAnthropic() as fake, ModelClient(
        settings_for(fake.url, "anthropic", True)
    ) as model:  # fmt: skip
        fake.queue(
            anthropic_fake.UseTools((("echo", '{"text": "x"}'),)),
            anthropic_fake.Answer(text="Done."),
        )
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=1)
    assert [r.body.get("tool_choice") for r in fake.message_requests] == [None, {"type": "none"}]
    assert "tools" in fake.message_requests[1].body
    assert result.completion.text == "Done."


async def test_results_share_the_budgets_room_and_stay_as_read(toolbox: Toolbox) -> None:
    toolbox.apply_settings(toolbox.settings.model_copy(update={"max_result_chars": 50_000}))
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        huge = openai_fake.CallTools((("huge", '{"size": 9000}'),))
        fake.queue(huge, huge, openai_fake.Answer(text="Long pages."))
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4, room_chars=12_000)
    first, second = (m["content"] for m in result.added if m["role"] == "tool")
    assert len(first) > 9000  # it fitted whole
    assert len(first) + len(second) < 12_000 and "[result truncated" in second
    # The first result is sent unchanged in every later request: the prefix of what followed.
    assert fake.chat_requests[2].messages[3]["content"] == first


@pytest.mark.parametrize("stream", [True, False])
async def test_anthropic_ids_that_repeat_or_the_api_refuses_are_made_the_bots(
    toolbox: Toolbox, stream: bool
) -> None:
    """A gateway numbering calls per answer repeats ids across rounds (and some repeat them in
    one answer, or use characters the API refuses): the next request must still be valid."""
    async with anthropic_fake.FakeAnthropic() as fake, ModelClient(
        settings_for(fake.url, "anthropic", stream)
    ) as model:  # fmt: skip
        echo = '{"text": "x"}'
        fake.queue(
            anthropic_fake.UseTools((("echo", echo), ("echo", echo)), ids=("call_0", "call_0")),
            anthropic_fake.UseTools((("echo", echo),), ids=("call_0",)),
            anthropic_fake.UseTools((("echo", echo),), ids=("tool use #1 (ü)",)),
            anthropic_fake.Answer(text="Echoed thrice."),
        )
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
    assert result.completion.text == "Echoed thrice."  # no request was refused
    assert [r.body["messages"][-1]["role"] for r in fake.message_requests[1:]] == ["user"] * 3
    ids = [c["id"] for turn in result.added for c in turn.get("tool_calls") or ()]
    assert len(ids) == len(set(ids)) == 4 and ids[0] == "call_0"
    assert [t["tool_call_id"] for t in result.added if t["role"] == "tool"] == ids
    assert [c.id for r in result.rounds for c in r.calls] == ids  # the work log's too


async def test_openai_ids_go_through_the_same_renaming(toolbox: Toolbox) -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        odd = openai_fake.CallTools((("echo", '{"text": "x"}'),), id_prefix="id with spaces ")
        fake.queue(odd, odd, openai_fake.Answer(text="Done."))
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
    sent = fake.chat_requests[2].messages
    ids = [c["id"] for m in sent for c in m.get("tool_calls") or ()]
    assert ids == ["call_0", "call_1"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids
    assert result.completion.text == "Done."


async def test_a_model_calling_past_its_last_round_is_asked_once_more_without_tools(
    toolbox: Toolbox,
) -> None:
    """Issue 43: a server that ignores ``tool_choice: none`` calls again after the last round
    and writes nothing (the member got "(The model gave an empty answer.)"). Its calls are
    answered "not run" and one more request, with no tools offered, gets the text."""
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        again = openai_fake.CallTools((("echo", '{"text": "again"}'),), text="")
        fake.script(lambda request: again if "tools" in request.body else None)
        fake.default = openai_fake.Answer(text="Here is what the echo said.")
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=1)
    requests = fake.chat_requests
    assert [r.body.get("tool_choice") for r in requests] == [None, "none", None]
    assert ["tools" in r.body for r in requests] == [True, True, False]
    assert result.completion.text == "Here is what the echo said."
    assert len(result.rounds) == 2 and result.ignored_calls == 0
    assert [o.status for o in result.rounds[1].outcomes] == ["not_run"]
    last = requests[2].messages
    assert [m["role"] for m in last[len(PROMPT) :]] == ["assistant", "tool"] * 2
    assert "may call no more tools" in last[-1]["content"]
    assert result.completion.request["messages"] == last  # recorded as sent
