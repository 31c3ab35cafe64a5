"""What both providers share: posting through their SDK and reading the answer, whole or
streamed, into a ``Call``.

The events are read as plain JSON (``cast_to=object``): a typed object per event cost about
0.1 ms of CPU each, which under load delayed every other answer sharing the event loop. The
idle timeout is the HTTP read timeout, so a stream is stalled after that long without a byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2

from bot.config.model_settings import ModelSettings
from bot.model.call import CacheHints, Call
from bot.model.errors import (
    ModelConnectionError,
    ModelError,
    ModelProtocolError,
    ModelStalledError,
    reported_error,
    status_error,
    too_deep,
    unreadable_event,
)


class Provider:
    """One API behind its SDK; subclasses build the body and read an answer and its events."""

    sdk: Any  # the SDK module, whose exception classes sdk_error maps
    path: str  # below base_url
    headers: dict[str, Any]  # sent with every request, beside the SDK's own
    client: Any  # the SDK's client

    def __init__(self, settings: ModelSettings) -> None:
        self.settings, self.url = settings, settings.base_url + self.path
        self.key = settings.api_key.get_secret_value() if settings.api_key else ""

    def build(
        self,
        messages: Sequence[Mapping[str, Any]],
        stream: bool,
        cache: CacheHints | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def whole(self, answer: dict[str, Any], call: Call) -> None:
        raise NotImplementedError

    async def event(self, event: dict[str, Any], call: Call) -> None:
        raise NotImplementedError

    def retry_at_once(self, error: ModelError) -> bool:
        """Whether a changed request (see :meth:`build`) is worth an immediate new attempt."""
        return False

    async def send(self, body: dict[str, Any], call: Call) -> None:
        """Post ``body`` and read the answer into ``call``. The SDK is always asked for the raw
        response, so a server answering JSON to a stream request, or a web page, is read or
        named as such."""
        stream, settings = body["stream"], self.settings
        idle = settings.idle_timeout_seconds if stream else None
        timeout = httpx2.Timeout(None, connect=settings.connect_timeout_seconds, read=idle)
        accept = "text/event-stream" if stream else "application/json"
        headers = {**self.headers, **self.extra_headers, "Accept": accept}
        options = {"headers": headers, "timeout": timeout}
        answer = await self.client.post(
            self.path, body=body, cast_to=object, stream=True,
            stream_cls=self.sdk.AsyncStream[object], options=options,
        )  # fmt: skip
        response = answer.response
        call.status = response.status_code
        kind = response.headers.get("content-type", "").lower()
        async with answer:  # closes the response, however the reading ends
            try:
                await self._read(answer, response, kind, stream, call)
            except RecursionError:  # json, repr or our reading went as deep as it nests
                raise too_deep(self.url, "a stream event" if stream else "the answer") from None

    async def _read(self, answer: Any, response: Any, kind: str, stream: bool, call: Call) -> None:
        if "json" in kind or not stream:  # some servers ignore stream=true
            await self.whole(self.object(json.loads(await response.aread())), call)
        elif "text/event-stream" not in kind:
            snippet = (await response.aread())[:300].decode(errors="replace")
            raise ModelProtocolError(
                f"expected an event stream from {self.url}, got {kind or 'no'} content "
                f"type: {snippet!r}"
            )
        else:
            try:
                async for event in answer:
                    await self.event(self.object(event), call)
            except httpx2.TimeoutException:
                if call.finish_reason is None:  # else finished; only closing was late
                    raise

    @property
    def extra_headers(self) -> dict[str, str]:
        return {k: v.get_secret_value() for k, v in self.settings.extra_headers.items()}

    def object(self, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ModelProtocolError(
                f"the answer from {self.url} is not a JSON object: {value!r:.200}"
            )
        return value


def as_dict(value: object) -> dict[str, Any]:
    """A part of an answer that should be an object; anything else reads as empty."""
    return value if isinstance(value, dict) else {}


def sdk_error(exc: Exception, provider: Provider, call: Call, stream: bool) -> ModelError:
    """What an ``openai`` or ``anthropic`` SDK exception (one family of classes) means here."""
    try:
        return _sdk_error(exc, provider, call, stream)
    except RecursionError:  # reading a deeply nested error body the SDK carried
        what = "an error" if isinstance(exc, provider.sdk.APIError) else "the answer"
        return too_deep(provider.url, what)


def _sdk_error(exc: Exception, provider: Provider, call: Call, stream: bool) -> ModelError:
    sdk, settings, url = provider.sdk, provider.settings, provider.url
    if isinstance(exc, sdk.APIStatusError) and exc.status_code >= 300:
        response = exc.response
        return status_error(exc.status_code, response.text, url, settings.name, response.headers)
    chain = (exc, exc.__cause__)
    if any(isinstance(e, httpx2.ConnectTimeout) for e in chain):
        timeout = settings.connect_timeout_seconds
        return ModelConnectionError(
            f"could not connect to {url} within connect_timeout_seconds={timeout:g}"
        )
    if any(isinstance(e, httpx2.TimeoutException) for e in chain):
        idle, received = settings.idle_timeout_seconds, len(call.text)
        return ModelStalledError(
            f"no data for idle_timeout_seconds={idle:g} ({received} characters received so far)"
        )
    if reason := next((e for e in chain if isinstance(e, httpx2.ConnectError | OSError)), None):
        return ModelConnectionError(
            f"cannot reach the model at {url}: {type(reason).__name__}: {reason}"
            " — is the server running? check [model] base_url"
        )
    if isinstance(exc, sdk.APIConnectionError | httpx2.TransportError):
        return ModelConnectionError(
            f"the connection to {url} broke mid-answer: {exc.__cause__ or exc!r}"
        )
    if isinstance(exc, sdk.APIError):  # reported inside a 200 answer or its stream
        if isinstance(exc.body, str):  # the SDK could not read the event's JSON
            return unreadable_event(exc.body, url)
        return reported_error(exc.body, url, settings.name)
    what = "bad JSON in a stream data line from" if stream else "the answer is not JSON from"
    return ModelProtocolError(f"{what} {url}: {exc}")
