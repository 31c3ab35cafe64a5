"""The model client against a real local HTTP server (bot/demo/openai_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import random
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx2
import pytest
from pydantic import SecretStr, ValidationError

from bot.config.model_settings import ModelSettings
from bot.demo.openai_server import (
    Answer,
    BrokenStream,
    Fail,
    FakeOpenAI,
    Hang,
    RateLimited,
    count_tokens,
    long_answer_with_code,
)
from bot.model.call import CacheHints
from bot.model.client import ModelClient
from bot.model.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelPartialError,
    ModelProtocolError,
    ModelRateLimitedError,
    ModelRejectedError,
    ModelServerError,
    ModelStalledError,
    ModelTimeoutError,
)

MESSAGES = [
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "alice: what is a monad?"},
]


def make_settings(fake: FakeOpenAI | None = None, **overrides: Any) -> ModelSettings:
    values: dict[str, Any] = {
        "base_url": fake.url if fake else "http://127.0.0.1:9/v1",
        "name": "fake-model",
        "timeout_seconds": 10,
        "connect_timeout_seconds": 2,
        "idle_timeout_seconds": 2,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 1,
    }
    values.update(overrides)
    return ModelSettings(**values)


class Collector:
    """An on_delta that keeps what it was given."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    async def __call__(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@contextlib.asynccontextmanager
