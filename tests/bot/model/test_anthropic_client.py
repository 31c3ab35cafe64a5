"""The model client with ``provider = "anthropic"`` against a real local fake Messages API."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import SecretStr

from bot.config.model_settings import ModelSettings
from bot.model.anthropic_provider import OPENING
from bot.model.call import CacheHints
from bot.model.client import ModelClient
from bot.model.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelContextTooLongError,
    ModelPartialError,
    ModelRejectedError,
    ModelServerError,
    ModelStalledError,
)
from tests.bot.model.test_model_client import Collector
from tests.fakes.anthropic_server import (
    Answer,
    BrokenStream,
    Fail,
    FakeAnthropic,
    Overloaded,
    RateLimited,
)

PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
    + "hQGAhKmMIQAAAABJRU5ErkJggg=="
)
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a test."},
    {"role": "user", "name": "alice", "content": "alice: what is a monad?"},
    {"role": "assistant", "name": "threadwise", "content": "A burrito."},
    {"role": "user", "name": "bob", "content": "bob: and a functor?"},
]


def make_settings(fake: FakeAnthropic, **overrides: Any) -> ModelSettings:
    values: dict[str, Any] = {
        "provider": "anthropic",
        "base_url": fake.url,
        "name": "claude-test",
        "timeout_seconds": 10,
        "idle_timeout_seconds": 2,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 1,
    }
    return ModelSettings(**(values | overrides))


@pytest.fixture
async def fake():
    async with FakeAnthropic() as server:
        yield server


async def test_streamed_answer_with_thinking_usage_and_the_native_request(fake) -> None:
    fake.queue(Answer(text="A functor maps.", thinking="Let me think.", chunk_chars=4))
    deltas = Collector()
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)
    assert completion.text == deltas.text == "A functor maps."
    assert len(deltas.parts) == 4
    assert completion.reasoning == "Let me think."
    assert (completion.finish_reason, completion.model) == ("end_turn", "claude-test")
    usage = completion.usage
    assert usage is not None and usage.completion_tokens == 4
    assert usage.total_tokens == usage.prompt_tokens + 4
    assert [(a.status, a.outcome) for a in completion.attempts] == [(200, "ok")]
    (request,) = fake.message_requests
    assert request.body == completion.request  # what the client says it sent is what arrived
    body = request.body
    assert body["system"] == [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    # The speaker is already in the text; the name is not repeated as "[alice] ".
    assert body["messages"][0]["content"] == [{"type": "text", "text": "alice: what is a monad?"}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["max_tokens"] == 1024 and body["stream"] is True  # reserve_tokens: required
    assert "temperature" not in body and "top_p" not in body
    assert request.headers["anthropic-version"]
    assert "Authorization" not in request.headers and "x-api-key" not in request.headers


async def test_unstreamed_answer(fake) -> None:
    deltas = Collector()
    async with ModelClient(make_settings(fake, stream=False, max_tokens=50)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)
    assert completion.text == "echo: bob: and a functor?" == deltas.text
    assert fake.message_requests[0].body["max_tokens"] == 50
    assert fake.message_requests[0].body["stream"] is False


async def test_images_become_image_blocks(fake) -> None:
    picture = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "alice: look"}, picture]},
    ]
    async with ModelClient(make_settings(fake)) as client:
        await client.complete(messages)
    blocks = fake.message_requests[0].body["messages"][0]["content"]
    assert blocks[0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    assert blocks[1]["text"] == "alice: look"


async def test_a_context_that_opens_with_the_bots_answer_gets_a_user_turn_first(fake) -> None:
    # The builder may keep the bot's answer but not the question before it.
    messages = [MESSAGES[0], *MESSAGES[2:]]
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(messages)
    assert completion.text == "echo: bob: and a functor?"
    turns = fake.message_requests[0].body["messages"]
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    assert turns[0]["content"] == [{"type": "text", "text": "(earlier messages not shown)"}]
    assert completion.request == fake.message_requests[0].body


async def test_the_next_answer_reads_the_prompt_cache(fake) -> None:
    async with ModelClient(make_settings(fake)) as client:
        first = await client.complete(MESSAGES)
        follow_up = [
            *MESSAGES,
            {"role": "assistant", "content": first.text},
            {"role": "user", "name": "alice", "content": "alice: thanks!"},
        ]
        second = await client.complete(follow_up)
    assert first.usage is not None and first.usage.cached_prompt_tokens == 0
    assert second.usage is not None and second.usage.cached_prompt_tokens
    # Everything the first request sent was read back from the cache.
    assert second.usage.cached_prompt_tokens == first.usage.prompt_tokens


async def test_breakpoints_end_the_system_prompt_and_the_stable_part(fake) -> None:
    """``stable_end`` (messages) becomes a block: the assistant turn opens with the inserted
    user turn, and merged user messages are blocks of one turn."""
    messages = [
        {"role": "system", "content": "You are a test."},
        {"role": "assistant", "content": "hello all"},
        {"role": "user", "content": "alice: hi"},
        {"role": "user", "content": "(other recent messages)"},
        {"role": "user", "content": "bob: lunch?"},
        {"role": "user", "content": "alice: and now?"},
    ]
    async with ModelClient(make_settings(fake)) as client:
        await client.complete(messages, cache=CacheHints(stable_end=3))
        await client.complete(messages, cache=CacheHints(stable_end=1))
        await client.complete(messages)
    marked = []
    for request in fake.message_requests:
        body = request.body
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        blocks = [b for turn in body["messages"] for b in turn["content"]]
        marked.append([b["text"] for b in blocks if "cache_control" in b])
    assert marked == [["alice: hi"], [], ["alice: and now?"]]
    assert fake.message_requests[0].body["messages"][0]["content"][0]["text"] == OPENING


async def test_sampling_keys_extra_body_and_headers_pass_through(fake) -> None:
    settings = make_settings(
        fake,
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        stop=["\n\nHuman:"],
        extra_body={"metadata": {"user_id": "guild-1"}},
        extra_headers={"anthropic-beta": "some-feature"},
        api_key=SecretStr("sk-ant-secret-123"),
    )
    async with ModelClient(settings) as client:
        await client.complete(MESSAGES)
    (request,) = fake.message_requests
    body = request.body
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.2, 0.9, 40)
    assert body["stop_sequences"] == ["\n\nHuman:"] and "stop" not in body
    assert body["metadata"] == {"user_id": "guild-1"}
    assert request.headers["anthropic-beta"] == "some-feature"
    assert request.headers["Authorization"] == "Bearer sk-ant-secret-123"


async def test_429_waits_for_retry_after_and_529_is_retried(fake) -> None:
    fake.queue(RateLimited(retry_after="1"), Overloaded(), Answer(text="finally"))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "finally"
    limited, overloaded, ok = completion.attempts
    assert (limited.status, limited.retry_after_seconds, limited.delay_seconds) == (429, 1.0, 1.0)
    assert (overloaded.status, overloaded.outcome) == (529, "retried")
    assert "overloaded_error" in (overloaded.error or "") or "Overloaded" in (
        overloaded.error or ""
    )
    gap = fake.message_requests[1].received_at - fake.message_requests[0].received_at
    assert gap.total_seconds() >= 0.99 and ok.outcome == "ok"


async def test_lasting_overload_tells_the_user_it_is_busy(fake) -> None:
    fake.queue(Overloaded(), Overloaded())
    async with ModelClient(make_settings(fake, max_retries=1)) as client:
        with pytest.raises(ModelServerError) as caught:
            await client.complete(MESSAGES)
    assert caught.value.status == 529
    assert "overloaded" in caught.value.user_message
    assert [a.outcome for a in caught.value.attempts] == ["retried", "failed"]


async def test_bad_request_is_not_retried(fake) -> None:
    fake.queue(Fail(400, "messages: roles must alternate"))
    async with ModelClient(make_settings(fake, max_retries=3)) as client:
        with pytest.raises(ModelRejectedError, match="roles must alternate"):
            await client.complete(MESSAGES)
    assert len(fake.message_requests) == 1


async def test_prompt_too_long_is_recognised_with_the_window(fake) -> None:
    fake.queue(Fail(400, "prompt is too long: 250000 tokens > 200000 maximum"))
    async with ModelClient(make_settings(fake, max_retries=3)) as client:
        with pytest.raises(ModelContextTooLongError) as caught:
            await client.complete(MESSAGES)
    assert (caught.value.window, caught.value.prompt_tokens) == (200000, 250000)
    assert len(fake.message_requests) == 1


async def test_wrong_key_is_an_auth_error_without_the_key() -> None:
    secret = "sk-ant-wrong-0123456789"
    async with FakeAnthropic(api_key="sk-ant-right") as fake:
        client = ModelClient(make_settings(fake, api_key=SecretStr(secret)))
        async with client:
            with pytest.raises(ModelAuthError) as caught:
                await client.complete(MESSAGES)
    assert "check [model] api_key" in caught.value.detail
    assert secret not in repr(caught.value.attempts) + caught.value.detail


async def test_error_event_mid_stream(fake) -> None:
    fake.queue(BrokenStream("error_event"), Answer(text="retried fine"))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)  # nothing shown yet: retried
        assert completion.text == "retried fine"
        assert "Overloaded" in (completion.attempts[0].error or "")
        fake.queue(BrokenStream("error_event"))
        deltas = Collector()
        with pytest.raises(ModelPartialError) as caught:
            await client.complete(MESSAGES, on_delta=deltas)
    assert isinstance(caught.value.cause, ModelServerError)
    assert caught.value.partial_text == deltas.text == BrokenStream("drop").text[:16]


async def test_drop_and_hang_mid_stream(fake) -> None:
    fake.queue(BrokenStream("drop"), BrokenStream("hang"))
    settings = make_settings(fake, idle_timeout_seconds=0.3, max_retries=0)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelConnectionError, match="broke mid-answer"):
            await client.complete(MESSAGES)
        with pytest.raises(ModelStalledError, match=r"idle_timeout_seconds=0\.3") as caught:
            await client.complete(MESSAGES)
    assert caught.value.partial_text == BrokenStream("hang").text[:16]


async def test_keys_stay_out_of_debug_logs(fake, caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-ant-logged-0123456789"
    caplog.set_level(logging.DEBUG)
    settings = make_settings(fake, api_key=SecretStr(secret))
    async with ModelClient(settings) as client:
        await client.complete(MESSAGES)
    assert caplog.records  # the SDK and HTTP loggers did talk
    assert all(secret not in record.getMessage() for record in caplog.records)
