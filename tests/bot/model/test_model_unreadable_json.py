"""Deeply nested JSON from the model server, and Retry-After headers read by their grammar.

A server (or whatever sits in front of it) that sends JSON nested deeper than Python reads must
be named as a malformed answer in one line, never reach the member as "Something went wrong" with
a RecursionError traceback in the log. Both providers, streamed and whole answers, error bodies
and error events, against bare local aiohttp servers.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bot.config.model_settings import ModelSettings
from bot.demo.openai_server import Answer, FakeOpenAI, RateLimited
from bot.model.client import ModelClient
from bot.model.errors import ModelError, ModelProtocolError, retry_after
from tests.bot.model.test_model_client import MESSAGES

DEEP = "[" * 100_000 + "]" * 100_000  # far past any recursion limit
ROUTES = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


@contextlib.asynccontextmanager
async def server(provider: str, reply: web.StreamResponse | None, body: str) -> AsyncIterator[str]:
    """A bare server answering the provider's route with ``body``: as an event stream when
    ``reply`` is None (``body`` holds the raw SSE text), else ``reply`` itself."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        if reply is not None:
            return reply
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body.encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post(ROUTES[provider], handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    finally:
        await runner.cleanup()


def settings(provider: str, url: str, **overrides: Any) -> ModelSettings:
    values: dict[str, Any] = {
        "provider": provider,
        "base_url": url,
        "name": "fake-model",
        "timeout_seconds": 10,
        "idle_timeout_seconds": 2,
        "retry_base_seconds": 0.01,
        "max_retries": 0,
    }
    return ModelSettings(**(values | overrides))


def deep_event(provider: str) -> str:
    if provider == "openai":
        return f"data: {DEEP}\n\n"
    return f"event: content_block_delta\ndata: {DEEP}\n\n"


def deep_error_event(provider: str) -> str:
    error = f'{{"type": "overloaded_error", "message": {DEEP}}}'
    if provider == "openai":
        return f'data: {{"error": {error}}}\n\n'
    return f'event: error\ndata: {{"type": "error", "error": {error}}}\n\n'


async def ask(provider: str, url: str, *, stream: bool) -> ModelError:
    async with ModelClient(settings(provider, url, stream=stream)) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(MESSAGES)
    return caught.value


def one_line_naming_the_server(error: ModelError) -> None:
    assert "\n" not in error.detail
    assert "nested too deeply" in error.detail
    assert error.__cause__ is None or not isinstance(error.__cause__, RecursionError)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_deeply_nested_stream_event_is_a_protocol_error(provider: str) -> None:
    async with server(provider, None, deep_event(provider)) as url:
        error = await ask(provider, url, stream=True)
    assert isinstance(error, ModelProtocolError)
    one_line_naming_the_server(error)
    assert "a stream event from" in error.detail


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_deeply_nested_error_event_is_a_protocol_error(provider: str) -> None:
    async with server(provider, None, deep_error_event(provider)) as url:
        error = await ask(provider, url, stream=True)
    assert isinstance(error, ModelProtocolError)
    one_line_naming_the_server(error)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_deeply_nested_whole_answer_is_a_protocol_error(provider: str) -> None:
    reply = web.Response(text=DEEP, content_type="application/json")
    async with server(provider, reply, "") as url:
        error = await ask(provider, url, stream=False)
    assert isinstance(error, ModelProtocolError)
    one_line_naming_the_server(error)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [400, 429, 500])
async def test_a_deeply_nested_error_body_keeps_its_status_and_names_the_body(
    provider: str, status: int
) -> None:
    body = json.dumps({"error": {"message": "x"}}).replace('"x"', DEEP)
    reply = web.Response(status=status, text=body, content_type="application/json")
    async with server(provider, reply, "") as url:
        error = await ask(provider, url, stream=True)
    assert error.status == status
    one_line_naming_the_server(error)


# -- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [" 1_000 ", "1_000", "1e3", "-1", "+5", "inf", "nan", "0x10", "1.5", "٣", "10 20", ""],
)
def test_retry_after_outside_the_http_grammar_is_no_advice(value: str) -> None:
    assert retry_after({"retry-after": value}) is None


@pytest.mark.parametrize(("value", "seconds"), [("0", 0.0), ("120", 120.0), (" 7\t", 7.0)])
def test_retry_after_delay_seconds(value: str, seconds: float) -> None:
    assert retry_after({"retry-after": value}) == seconds


def test_retry_after_http_date_and_milliseconds() -> None:
    assert retry_after({"retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"}) == 0.0  # in the past
    assert retry_after({"retry-after": "Sun Nov  6 08:49:37 1994"}) == 0.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after-ms": "1e3", "retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "Sunday 1e3"}) is None


async def test_a_retry_after_with_underscores_waits_the_default_backoff() -> None:
    async with FakeOpenAI() as fake:
        fake.queue(RateLimited(retry_after=" 1_000 "), Answer(text="answered"))
        values = {"base_url": fake.url, "name": "fake-model", "retry_base_seconds": 0.01}
        async with ModelClient(ModelSettings(**values)) as client:
            completion = await client.complete(MESSAGES)
    assert completion.text == "answered"
    limited = completion.attempts[0]
    assert limited.retry_after_seconds is None
    assert limited.delay_seconds is not None and limited.delay_seconds < 0.02