async def one_route_server(handler: Any) -> AsyncIterator[str]:
    """A bare aiohttp server answering ``POST /v1/chat/completions`` with ``handler``, for
    server behaviours the fake does not script; yields its base URL (with /v1)."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


@pytest.fixture
async def fake():
    async with FakeOpenAI() as server:
        yield server


# -- normal answers ---------------------------------------------------------------------------


async def test_streamed_answer_arrives_in_pieces_with_usage(fake: FakeOpenAI) -> None:
    text = "Monads are monoids in the category of endofunctors. " * 3
    fake.queue(Answer(text=text, chunk_chars=10))
    deltas = Collector()
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)

    assert completion.text == text
    assert deltas.text == text
    assert len(deltas.parts) == math.ceil(len(text) / 10)
    assert completion.finish_reason == "stop"
    assert completion.model == "fake-model"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == len(deltas.parts)
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert completion.time_to_first_token is not None
    assert 0 <= completion.time_to_first_token <= completion.latency_seconds
    assert [a.outcome for a in completion.attempts] == ["ok"]
    assert completion.attempts[0].status == 200
    assert completion.attempts[0].started_at.tzinfo is not None
    # What the client says it sent is byte-for-byte what the server received.
    (request,) = fake.chat_requests
    assert request.body == completion.request
    assert request.body["messages"] == MESSAGES
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.headers["Accept"] == "text/event-stream"
    assert "Authorization" not in request.headers


async def test_non_streamed_answer(fake: FakeOpenAI) -> None:
    deltas = Collector()
    async with ModelClient(make_settings(fake, stream=False, max_tokens=50)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)

    assert completion.text == "echo: alice: what is a monad?"
    assert deltas.parts == [completion.text]
    assert completion.usage is not None and completion.usage.completion_tokens is not None
    (request,) = fake.chat_requests
    assert request.body == completion.request
    assert request.body["stream"] is False
    assert request.body["max_tokens"] == 50
    assert "stream_options" not in request.body


async def test_stream_argument_overrides_the_setting(fake: FakeOpenAI) -> None:
    async with ModelClient(make_settings(fake, stream=True)) as client:
        await client.complete(MESSAGES, stream=False)
    assert fake.chat_requests[0].body["stream"] is False


async def test_keepalive_comments_and_reasoning_are_handled(fake: FakeOpenAI) -> None:
    fake.queue(Answer(text="42", keepalive_comments=3, reasoning="Let me think.", chunk_chars=4))
    deltas = Collector()
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)
    assert completion.text == "42" == deltas.text
    assert completion.reasoning == "Let me think."


async def test_prompt_cache_key_routes_follow_ups_to_their_cache(fake: FakeOpenAI) -> None:
    follow_up = [
        *MESSAGES,
        {"role": "assistant", "content": "echo"},
        {"role": "user", "content": "alice: ok"},
    ]
    async with ModelClient(make_settings(fake)) as client:
        first = await client.complete(MESSAGES, cache=CacheHints(key="conversation-1"))
        elsewhere = await client.complete(follow_up, cache=CacheHints(key="conversation-2"))
        second = await client.complete(follow_up, cache=CacheHints(key="conversation-1"))
        await client.complete(MESSAGES)
    bodies = [request.body for request in fake.chat_requests]
    assert [b.get("prompt_cache_key") for b in bodies] == [
        "conversation-1",
        "conversation-2",
        "conversation-1",
        None,
    ]
    assert first.usage is not None and first.usage.cached_prompt_tokens == 0
    assert elsewhere.usage is not None and elsewhere.usage.cached_prompt_tokens == 0
    assert second.usage is not None and second.usage.cached_prompt_tokens == count_tokens(MESSAGES)
    assert second.request == bodies[2]  # what the store keeps is what was sent


async def test_an_operators_extra_body_wins_over_the_cache_key(fake: FakeOpenAI) -> None:
    settings = make_settings(fake, extra_body={"prompt_cache_key": "mine"})
    async with ModelClient(settings) as client:
        await client.complete(MESSAGES, cache=CacheHints(key="conversation-1"))
    assert fake.chat_requests[0].body["prompt_cache_key"] == "mine"


async def test_no_usage_when_the_server_sends_none(fake: FakeOpenAI) -> None:
    fake.queue(Answer(text="hi", usage=False))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "hi"
    assert completion.usage is None


async def test_missing_done_after_finish_reason_is_tolerated(fake: FakeOpenAI) -> None:
    # The SDK ends the stream at [DONE] or at the end of the body without telling which.
    fake.queue(Answer(text="done soon", send_done=False))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "done soon"
    assert completion.finish_reason == "stop"


async def test_rejected_stream_options_are_dropped_and_remembered() -> None:
    async with FakeOpenAI(reject_stream_options=True) as fake:
        async with ModelClient(make_settings(fake)) as client:
            first = await client.complete(MESSAGES)
            second = await client.complete(MESSAGES)
        assert first.text == second.text == "echo: alice: what is a monad?"
        assert [a.outcome for a in first.attempts] == ["retried", "ok"]
        assert first.attempts[0].status == 400
        assert "stream_options" in (first.attempts[0].error or "")
        assert "stream_options" not in first.request
        assert [a.outcome for a in second.attempts] == ["ok"]
        assert client.stream_options_supported is False
        bodies = [r.body for r in fake.chat_requests]
        assert ["stream_options" in b for b in bodies] == [True, False, False]


async def test_long_answer_with_code_streams_intact(fake: FakeOpenAI) -> None:
    text = long_answer_with_code(6000)
    fake.queue(Answer(text=text, chunk_chars=37))
    deltas = Collector()
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES, on_delta=deltas)
    assert completion.text == text == deltas.text
    assert text.count("```") >= 4


async def test_borrowed_http_client_is_left_open(fake: FakeOpenAI) -> None:
    async with httpx2.AsyncClient() as http:
        async with ModelClient(make_settings(fake), http_client=http) as client:
            await client.complete(MESSAGES)
        assert not http.is_closed
        async with ModelClient(make_settings(fake), http_client=http) as again:
            assert (await again.complete(MESSAGES)).text.startswith("echo:")


# -- retries ----------------------------------------------------------------------------------


async def test_429_is_retried_after_the_servers_retry_after(fake: FakeOpenAI) -> None:
    # Retry-After is whole seconds (RFC 9110: 1*DIGIT); a fraction is no advice.
    fake.queue(RateLimited(retry_after="1"), Answer(text="finally"))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "finally"
    limited, ok = completion.attempts
    assert (limited.status, limited.outcome) == (429, "retried")
    assert limited.retry_after_seconds == pytest.approx(1)
    assert limited.delay_seconds == pytest.approx(1)
    assert (ok.status, ok.outcome, ok.number) == (200, "ok", 2)
    # The second request really came after the wait.
    first, second = fake.chat_requests
    assert (second.received_at - first.received_at).total_seconds() >= 0.99


async def test_retry_after_is_capped(fake: FakeOpenAI) -> None:
    fake.queue(RateLimited(retry_after="100"), Answer(text="ok"))
    async with ModelClient(make_settings(fake, retry_max_seconds=0.05)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.attempts[0].retry_after_seconds == 100
    assert completion.attempts[0].delay_seconds == pytest.approx(0.05)


async def test_500_is_retried_with_jittered_exponential_backoff(fake: FakeOpenAI) -> None:
    fake.queue(Fail(500), Fail(502), Answer(text="recovered"))
    settings = make_settings(fake, retry_base_seconds=0.05)
    async with ModelClient(settings, rng=random.Random(7)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "recovered"
    assert [a.status for a in completion.attempts] == [500, 502, 200]
    first_delay = completion.attempts[0].delay_seconds
    second_delay = completion.attempts[1].delay_seconds
    assert first_delay is not None and 0.025 <= first_delay <= 0.05
    assert second_delay is not None and 0.05 <= second_delay <= 0.1
    assert len(fake.chat_requests) == 3


async def test_server_errors_give_up_after_max_retries(fake: FakeOpenAI) -> None:
    fake.queue(Fail(503, "overloaded"), Fail(503, "overloaded"), Fail(503, "overloaded"))
    async with ModelClient(make_settings(fake, max_retries=2)) as client:
        with pytest.raises(ModelServerError) as caught:
            await client.complete(MESSAGES)
    error = caught.value
    assert [a.outcome for a in error.attempts] == ["retried", "retried", "failed"]
    assert error.attempts[-1].delay_seconds is None
    assert "overloaded" in error.detail and "gave up after 3" in error.detail
    assert error.user_message == "The model server had a problem, try again in a minute."
    assert error.request is not None and error.request["messages"] == MESSAGES
    assert len(fake.chat_requests) == 3


async def test_retry_that_would_pass_the_deadline_is_not_attempted(fake: FakeOpenAI) -> None:
    fake.queue(RateLimited(retry_after="5"))
    settings = make_settings(fake, timeout_seconds=1, retry_max_seconds=10)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelRateLimitedError) as caught:
            await client.complete(MESSAGES)
    assert "would pass timeout_seconds" in caught.value.detail
    assert [a.outcome for a in caught.value.attempts] == ["failed"]
    assert len(fake.chat_requests) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = make_settings(None, base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelConnectionError) as caught:
            await client.complete(MESSAGES)
    error = caught.value
    assert len(error.attempts) == 3
    assert all(a.status is None for a in error.attempts)
    assert "base_url" in error.detail
    assert error.user_message == "The model is not answering right now, try again in a minute."


# -- errors that are not retried --------------------------------------------------------------


async def test_401_is_not_retried_and_never_leaks_the_key() -> None:
    secret = "sk-test-0123456789abcdef"
    async with FakeOpenAI(api_key="the-right-key") as fake:
        fake.default = Fail(401, f"Incorrect API key provided: {secret}.")
        settings = make_settings(fake, api_key=SecretStr(secret))
        async with ModelClient(settings) as client:
            with pytest.raises(ModelAuthError) as caught:
                await client.complete(MESSAGES)
            client_repr = repr(client)
        (request,) = fake.chat_requests
    error = caught.value
    assert request.headers["Authorization"] == f"Bearer {secret}"  # it was sent...
    assert error.status == 401
    assert "check [model] api_key" in error.detail
    assert len(error.attempts) == 1 and error.attempts[0].outcome == "failed"
    # ...and it appears nowhere else.
    for text in (
        str(error),
        repr(error),
        error.detail,
        error.user_message,
        client_repr,
        repr(settings),
        settings.model_dump_json(),
        repr(error.attempts),
    ):
        assert secret not in text


async def test_missing_key_gets_401_from_a_server_that_wants_one() -> None:
    async with FakeOpenAI(api_key="needed") as fake:
        async with ModelClient(make_settings(fake)) as client:
            with pytest.raises(ModelAuthError, match="Incorrect API key"):
                await client.complete(MESSAGES)
        async with ModelClient(make_settings(fake, api_key=SecretStr("needed"))) as client:
            assert (await client.complete(MESSAGES)).text.startswith("echo:")


async def test_other_4xx_is_not_retried_and_shows_the_server_message(fake: FakeOpenAI) -> None:
    fake.queue(Fail(400, "This model's maximum context length is 8192 tokens."))
    async with ModelClient(make_settings(fake, max_retries=5)) as client:
        with pytest.raises(ModelRejectedError) as caught:
            await client.complete(MESSAGES)
    assert "maximum context length" in caught.value.detail
    assert caught.value.status == 400
    assert len(fake.chat_requests) == 1


async def test_404_points_at_base_url_and_model_name(fake: FakeOpenAI) -> None:
    fake.queue(Fail(404, "model 'nope' not found"))
    async with ModelClient(make_settings(fake, name="nope")) as client:
        with pytest.raises(ModelRejectedError) as caught:
            await client.complete(MESSAGES)
    assert "base_url" in caught.value.detail and "'nope'" in caught.value.detail


async def test_html_error_page_is_summarised(fake: FakeOpenAI) -> None:
    fake.queue(Fail(502, raw_body="<html><body>Bad Gateway (nginx)</body></html>"))
    async with ModelClient(make_settings(fake, max_retries=0)) as client:
        with pytest.raises(ModelServerError, match="Bad Gateway"):
            await client.complete(MESSAGES)


async def test_exception_in_on_delta_propagates_unchanged(fake: FakeOpenAI) -> None:
    class Boom(Exception):
        pass

    async def explode(text: str) -> None:
        raise Boom(text)

    async with ModelClient(make_settings(fake)) as client:
        with pytest.raises(Boom):
            await client.complete(MESSAGES, on_delta=explode)
    assert len(fake.chat_requests) == 1


# -- broken streams, stalls and timeouts ------------------------------------------------------


async def test_bad_json_in_the_stream_is_a_protocol_error(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("bad_json"))
    async with ModelClient(make_settings(fake, max_retries=3)) as client:
        with pytest.raises(ModelProtocolError, match="bad JSON") as caught:
            await client.complete(MESSAGES)
    assert caught.value.partial_text == BrokenStream("bad_json").text[:16]  # two 8-char chunks
    assert len(fake.chat_requests) == 1


async def test_bad_json_unstreamed_is_a_protocol_error(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("bad_json"))
    async with ModelClient(make_settings(fake, stream=False)) as client:
        with pytest.raises(ModelProtocolError, match="not JSON"):
            await client.complete(MESSAGES)


async def test_hang_mid_stream_hits_the_idle_timeout(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("hang"))
    settings = make_settings(fake, idle_timeout_seconds=0.3, max_retries=0)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelStalledError) as caught:
            await client.complete(MESSAGES)
    assert "idle_timeout_seconds=0.3" in caught.value.detail
    assert caught.value.partial_text == BrokenStream("hang").text[:16]


async def test_stall_before_any_delivery_is_retried(fake: FakeOpenAI) -> None:
    fake.queue(Hang(), Answer(text="second try"))
    settings = make_settings(fake, idle_timeout_seconds=0.3, max_retries=1)
    async with ModelClient(settings) as client:
        completion = await client.complete(MESSAGES, on_delta=Collector())
    assert completion.text == "second try"
    assert completion.attempts[0].outcome == "retried"
    assert "ModelStalledError" in (completion.attempts[0].error or "")


async def test_stream_ending_without_finish_is_an_error_and_retried(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("eof"), Answer(text="whole"))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)  # no on_delta: nothing was shown yet
    assert completion.text == "whole"
    assert "ended before the answer was finished" in (completion.attempts[0].error or "")


async def test_drop_after_delivery_raises_partial_and_does_not_retry(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("drop", after_chunks=3), Answer(text="never requested"))
    deltas = Collector()
    async with ModelClient(make_settings(fake, max_retries=3)) as client:
        with pytest.raises(ModelPartialError) as caught:
            await client.complete(MESSAGES, on_delta=deltas)
    error = caught.value
    assert error.partial_text == deltas.text == BrokenStream("drop").text[:24]
    assert isinstance(error.cause, ModelConnectionError)
    assert error.user_message == "The model stopped in the middle of its answer."
    assert [a.outcome for a in error.attempts] == ["failed"]
    assert len(fake.chat_requests) == 1


async def test_drop_without_delivery_is_retried(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("drop"), Answer(text="again"))
    async with ModelClient(make_settings(fake)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "again"
    assert [a.outcome for a in completion.attempts] == ["retried", "ok"]


async def test_total_timeout_while_streaming_slowly(fake: FakeOpenAI) -> None:
    fake.queue(Answer(text="slow " * 50, chunk_chars=5, chunk_delay=0.05))
    settings = make_settings(fake, timeout_seconds=0.4)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelTimeoutError) as caught:
            await client.complete(MESSAGES)
    error = caught.value
    assert "timeout_seconds=0.4" in error.detail
    assert error.partial_text.startswith("slow slow")
    assert [a.outcome for a in error.attempts] == ["failed"]
    assert error.user_message == "The model took too long to answer, try again later."


async def test_total_timeout_after_delivery_is_partial(fake: FakeOpenAI) -> None:
    fake.queue(Answer(text="slow " * 50, chunk_chars=5, chunk_delay=0.05))
    settings = make_settings(fake, timeout_seconds=0.4)
    deltas = Collector()
    async with ModelClient(settings) as client:
        with pytest.raises(ModelPartialError) as caught:
            await client.complete(MESSAGES, on_delta=deltas)
    assert isinstance(caught.value.cause, ModelTimeoutError)
    assert caught.value.partial_text == deltas.text != ""


async def test_unstreamed_hang_hits_the_total_timeout(fake: FakeOpenAI) -> None:
    fake.queue(Hang())
    settings = make_settings(fake, stream=False, timeout_seconds=0.3)
    async with ModelClient(settings) as client:
        with pytest.raises(ModelTimeoutError):
            await client.complete(MESSAGES)


async def test_slow_first_byte_within_limits_is_fine(fake: FakeOpenAI) -> None:
    fake.queue(Answer(text="patience", first_byte_delay=0.2, chunk_delay=0.02))
    async with ModelClient(make_settings(fake, idle_timeout_seconds=1)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "patience"
    assert completion.time_to_first_token is not None
    assert completion.time_to_first_token >= 0.19


async def test_mid_stream_error_object_is_a_server_error() -> None:
    # OpenRouter reports upstream failures as a data line carrying {"error": ...}.
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b": OPENROUTER PROCESSING\n\n")
        await response.write(
            b'data: {"error": {"message": "Provider returned error", "code": 502}}\n\n'
        )
        await response.write_eof()
        return response

    async with one_route_server(handler) as base_url:
        settings = make_settings(None, base_url=base_url, max_retries=0)
        async with ModelClient(settings) as client:
            with pytest.raises(ModelServerError, match="Provider returned error") as caught:
                await client.complete(MESSAGES)
        assert caught.value.status == 502


async def test_garbled_parts_of_a_stream_are_passed_over() -> None:
    # A proxy that mangles some events must not crash the answer.
    from aiohttp import web

    events = [
        {"choices": [{"index": 0, "delta": "not an object"}]},
        {"choices": [{"index": 0, "delta": {"content": 42}}]},
        {"choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}]},
    ]

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async with one_route_server(handler) as base_url:
        settings = make_settings(None, base_url=base_url)
        async with ModelClient(settings) as client:
            completion = await client.complete(MESSAGES)
        assert (completion.text, completion.finish_reason) == ("fine", "stop")


# -- inputs and settings ----------------------------------------------------------------------


async def test_unserializable_messages_fail_before_sending(fake: FakeOpenAI) -> None:
    async with ModelClient(make_settings(fake)) as client:
        with pytest.raises(TypeError, match="JSON-serializable"):
            await client.complete([{"role": "user", "content": object()}])
    assert fake.chat_requests == []


def test_settings_validate_and_hide_the_key() -> None:
    settings = ModelSettings(base_url="https://openrouter.ai/api/v1/", api_key="sk-secret-1")
    assert settings.base_url == "https://openrouter.ai/api/v1"
    assert "sk-secret-1" not in repr(settings)
    assert ModelSettings(api_key="  ").api_key is None
    with pytest.raises(ValidationError, match="base_url"):
        ModelSettings(base_url="localhost:11434")
    with pytest.raises(ValidationError):
        ModelSettings(temperature=2.5)
    with pytest.raises(ValidationError):
        ModelSettings(max_tokens=0)
    with pytest.raises(ValidationError):
        ModelSettings(unknown_key=1)


def test_every_error_has_a_user_message() -> None:
    for kind in (ModelError, *ModelError.__subclasses__()):
        if kind is ModelPartialError:
            continue
        error = kind("detail for the log")
        assert error.user_message and "detail" not in error.user_message
        assert str(error) == "detail for the log"


async def test_fake_lists_models(fake: FakeOpenAI) -> None:
    async with aiohttp.ClientSession() as session, session.get(f"{fake.url}/models") as response:
        payload = await response.json()
    assert [m["id"] for m in payload["data"]] == ["fake-model"]


async def test_script_chooses_per_request(fake: FakeOpenAI) -> None:
    fake.script(lambda request: Answer(text=f"#{len(fake.chat_requests)}"))
    async with ModelClient(make_settings(fake)) as client:
        texts = [(await client.complete(MESSAGES)).text for _ in range(3)]
    assert texts == ["#1", "#2", "#3"]
    await asyncio.wait_for(fake.wait_for_chat_requests(3), 1)


async def test_unstreamed_drop_is_a_connection_error_and_retried(fake: FakeOpenAI) -> None:
    fake.queue(BrokenStream("drop"), Answer(text="complete"))
    async with ModelClient(make_settings(fake, stream=False)) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "complete"
    assert "broke mid-answer" in (completion.attempts[0].error or "")


async def test_html_page_instead_of_a_stream_is_a_protocol_error(fake: FakeOpenAI) -> None:
    # A captive portal or a misconfigured proxy answering 200 with a web page.
    fake.queue(Fail(200, raw_body="<html><body>Please log in</body></html>"))
    async with ModelClient(make_settings(fake)) as client:
        with pytest.raises(ModelProtocolError, match=r"expected an event stream.*Please log in"):
            await client.complete(MESSAGES)


@pytest.mark.parametrize("header", ["nan", "NaN", "inf", "-inf", "1e400", "-5"])
async def test_unusable_retry_after_still_retries_within_the_cap(
    fake: FakeOpenAI, header: str
) -> None:
    # A wait of nan or infinity would hold the channel until the total timeout.
    fake.queue(RateLimited(retry_after=header), Answer(text="answered"))
    settings = make_settings(fake, timeout_seconds=5, retry_max_seconds=0.3)
    loop = asyncio.get_running_loop()
    began = loop.time()
    async with ModelClient(settings) as client:
        completion = await client.complete(MESSAGES)
    assert completion.text == "answered"
    assert loop.time() - began < 1.5
    assert len(fake.chat_requests) == 2


async def test_sampling_keys_are_sent_only_when_set(fake: FakeOpenAI) -> None:
    async with ModelClient(make_settings(fake)) as client:
        await client.complete(MESSAGES)
    body = fake.chat_requests[0].body
    for key in ("temperature", "max_tokens", "top_p", "top_k", "seed", "stop"):
        assert key not in body  # reasoning models reject some of them
    settings = make_settings(
        fake,
        temperature=0.3,
        top_p=0.8,
        top_k=20,
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        seed=7,
        stop=["</answer>"],
        extra_body={"repetition_penalty": 1.1, "reasoning": {"effort": "low"}},
        extra_headers={"HTTP-Referer": "https://example.org", "X-Title": "threadwise"},
    )
    async with ModelClient(settings) as client:
        completion = await client.complete(MESSAGES)
    request = fake.chat_requests[1]
    assert request.body == completion.request
    expected = {"temperature": 0.3, "top_p": 0.8, "top_k": 20, "presence_penalty": 0.5,
                "frequency_penalty": -0.5, "seed": 7, "stop": ["</answer>"],
                "repetition_penalty": 1.1, "reasoning": {"effort": "low"}}  # fmt: skip
    assert {key: request.body.get(key) for key in expected} == expected
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["http-referer"] == "https://example.org"
    assert headers["x-title"] == "threadwise"


def test_provider_settings_are_checked() -> None:
    anthropic = ModelSettings(provider="anthropic")
    assert anthropic.base_url == "https://api.anthropic.com"
    assert ModelSettings(provider="anthropic", base_url="http://proxy:8080").base_url == (
        "http://proxy:8080"
    )
    with pytest.raises(ValidationError, match=r"base_url: .* without /v1"):
        ModelSettings(provider="anthropic", base_url="http://127.0.0.1:11434/v1")
    with pytest.raises(ValidationError, match='seed: not supported with provider = "anthropic"'):
        ModelSettings(provider="anthropic", seed=1)
    with pytest.raises(ValidationError, match="extra_body: 'messages' is set by the bot"):
        ModelSettings(extra_body={"messages": []})
    with pytest.raises(ValidationError):
        ModelSettings(provider="gemini")
    with pytest.raises(ValidationError):
        ModelSettings(top_p=1.5)
    assert "hidden-value" not in repr(ModelSettings(extra_headers={"X-Key": "hidden-value"}))


async def test_key_stays_out_of_debug_logs(fake: FakeOpenAI, caplog) -> None:
    secret = "sk-logged-0123456789abcdef"
    caplog.set_level(logging.DEBUG)
    async with ModelClient(make_settings(fake, api_key=SecretStr(secret))) as client:
        await client.complete(MESSAGES)
    assert fake.chat_requests[0].headers["Authorization"] == f"Bearer {secret}"
    assert caplog.records  # the SDK and HTTP loggers did talk
    assert all(secret not in record.getMessage() for record in caplog.records)


async def test_server_ignoring_stream_true_answers_in_one_piece() -> None:
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        message = {"role": "assistant", "content": "all at once"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0,
                                  "model": "whole-model", "choices": [choice]})  # fmt: skip

    async with one_route_server(handler) as base_url:
        settings = make_settings(None, base_url=base_url)
        deltas = Collector()
        async with ModelClient(settings) as client:
            completion = await client.complete(MESSAGES, on_delta=deltas)
        assert completion.text == deltas.text == "all at once"
        assert completion.model == "whole-model"


async def test_openai_environment_variables_are_not_sent(fake: FakeOpenAI, monkeypatch) -> None:
    # The SDK reads these by default; the bot sends only what its config says, to any server.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-the-environment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-the-environment")
    async with ModelClient(make_settings(fake)) as client:
        await client.complete(MESSAGES)
    sent = " ".join(f"{k}: {v}" for k, v in fake.chat_requests[0].headers.items())
    assert "environment" not in sent and "Authorization" not in sent
