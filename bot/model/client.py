"""One answer from the model: retries, deadlines and delivery, whichever provider speaks.

The SDKs do the HTTP with their own retries off, so that the policy lives here and every attempt
is logged: connection errors, stalls, 408, 429 and 5xx are retried with exponential backoff and
jitter (a usable ``Retry-After`` wins, capped by ``retry_max_seconds``); once streamed text
reached ``on_delta`` nothing is retried (it would repeat; :class:`ModelPartialError` keeps it);
a total deadline, a connect timeout and an idle timeout between streamed events bound every wait.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import httpx2

from bot.model.call import (
    Attempt,
    Call,
    CallbackFailed,
    Completion,
    DeltaCallback,
    Usage,
)
from bot.model.errors import (
    ModelConnectionError,
    ModelError,
    ModelPartialError,
    ModelTimeoutError,
    sdk_error,
)
from bot.model.settings import ModelSettings

__all__ = ["Attempt", "Completion", "DeltaCallback", "ModelClient", "Usage"]


class Provider(Protocol):
    """One API behind its SDK: builds the exact body and reads one answer into a ``Call``."""

    sdk: Any  # the SDK module, whose exception classes sdk_error() maps
    url: str
    settings: ModelSettings  # read for every request's body

    def build(self, messages: Sequence[Mapping[str, Any]], stream: bool) -> dict[str, Any]: ...
    async def send(self, body: dict[str, Any], call: Call) -> int: ...  # the HTTP status
    def retry_at_once(self, error: ModelError) -> bool: ...  # fixed by a changed request


# Settings the client reads once, when it opens its connection to the server.
CONNECTION_KEYS = ("provider", "base_url", "api_key", "extra_headers", "connect_timeout_seconds")


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
        self._owns_http = http_client is None
        self._http = http_client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(None, connect=settings.connect_timeout_seconds)
        )
        if settings.provider == "anthropic":
            from bot.model.anthropic_provider import AnthropicProvider as Chosen
        else:
            from bot.model.openai_provider import OpenAIProvider as Chosen  # type: ignore[assignment]
        self.provider: Provider = Chosen(settings, self._http)
        self.url = self.provider.url
        secrets = [settings.api_key] if settings.api_key else []
        self._secrets = [s.get_secret_value() for s in [*secrets, *settings.extra_headers.values()]]

    def apply_settings(self, settings: ModelSettings) -> None:
        """Take a reloaded config's settings from the next request on (sampling, name, timeouts,
        retries...); the connection keeps what it was opened with (``CONNECTION_KEYS``)."""
        kept = {key: getattr(self.settings, key) for key in CONNECTION_KEYS}
        self.settings = settings.model_copy(update=kept)
        self.provider.settings = self.settings

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
        self, messages: Sequence[Mapping[str, Any]], *, stream: bool | None = None
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` would send now; ``TypeError`` if it is not JSON."""
        body = self.provider.build(messages, self.settings.stream if stream is None else stream)
        try:
            return json.loads(json.dumps(body, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"chat messages are not JSON-serializable: {exc}") from exc

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        on_delta: DeltaCallback | None = None,
        stream: bool | None = None,
    ) -> Completion:
        """Answer ``messages`` (OpenAI chat format; a provider may translate them).

        ``on_delta`` gets the text as it arrives (once, whole, when not streaming). Raises a
        :class:`ModelError`; an exception raised by ``on_delta`` propagates unchanged.
        """
        stream = self.settings.stream if stream is None else stream
        self.build_request(messages, stream=stream)  # fail fast on unserializable input
        call = Call(self.settings, on_delta)
        deadline = asyncio.timeout(self.settings.timeout_seconds)
        try:
            async with deadline:
                return await self._run(messages, stream, call)
        except CallbackFailed as failed:
            raise failed.original from None
        except TimeoutError:
            if not deadline.expired():
                raise
            error: ModelError = ModelTimeoutError(
                f"no complete answer within timeout_seconds={self.settings.timeout_seconds:g} "
                f"({len(call.attempts) + bool(call.began)} attempt(s), "
                f"{len(call.text)} characters received)"
            )
            if call.began is not None:  # else it struck in a backoff wait, already logged
                self._log(call, stream, None, "failed", error)
            final = ModelPartialError(error, call.text) if call.delivered else error
            raise self._finish(final, call) from None

    async def _run(
        self, messages: Sequence[Mapping[str, Any]], stream: bool, call: Call
    ) -> Completion:
        retries = 0
        while True:
            body = call.request = self.build_request(messages, stream=stream)
            call.fresh()
            call.began = (time.monotonic(), datetime.now(UTC))
            try:
                status = await self.provider.send(body, call)
                if stream and call.finish_reason is None:
                    raise ModelConnectionError(
                        f"the stream from {self.url} ended before the answer was finished "
                        f"({len(call.text)} characters received)"
                    )
            except (ModelError, self.provider.sdk.APIError, httpx2.TransportError, ValueError) as e:
                sdk = self.provider.sdk
                error = (
                    e
                    if isinstance(e, ModelError)
                    else sdk_error(e, sdk, self.url, self.settings, stream)
                )
                if call.delivered:
                    self._log(call, stream, error.status, "failed", error)
                    raise self._finish(ModelPartialError(error, call.text), call) from error
                if self.provider.retry_at_once(error):
                    self._log(call, stream, error.status, "retried", error, 0.0)
                    continue
                delay = self._retry_delay(retries, error) if error.retryable else None
                if delay is not None and retries >= self.settings.max_retries:
                    error.detail += f" (gave up after {retries + 1} attempt(s))"
                    delay = None
                left = call.started + self.settings.timeout_seconds - time.monotonic()
                if delay is not None and delay >= left:
                    error.detail += (
                        f" (not retried: waiting {delay:.3g}s would pass timeout_seconds)"
                    )
                    delay = None
                outcome = "failed" if delay is None else "retried"
                self._log(call, stream, error.status, outcome, error, delay)
                if delay is None:
                    raise self._finish(error, call) from None
                retries += 1
                await asyncio.sleep(delay)
                continue
            self._log(call, stream, status, "ok", None)
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
                warnings=tuple(call.warnings),
            )

    def _log(
        self,
        call: Call,
        stream: bool,
        status: int | None,
        outcome: Literal["ok", "retried", "failed"],
        error: ModelError | None,
        delay: float | None = None,
    ) -> None:
        assert call.began is not None
        (began, at), call.began = call.began, None
        call.attempts.append(
            Attempt(
                number=len(call.attempts) + 1,
                started_at=at,
                duration_seconds=time.monotonic() - began,
                stream=stream,
                status=status,
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
        error.args, error.attempts = (error.detail,), tuple(call.attempts)
        error.request, error.partial_text = call.request, error.partial_text or call.text
        return error

    def _retry_delay(self, retries_done: int, error: ModelError) -> float:
        cap = self.settings.retry_max_seconds
        if error.retry_after is not None:
            return min(error.retry_after, cap)
        ceiling = self.settings.retry_base_seconds * (2**retries_done)
        # "Equal jitter": never less than half the backoff, so retries really do slow down,
        # yet spread out so several bots behind one server do not retry in lockstep.
        return min(ceiling / 2 + self._rng.uniform(0, ceiling / 2), cap)
