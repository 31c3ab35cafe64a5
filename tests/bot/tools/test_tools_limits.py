"""Calls the model gets wrong or asks too many of (security review of issue 26): arguments
that are not a JSON object, calls cut off at the token limit, and more calls than allowed,
with the real client against the fake servers and the test MCP server."""

from __future__ import annotations

import pytest

from bot.demo import openai_server as openai_fake
from bot.model.client import ModelClient
from bot.model.errors import ModelProtocolError
from bot.model.tool_loop import complete_with_tools
from bot.tools.toolbox import Toolbox
from tests.bot.tools.test_tools_loop import PROMPT, settings_for, toolbox  # noqa: F401
from tests.fakes import anthropic_server as anthropic_fake

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize("arguments", ['{"text": "cut sho', "[1, 2]", DEEP])
async def test_anthropic_bad_arguments_are_an_error_result_not_a_failed_answer(
    toolbox: Toolbox,  # noqa: F811
    arguments: str,
) -> None:
    async with anthropic_fake.FakeAnthropic() as fake, ModelClient(
        settings_for(fake.url, "anthropic", True)
    ) as model:  # fmt: skip
        fake.queue(
            anthropic_fake.UseTools((("echo", arguments), ("echo", '{"text": "ok"}'))),
            anthropic_fake.Answer(text="Done."),
        )
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
    assert result.completion.text == "Done."
    assistant, results = fake.message_requests[1].body["messages"][-2:]
    assert [b["input"] for b in assistant["content"]] == [{}, {"text": "ok"}]
    assert results["content"][0]["is_error"] is True
    assert "not a JSON object" in results["content"][0]["content"]
    # The record keeps what the model wrote.
    assert result.added[0]["tool_calls"][0]["function"]["arguments"] == arguments
    assert [o.status for o in result.rounds[0].outcomes] == ["error", "ok"]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_calls_cut_at_the_token_limit_are_not_run(
    toolbox: Toolbox,  # noqa: F811
    provider: str,
) -> None:
    fakes = {"anthropic": anthropic_fake.FakeAnthropic, "openai": openai_fake.FakeOpenAI}
    async with fakes[provider]() as fake, ModelClient(
        settings_for(fake.url, provider, True)
    ) as model:  # fmt: skip
        if provider == "anthropic":
            cut = anthropic_fake.UseTools((("pid", "{}"),), stop_reason="max_tokens")
            fake.queue(cut, anthropic_fake.Answer(text="Out of room."))
        else:
            cut = openai_fake.CallTools((("pid", "{}"),), finish_reason="length")
            fake.queue(cut, openai_fake.Answer(text="Out of room."))
        result = await complete_with_tools(model, PROMPT, toolbox, max_steps=4)
        requests = fake.message_requests if provider == "anthropic" else fake.chat_requests
    assert result.completion.text == "Out of room."
    (outcome,) = result.rounds[0].outcomes
    assert outcome.status == "not_run" and "token limit" in outcome.content
    assert outcome.original_chars == 0  # not run
    final = requests[1].body["tool_choice"]
    assert final in ("none", {"type": "none"})  # asked for the final answer


async def test_calls_past_the_limits_get_an_error_and_are_not_run(
    toolbox: Toolbox,  # noqa: F811
) -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        many = tuple(("echo", f'{{"text": "{n}"}}') for n in range(40))
        fake.queue(
            openai_fake.CallTools(many),
            openai_fake.CallTools(many[:5]),
            openai_fake.Answer(text="Enough."),
        )
        result = await complete_with_tools(
            model, PROMPT, toolbox, max_steps=4, max_calls=8, max_total=10
        )
    first, second = result.rounds
    assert [o.status for o in first.outcomes] == ["ok"] * 8 + ["not_run"] * 32
    assert "at most 8 tool calls per round" in first.outcomes[8].content
    assert [o.status for o in second.outcomes] == ["ok"] * 2 + ["not_run"] * 3
    assert "used all its tool calls" in second.outcomes[2].content
    assert len(fake.chat_requests) == 3
    assert fake.chat_requests[2].body["tool_choice"] == "none"
    assert len(result.added[0]["tool_calls"]) == 40  # every call has its result turn
    assert len(result.added) == 2 + 40 + 5


async def test_a_request_nested_too_deeply_is_a_one_line_protocol_error() -> None:
    async with openai_fake.FakeOpenAI() as fake, ModelClient(
        settings_for(fake.url, "openai", True)
    ) as model:  # fmt: skip
        deep: object = "x"
        for _ in range(50_000):
            deep = [deep]
        part = {"type": "text", "text": "hi", "deep": deep}
        messages = [*PROMPT, {"role": "user", "content": [part]}]
        with pytest.raises(ModelProtocolError) as raised:
            await model.complete(messages)
    assert "nested too deeply" in str(raised.value)
    assert "\n" not in str(raised.value)
