"""One answer from the model: retries, deadlines and delivery, whichever provider speaks.

The SDKs do the HTTP with their own retries off, so that one policy holds for both and every
attempt is logged: connection errors, stalls, 408, 429 and 5xx are retried with exponential
backoff and jitter (a usable ``Retry-After`` wins, capped by ``retry_max_seconds``: an SDK would
wait whatever the server says); once streamed text reached ``on_delta`` nothing is retried (it
would repeat; :class:`ModelPartialError` keeps it). A total deadline, a connect timeout and an
idle timeout between reads bound every wait.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx2

from bot.config.model_settings import CONNECTION_KEYS, ModelSettings
from bot.model.call import (
    Attempt,
    CacheHints,
    Call,
    CallbackFailed,
    Completion,
    DeltaCallback,
)
from bot.model.errors import (
    ModelConnectionError,
    ModelError,
    ModelPartialError,
    ModelProtocolError,
    ModelTimeoutError,
)
from bot.model.provider import Provider, sdk_error
from bot.model.tool_wire import tool_calls, tool_fields
from bot.tools.spec import ToolSpec


class ModelClient:
    """Talks to one model endpoint; use as ``async with ModelClient(settings) as client``.

    ``http_client`` shares an ``httpx2.AsyncClient`` (then left open); ``rng`` feeds the jitter.
    """

    def __init__(
        self,
        settings: ModelSettings,
        *,
        http_client: httpx2.AsyncClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings, self._rng = settings, rng or random.Random()
        self._owns_http, self._http = http_client is None, http_client or httpx2.AsyncClient()
        if settings.provider == "anthropic":  # imported only when used: it is a large SDK
            from bot.model.anthropic_provider import AnthropicProvider as Chosen
        else:
            from bot.model.openai_provider import OpenAIProvider as Chosen  # type: ignore[assignment]
        self.provider: Provider = Chosen(settings, self._http)
        self.url = self.provider.url
        secrets = [settings.api_key, *settings.extra_headers.values()]
        self._secrets = [s.get_secret_value() for s in secrets if s is not None]

    def pinned(self, settings: ModelSettings) -> ModelSettings:
        """``settings`` over this client's connection: the ``CONNECTION_KEYS`` it was opened
        with (endpoint, key, headers) kept, whatever ``settings`` say of them."""
        kept = {key: getattr(self.settings, key) for key in CONNECTION_KEYS}
        return settings.model_copy(update=kept)

    def apply_settings(self, settings: ModelSettings) -> None:
        """Take a reloaded config's settings from the next request on; the connection keeps
        what it was opened with (``CONNECTION_KEYS``)."""
        self.settings = self.provider.settings = self.pinned(settings)

    def with_settings(self, settings: ModelSettings) -> ModelClient:
        """A client for other per-request settings (a channel's persona, sampling or model
        name) over this one's connection: same HTTP pool, same endpoint and key."""
        client = ModelClient(self.pinned(settings), http_client=self._http, rng=self._rng)
        if hasattr(self.provider, "stream_options_ok"):  # what the server refused, learned once
            client.provider.stream_options_ok = self.provider.stream_options_ok  # type: ignore[attr-defined]
        return client

    def __repr__(self) -> str:
        key = "set" if self.settings.api_key else "none"
        return f"ModelClient(url={self.url!r}, model={self.settings.name!r}, api_key={key})"

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    @property
    def stream_options_supported(self) -> bool:
        """False once an OpenAI-compatible server rejected ``stream_options``."""
        return getattr(self.provider, "stream_options_ok", False)

    def build_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        stream: bool | None = None,
        cache: CacheHints | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` would send now; ``TypeError`` if it is not JSON.
        ``extra`` fields (the tools offered) are added to the provider's body."""
        stream = self.settings.stream if stream is None else stream
        try:
            body = self.provider.build(messages, stream, cache)
        except RecursionError:  # a message nested past what the translation can walk
            raise ModelProtocolError(
                "the request could not be built: a message is nested too deeply"
            ) from None
        body |= extra or {}
        try:
            return json.loads(json.dumps(body, ensure_ascii=False, allow_nan=False))
        except RecursionError:
            raise ModelProtocolError(
                "the request could not be built: a message is nested too deeply"
            ) from None
        except (TypeError, ValueError) as exc:
            raise TypeError(f"chat messages are not JSON-serializable: {exc}") from exc

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        on_delta: DeltaCallback | None = None,
        stream: bool | None = None,
        cache: CacheHints | None = None,
        tools: Sequence[ToolSpec] = (),
        final: bool = False,
        bare: bool = False,
    ) -> Completion:
        """Answer ``messages`` (OpenAI chat format; a provider may translate them).

        ``on_delta`` gets the text as it arrives (once, whole, when not streaming); ``cache``
        tells the provider where the prompt's reusable start ends and whose it is. ``tools``
        are offered to the model (``final``: declared, not to be called; ``bare``: not even
        declared where the provider allows it, ``tool_wire.tool_fields``); the calls it asks
        for are in ``Completion.tool_calls`` (running them is ``tool_loop``'s job). Raises a
        :class:`ModelError`; an exception raised by ``on_delta`` propagates unchanged.
        """
        stream = self.settings.stream if stream is None else stream
        extra = tool_fields(self.settings.provider, tools, final, bare)
        # Built before any wait (a bad request fails fast) and sent by the first attempt; a
        # retry builds it again (the provider may have learned what the server refuses).
        body = self.build_request(messages, stream=stream, cache=cache, extra=extra)
        call, limit = Call(on_delta), self.settings.timeout_seconds
        try:
            async with asyncio.timeout(limit) as deadline:
                return await self._attempts(messages, stream, body, call, cache, extra)
        except CallbackFailed as failed:
            raise failed.__cause__ from None  # type: ignore[misc]
        except TimeoutError:
            if not deadline.expired():
                raise
            tries = len(call.attempts) + call.in_flight
            error: ModelError = ModelTimeoutError(
                f"no complete answer within timeout_seconds={limit:g} ({tries} attempt(s), "
                f"{len(call.text)} characters received)"
            )
            if call.in_flight:  # else it struck in a backoff wait, already logged
                self._log(call, stream, "failed", error)
            final = ModelPartialError(error, call.text) if call.delivered else error
            raise self._finish(final, call) from None

    async def _attempts(
        self,
        messages: Sequence[Mapping[str, Any]],
        stream: bool,
        body: dict[str, Any],
        call: Call,
        cache: CacheHints | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        sdk, retries = self.provider.sdk, 0
        while True:
            if call.attempts:  # a retry
                body = self.build_request(messages, stream=stream, cache=cache, extra=extra)
            call.request = body
            call.fresh()
            try:
                await self.provider.send(body, call)
                if stream and call.finish_reason is None:
                    raise ModelConnectionError(
                        f"the stream from {self.url} ended before the answer was finished "
                        f"({len(call.text)} characters received)"
                    )
            except (ModelError, sdk.APIError, httpx2.TransportError, ValueError) as e:
                error = (
                    e if isinstance(e, ModelError) else sdk_error(e, self.provider, call, stream)
                )
                if call.delivered:
                    self._log(call, stream, "failed", error)
                    raise self._finish(ModelPartialError(error, call.text), call) from error
                at_once = self.provider.retry_at_once(error)  # a changed request may pass
                delay = 0.0 if at_once else self._delay(retries, error, call)
                self._log(call, stream, "failed" if delay is None else "retried", error, delay)
                if delay is None:
                    raise self._finish(error, call) from None
                retries += not at_once
                await asyncio.sleep(delay)
                continue
            self._log(call, stream, "ok")
            first = call.first_token_at
            return Completion(
                text=call.text,
                finish_reason=call.finish_reason,
                usage=call.usage,
                model=call.model or self.settings.name,
                reasoning="".join(call.reasoning),
                latency_seconds=time.monotonic() - call.started,
                time_to_first_token=None if first is None else first - call.started,
                attempts=tuple(call.attempts),
                request=body,
                tool_calls=tool_calls(call),
            )

    def _delay(self, retries: int, error: ModelError, call: Call) -> float | None:
        """The wait before the next attempt; None (and why, in the detail) when there is none."""
        settings = self.settings
        if not error.retryable:
            return None
        if retries >= settings.max_retries:
            error.detail += f" (gave up after {retries + 1} attempt(s))"
            return None
        # "Equal jitter": never less than half the backoff, so retries really do slow down,
        # yet spread out so several bots behind one server do not retry in lockstep.
        ceiling = settings.retry_base_seconds * 2**retries
        wait = ceiling / 2 + self._rng.uniform(0, ceiling / 2)
        delay = min(
            wait if error.retry_after is None else error.retry_after, settings.retry_max_seconds
        )
        if delay >= call.started + settings.timeout_seconds - time.monotonic():
            error.detail += f" (not retried: waiting {delay:.3g}s would pass timeout_seconds)"
            return None
        return delay

    def _log(
        self,
        call: Call,
        stream: bool,
        outcome: Literal["ok", "retried", "failed"],
        error: ModelError | None = None,
        delay: float | None = None,
    ) -> None:
        call.in_flight = False
        call.attempts.append(
            Attempt(
                number=len(call.attempts) + 1,
                started_at=call.began_at,
                duration_seconds=time.monotonic() - call.began,
                stream=stream,
                status=error.status if error else call.status,
                outcome=outcome,
                error=self._redact(f"{type(error).__name__}: {error.detail}") if error else None,
                retry_after_seconds=error.retry_after if error else None,
                delay_seconds=delay,
            )
        )

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***") if len(secret) >= 4 else text
        return text

    def _finish(self, error: ModelError, call: Call) -> ModelError:
        error.detail = self._redact(error.detail)
        error.args, error.attempts, error.request = (
            (error.detail,),
            tuple(call.attempts),
            call.request,
        )
        error.partial_text = error.partial_text or call.text
        return error
