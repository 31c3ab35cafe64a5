"""Client for any OpenAI-compatible ``/chat/completions`` endpoint (Ollama, llama.cpp, vLLM, ...).

Why a hand-written client instead of an SDK: the bot already depends on aiohttp, the servers it
talks to each bend the protocol a little (comment lines, missing ``[DONE]``, no usage, rejecting
``stream_options``), and the work log needs to know exactly what was sent and how every attempt
went. One :class:`ModelClient` owns (or borrows) one ``aiohttp.ClientSession`` for its lifetime.

Failure policy, in one place:

* connection errors, HTTP 408, 429 and 5xx are retried with exponential backoff and jitter, a
  server's ``Retry-After`` is honoured (capped by ``retry_max_seconds``); other 4xx never are;
* once streamed text has reached the caller's ``on_delta`` a failure is never retried (the text
  would be duplicated): :class:`ModelPartialError` says so and carries the partial text;
* every wait is bounded: a total deadline (``timeout_seconds``), a connect timeout and, while
  streaming, an idle timeout between two reads, so a stuck server is an error, not a hang.

Every error is a :class:`ModelError` with a short ``user_message`` fit for Discord and a
``detail`` for the log. The API key never appears in either, nor in any repr.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, Field

from bot.context_overflow import recognize_overflow
from bot.settings_model import ModelSettings

DeltaCallback = Callable[[str], Awaitable[None]]
"""Receives each piece of answer text as it streams in (never an empty string)."""

USER_AGENT = "threadwise/0.1 (+https://github.com/threadwise)"
_ERROR_BODY_LIMIT = 16_384
_RESPONSE_LIMIT = 16 * 1024 * 1024
_AFTER_FINISH_GRACE_SECONDS = 5.0
_MAX_WARNINGS = 20
_RETRYABLE_STATUSES = frozenset({408, 429})


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Record):
    """Token counts as the server reported them (any of them may be missing)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class Attempt(_Record):
    """One HTTP request of a :meth:`ModelClient.complete` call, for the work log."""

    number: int = Field(description="1 for the first request of the call.")
    started_at: datetime = Field(description="UTC wall-clock time the request was sent.")
    duration_seconds: float
    stream: bool
    status: int | None = Field(None, description="HTTP status, None when no response came.")
    outcome: Literal["ok", "retried", "failed"]
    error: str | None = Field(None, description="Why it failed (log detail, no secrets).")
    retry_after_seconds: float | None = Field(None, description="What the server asked for.")
    delay_seconds: float | None = Field(None, description="Wait before the next attempt.")


class Completion(_Record):
    """A finished answer and how it was obtained."""

    text: str
    finish_reason: str | None = Field(None, description="'stop', 'length', ... as sent.")
    usage: Usage | None = Field(None, description="None when the server sent no usage.")
    model: str = Field(description="Model name the server reported, else the configured one.")
    reasoning: str = Field("", description="Separate reasoning text, when the server sends it.")
    latency_seconds: float = Field(description="From the call to the end of the answer.")
    time_to_first_token: float | None = Field(
        None, description="From the call to the first answer text; None if the answer is empty."
    )
    attempts: tuple[Attempt, ...]
    request: dict[str, Any] = Field(description="The exact JSON body of the successful request.")
    warnings: tuple[str, ...] = Field(
        (), description="Oddities tolerated on the way (e.g. no [DONE]), kept for the log."
    )


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ModelError(Exception):
    """Any failure to get an answer.

    ``user_message`` is what the bot may show in Discord; ``detail`` (also ``str(error)``) is for
    the log. ``attempts`` and ``request`` are filled in before the error leaves
    :meth:`ModelClient.complete`; ``partial_text`` is whatever answer text arrived.
    """

    default_user_message: ClassVar[str] = (
        "The model is not answering right now, try again in a minute."
    )
    retryable: ClassVar[bool] = False

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        user_message: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.user_message = user_message or self.default_user_message
        self.attempts: tuple[Attempt, ...] = ()
        self.request: dict[str, Any] | None = None
        self.partial_text = ""

    def __str__(self) -> str:
        return self.detail

    def __repr__(self) -> str:
        status = f", status={self.status}" if self.status is not None else ""
        return f"{type(self).__name__}({self.detail!r}{status})"


class ModelConnectionError(ModelError):
    """The server could not be reached, or the connection broke before any text was delivered."""

    retryable = True


class ModelStalledError(ModelError):
    """The server went silent for longer than the idle timeout."""

    default_user_message = "The model stopped responding, try again in a minute."
    retryable = True


class ModelTimeoutError(ModelError):
    """The whole call (retries included) took longer than ``timeout_seconds``."""

    default_user_message = "The model took too long to answer, try again later."


class ModelRateLimitedError(ModelError):
    """HTTP 429: the server or provider asks us to slow down."""

    default_user_message = "The model is busy right now, try again in a minute."
    retryable = True


class ModelServerError(ModelError):
    """HTTP 5xx or 408, or an error the server reported inside a 200 answer."""

    default_user_message = "The model server had a problem, try again in a minute."
    retryable = True


class ModelRejectedError(ModelError):
    """A 4xx the server will answer the same way next time (bad request, too long, ...)."""

    default_user_message = (
        "The model refused this request; the operator can see why in the bot's log."
    )


class ModelContextTooLongError(ModelRejectedError):
    """The prompt (with the answer's reserve) is longer than the model's context window.

    ``window`` is the window the server stated, ``prompt_tokens`` what it counted in the
    prompt; either is None when the message did not say. The answer flow rebuilds a smaller
    prompt and retries, so members rarely see ``user_message``.
    """

    default_user_message = "This conversation is too long for the model; try a shorter question."

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(detail, status=status)
        self.window = window
        self.prompt_tokens = prompt_tokens


class ModelAuthError(ModelRejectedError):
    """HTTP 401/403: the API key is missing or wrong."""

    default_user_message = (
        "The bot cannot use its model right now (access denied); the operator needs to fix it."
    )


class ModelNotFoundError(ModelRejectedError):
    """HTTP 404: wrong ``base_url`` or unknown model name."""

    default_user_message = (
        "The bot's model is not available right now; the operator needs to check the setup."
    )


class ModelProtocolError(ModelError):
    """The server answered something that is not a valid (streamed) chat completion."""

    default_user_message = "The model sent a garbled answer, try again."


class ModelPartialError(ModelError):
    """A failure after some streamed text already reached ``on_delta``; it was not retried.

    ``partial_text`` holds the text delivered so far and ``cause`` the underlying error, so the
    bot can keep what was shown and add a note instead of posting the start twice.
    """

    default_user_message = "The model stopped in the middle of its answer."

    def __init__(self, cause: ModelError, partial_text: str) -> None:
        super().__init__(
            f"failed after {len(partial_text)} characters of streamed answer were delivered "
            f"(not retried, to avoid duplicate text): {type(cause).__name__}: {cause.detail}",
            status=cause.status,
        )
        self.cause = cause
        self.partial_text = partial_text


class _StreamOptionsRejected(Exception):
    """The server refused ``stream_options``; retried at once without it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _CallbackFailed(Exception):
    """Wraps an exception raised by the caller's ``on_delta`` so it is never taken for ours."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------


class _Progress:
    """What one attempt has received so far (reset when a retry starts afresh)."""

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.warnings: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


class _Call:
    """State shared by the attempts of one ``complete`` call."""

    def __init__(self, deadline: float, started: float, on_delta: DeltaCallback | None) -> None:
        self.deadline = deadline
        self.started = started
        self.on_delta = on_delta
        self.delivered = False
        self.first_token_at: float | None = None
        self.progress = _Progress()
        self.attempts: list[Attempt] = []
        self.request: dict[str, Any] | None = None
        self.current: tuple[int, float, datetime] | None = None  # the attempt under way


class ModelClient:
    """Talks to one OpenAI-compatible endpoint; use as ``async with ModelClient(settings) as c``.

    Pass ``session`` to share an existing ``aiohttp.ClientSession`` (it is then not closed
    here); otherwise one session is created on first use and closed by :meth:`aclose`.
    ``rng`` only feeds the backoff jitter (tests pass a seeded one).
    """

    def __init__(
        self,
        settings: ModelSettings,
        *,
        session: aiohttp.ClientSession | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._session = session
        self._owns_session = session is None
        self._rng = rng or random.Random()
        self._secret = settings.api_key.get_secret_value() if settings.api_key else None
        self._stream_options_ok = True
        self.url = f"{settings.base_url}/chat/completions"

    def __repr__(self) -> str:
        key = "set" if self._secret else "none"
        return f"ModelClient(url={self.url!r}, model={self.settings.name!r}, api_key={key})"

    async def __aenter__(self) -> ModelClient:
        self._get_session()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session if this client created it."""
        if self._owns_session and self._session is not None and not self._session.closed:
            await self._session.close()

    @property
    def stream_options_supported(self) -> bool:
        """False once the server rejected ``stream_options``; it is then no longer sent."""
        return self._stream_options_ok

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=16),
                headers={"User-Agent": USER_AGENT},
            )
        if self._session.closed:
            raise RuntimeError("ModelClient used after aclose()")
        return self._session

    # -- request -------------------------------------------------------------------------------

    def build_request(
        self, messages: Sequence[Mapping[str, Any]], *, stream: bool | None = None
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` would send now (a detached copy of ``messages``).

        Raises ``TypeError`` when the messages are not JSON-serializable, before anything is
        sent.
        """
        stream = self.settings.stream if stream is None else stream
        body: dict[str, Any] = {
            "model": self.settings.name,
            "messages": [dict(m) for m in messages],
            "temperature": self.settings.temperature,
            "stream": stream,
        }
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        if stream and self._stream_options_ok:
            body["stream_options"] = {"include_usage": True}
        try:
            return json.loads(json.dumps(body, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"chat messages are not JSON-serializable: {exc}") from exc

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
        }
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        return headers

    def _redact(self, text: str) -> str:
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        return text

    # -- public call ---------------------------------------------------------------------------

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        on_delta: DeltaCallback | None = None,
        stream: bool | None = None,
    ) -> Completion:
        """Ask the model to answer ``messages`` (OpenAI chat format, sent unchanged).

        ``on_delta`` receives the answer text piece by piece while streaming (once, with the
        whole text, when not streaming). ``stream`` overrides the configured mode. Raises a
        :class:`ModelError` subclass; an exception raised by ``on_delta`` propagates unchanged.
        """
        stream = self.settings.stream if stream is None else stream
        self.build_request(messages, stream=stream)  # fail fast on unserializable input
        started = time.monotonic()
        call = _Call(started + self.settings.timeout_seconds, started, on_delta)
        deadline = asyncio.timeout(self.settings.timeout_seconds)
        try:
            async with deadline:
                return await self._run(messages, stream, call)
        except _CallbackFailed as failed:
            raise failed.original from None
        except TimeoutError:
            if not deadline.expired():
                raise
            error: ModelError = ModelTimeoutError(
                f"no complete answer within timeout_seconds={self.settings.timeout_seconds:g} "
                f"({len(call.attempts) + (call.current is not None)} attempt(s), "
                f"{len(call.progress.text)} characters received)"
            )
            error.partial_text = call.progress.text
            if call.current is not None:
                number, attempt_started, attempt_at = call.current
                call.attempts.append(
                    self._attempt_record(
                        number,
                        attempt_started,
                        stream,
                        None,
                        "failed",
                        error,
                        started_at=attempt_at,
                    )
                )
            elif call.attempts:  # the deadline struck during a backoff wait
                last = call.attempts[-1]
                call.attempts[-1] = last.model_copy(
                    update={"outcome": "failed", "error": f"{last.error}; then {error.detail}"}
                )
            if call.delivered:
                error = ModelPartialError(error, call.progress.text)
            raise self._finish_error(error, call) from None

    async def _run(
        self, messages: Sequence[Mapping[str, Any]], stream: bool, call: _Call
    ) -> Completion:
        retries = 0
        number = 0
        while True:
            number += 1
            body = self.build_request(messages, stream=stream)
            call.request = body
            call.progress = _Progress()
            call.first_token_at = None  # a failed attempt's first token does not count
            attempt_started = time.monotonic()
            attempt_at = datetime.now(UTC)
            call.current = (number, attempt_started, attempt_at)
            try:
                status = await self._attempt(body, stream, call)
            except _StreamOptionsRejected as rejected:
                call.current = None
                self._stream_options_ok = False
                call.attempts.append(
                    Attempt(
                        number=number,
                        started_at=attempt_at,
                        duration_seconds=time.monotonic() - attempt_started,
                        stream=stream,
                        status=rejected.status,
                        outcome="retried",
                        error=self._redact(
                            f"server rejected stream_options ({rejected.message}); "
                            "retrying without it"
                        ),
                        delay_seconds=0.0,
                    )
                )
                continue
            except ModelError as error:
                call.current = None
                error.partial_text = call.progress.text
                if call.delivered:
                    call.attempts.append(
                        self._attempt_record(
                            number,
                            attempt_started,
                            stream,
                            error.status,
                            "failed",
                            error,
                            started_at=attempt_at,
                        )
                    )
                    partial = ModelPartialError(error, call.progress.text)
                    raise self._finish_error(partial, call) from error
                delay = self._retry_delay(retries, error) if error.retryable else None
                if delay is not None and retries >= self.settings.max_retries:
                    error.detail += f" (gave up after {retries + 1} attempt(s))"
                    delay = None
                if delay is not None and time.monotonic() + delay >= call.deadline:
                    error.detail += (
                        f" (not retried: waiting {delay:.3g}s would pass timeout_seconds)"
                    )
                    delay = None
                call.attempts.append(
                    self._attempt_record(
                        number,
                        attempt_started,
                        stream,
                        error.status,
                        "failed" if delay is None else "retried",
                        error,
                        started_at=attempt_at,
                        delay=delay,
                    )
                )
                if delay is None:
                    raise self._finish_error(error, call) from None
                retries += 1
                await asyncio.sleep(delay)
                continue
            call.current = None
            progress = call.progress
            call.attempts.append(
                Attempt(
                    number=number,
                    started_at=attempt_at,
                    duration_seconds=time.monotonic() - attempt_started,
                    stream=stream,
                    status=status,
                    outcome="ok",
                )
            )
            now = time.monotonic()
            return Completion(
                text=progress.text,
                finish_reason=progress.finish_reason,
                usage=progress.usage,
                model=progress.model or self.settings.name,
                reasoning="".join(progress.reasoning_parts),
                latency_seconds=now - call.started,
                time_to_first_token=(
                    None if call.first_token_at is None else call.first_token_at - call.started
                ),
                attempts=tuple(call.attempts),
                request=body,
                warnings=tuple(progress.warnings),
            )

    def _attempt_record(
        self,
        number: int,
        attempt_started: float,
        stream: bool,
        status: int | None,
        outcome: Literal["ok", "retried", "failed"],
        error: ModelError,
        *,
        started_at: datetime | None = None,
        delay: float | None = None,
    ) -> Attempt:
        duration = max(0.0, time.monotonic() - attempt_started)
        return Attempt(
            number=number,
            started_at=started_at or datetime.now(UTC),
            duration_seconds=duration,
            stream=stream,
            status=status,
            outcome=outcome,
            error=self._redact(f"{type(error).__name__}: {error.detail}"),
            retry_after_seconds=error.retry_after,
            delay_seconds=delay,
        )

    def _finish_error(self, error: ModelError, call: _Call) -> ModelError:
        error.detail = self._redact(error.detail)
        error.args = (error.detail,)
        error.attempts = tuple(call.attempts)
        error.request = call.request
        if not error.partial_text:
            error.partial_text = call.progress.text
        return error

    def _retry_delay(self, retries_done: int, error: ModelError) -> float:
        cap = self.settings.retry_max_seconds
        if error.retry_after is not None and math.isfinite(error.retry_after):
            return min(max(error.retry_after, 0.0), cap)
        ceiling = self.settings.retry_base_seconds * (2**retries_done)
        # "Equal jitter": never less than half the backoff, so retries really do slow down,
        # yet spread out so several bots behind one server do not retry in lockstep.
        return min(ceiling / 2 + self._rng.uniform(0, ceiling / 2), cap)

    # -- one HTTP request ----------------------------------------------------------------------

    async def _attempt(self, body: dict[str, Any], stream: bool, call: _Call) -> int:
        settings = self.settings
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=settings.connect_timeout_seconds,
            sock_read=settings.idle_timeout_seconds if stream else None,
        )
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            async with self._get_session().post(
                self.url,
                data=data,
                headers=self._headers(stream),
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                if not 200 <= response.status < 300:
                    raise await self._http_error(response, body)
                content_type = response.headers.get("Content-Type", "").lower()
                if stream and "text/event-stream" in content_type:
                    await self._read_stream(response, call)
                elif stream and "json" not in content_type:
                    snippet = (await self._read_limited(response, 300)).decode(errors="replace")
                    raise ModelProtocolError(
                        f"expected an event stream from {self.url}, got {content_type or 'no'} "
                        f"content type: {snippet!r}"
                    )
                else:
                    # Also taken when a server ignores stream=true and answers in one piece.
                    await self._read_whole(response, call)
                return response.status
        except aiohttp.ConnectionTimeoutError as exc:
            raise ModelConnectionError(
                f"could not connect to {self.url} within "
                f"connect_timeout_seconds={settings.connect_timeout_seconds:g}: {exc}"
            ) from exc
        except TimeoutError as exc:
            raise ModelStalledError(
                f"no data from {self.url} for idle_timeout_seconds="
                f"{settings.idle_timeout_seconds:g} ({len(call.progress.text)} characters "
                "received so far)"
            ) from exc
        except aiohttp.ClientPayloadError as exc:
            raise ModelConnectionError(
                f"the connection to {self.url} broke mid-answer: {exc}"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise ModelConnectionError(
                f"cannot reach the model at {self.url}: {type(exc).__name__}: {exc}"
                " — is the server running? check [model] base_url"
            ) from exc

    async def _read_limited(self, response: aiohttp.ClientResponse, limit: int) -> bytes:
        parts: list[bytes] = []
        size = 0
        while size < limit:
            chunk = await response.content.read(limit - size)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)

    async def _http_error(
        self, response: aiohttp.ClientResponse, body: dict[str, Any]
    ) -> Exception:
        status = response.status
        try:
            async with asyncio.timeout(self.settings.connect_timeout_seconds):
                raw = await self._read_limited(response, _ERROR_BODY_LIMIT)
        except (TimeoutError, aiohttp.ClientError):
            raw = b""
        message = _server_message(raw) or response.reason or "no message"
        retry_after = _retry_after(response.headers)
        if (
            status in (400, 422)
            and "stream_options" in body
            and "stream_options" in message.lower()
        ):
            return _StreamOptionsRejected(status, message)
        where = f"HTTP {status} from {self.url}: {message}"
        if status in (401, 403):
            return ModelAuthError(
                f"{where} — check [model] api_key (or the MODEL_API_KEY environment variable)",
                status=status,
            )
        if status == 404:
            return ModelNotFoundError(
                f"{where} — check [model] base_url and that the model "
                f"{self.settings.name!r} exists there",
                status=status,
            )
        if status == 429:
            return ModelRateLimitedError(where, status=status, retry_after=retry_after)
        if status >= 500 or status in _RETRYABLE_STATUSES:
            return ModelServerError(where, status=status, retry_after=retry_after)
        overflow = recognize_overflow(status, raw)
        if overflow is not None:
            return ModelContextTooLongError(
                f"{where} — the prompt does not fit the model's context window; check [model] "
                "context_tokens",
                status=status,
                window=overflow.window,
                prompt_tokens=overflow.prompt_tokens,
            )
        if 300 <= status < 400:
            location = response.headers.get("Location", "?")
            return ModelRejectedError(
                f"{where} — the server redirects to {location}; check [model] base_url",
                status=status,
            )
        return ModelRejectedError(where, status=status)

    async def _read_whole(self, response: aiohttp.ClientResponse, call: _Call) -> None:
        raw = await self._read_limited(response, _RESPONSE_LIMIT)
        payload = _json_object(
            raw,
            bad_json=f"the answer from {self.url} is not JSON",
            not_object=f"the answer from {self.url} is not a JSON object",
            preview=300,
        )
        _raise_embedded_error(payload, self.url)
        progress = call.progress
        progress.model = _str_or_none(payload.get("model"))
        progress.usage = _usage(payload.get("usage"))
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelProtocolError(f"the answer from {self.url} has no choices: {payload!r:.300}")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise ModelProtocolError(f"the answer from {self.url} has no message: {choice!r:.300}")
        text = _content_text(message.get("content"))
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str):
            progress.reasoning_parts.append(reasoning)
        progress.finish_reason = _str_or_none(choice.get("finish_reason"))
        if text:
            progress.text_parts.append(text)
            await self._deliver(call, text)

    async def _read_stream(self, response: aiohttp.ClientResponse, call: _Call) -> None:
        """Consume server-sent events until ``[DONE]``, or the end after a finish_reason."""
        progress = call.progress
        pending = b""
        while True:
            # After finish_reason only the usage chunk and [DONE] may follow; a server that then
            # keeps the connection open must not hold the answer back for a whole idle timeout.
            wait = self.settings.idle_timeout_seconds
            if progress.finish_reason is not None:
                wait = min(wait, _AFTER_FINISH_GRACE_SECONDS)
            try:
                async with asyncio.timeout(wait):
                    chunk = await response.content.readany()
            except TimeoutError:
                if progress.finish_reason is None:
                    raise
                progress.warnings.append(
                    f"no [DONE] within {wait:g}s after finish_reason; answer taken as complete"
                )
                return
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if await self._handle_line(line, call):
                    return
        if pending.strip() and await self._handle_line(pending, call):
            return
        if progress.finish_reason is None:
            raise ModelConnectionError(
                f"the stream from {self.url} ended before the answer was finished (no [DONE], "
                f"no finish_reason, {len(progress.text)} characters received)"
            )
        progress.warnings.append("stream ended without [DONE] (after a finish_reason)")

    async def _handle_line(self, raw: bytes, call: _Call) -> bool:
        """Apply one line of the event stream; True once ``[DONE]`` is seen."""
        line = raw.rstrip(b"\r")
        if not line.strip() or line.startswith(b":"):
            return False  # event separator, or a keep-alive comment (": OPENROUTER PROCESSING")
        field, _, value = line.partition(b":")
        if field in (b"event", b"id", b"retry"):
            return False
        if field != b"data":
            # Not SSE at all; a bare JSON error object is the one thing worth understanding.
            if line.lstrip().startswith(b"{"):
                try:
                    payload = json.loads(line)
                except ValueError:
                    payload = None
                if isinstance(payload, dict):
                    _raise_embedded_error(payload, self.url)
            if len(call.progress.warnings) < _MAX_WARNINGS:
                call.progress.warnings.append(
                    f"ignored a non-SSE line: {line[:120].decode(errors='replace')!r}"
                )
            return False
        data = value.strip()
        if not data:
            return False
        if data == b"[DONE]":
            return True
        payload = _json_object(
            data,
            bad_json=f"bad JSON in a stream data line from {self.url}",
            not_object=f"a stream chunk from {self.url} is not a JSON object",
            preview=200,
        )
        await self._apply_chunk(payload, call)
        return False

    async def _apply_chunk(self, payload: dict[str, Any], call: _Call) -> None:
        _raise_embedded_error(payload, self.url)
        progress = call.progress
        progress.model = _str_or_none(payload.get("model")) or progress.model
        usage = _usage(payload.get("usage"))
        if usage is not None:
            progress.usage = usage
        choices = payload.get("choices")
        if not isinstance(choices, list):
            return  # e.g. a usage-only chunk without "choices"
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    progress.reasoning_parts.append(reasoning)
                text = _content_text(delta.get("content"))
                if text:
                    progress.text_parts.append(text)
                    await self._deliver(call, text)
            finish = _str_or_none(choice.get("finish_reason"))
            if finish:
                progress.finish_reason = finish

    async def _deliver(self, call: _Call, text: str) -> None:
        if call.first_token_at is None:
            call.first_token_at = time.monotonic()
        if call.on_delta is None:
            return
        call.delivered = True
        try:
            await call.on_delta(text)
        except Exception as exc:
            raise _CallbackFailed(exc) from exc


# --------------------------------------------------------------------------------------------
# Parsing helpers (servers differ in small ways; each helper says which)
# --------------------------------------------------------------------------------------------


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_text(content: object) -> str:
    """Text of a message/delta ``content``: a string, or a list of parts on some servers."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None

    def count(key: str) -> int | None:
        number = value.get(key)
        return number if isinstance(number, int) and not isinstance(number, bool) else None

    usage = Usage(
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        total_tokens=count("total_tokens"),
    )
    if usage.total_tokens is None and None not in (usage.prompt_tokens, usage.completion_tokens):
        usage = usage.model_copy(
            update={"total_tokens": usage.prompt_tokens + usage.completion_tokens}  # type: ignore[operator]
        )
    return usage if usage != Usage() else None


def _server_message(raw: bytes) -> str:
    """The human part of an error body: OpenAI ``{"error": {"message"}}``, Ollama, FastAPI..."""
    text = raw.decode(errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:500]
    if isinstance(payload, dict):
        for key in ("error", "detail", "message"):
            value = payload.get(key)
            if isinstance(value, dict):
                value = value.get("message") or json.dumps(value)[:500]
            if isinstance(value, str) and value:
                return value[:500]
            if value:
                return json.dumps(value)[:500]
    return text[:500]


def _raise_embedded_error(payload: dict[str, Any], url: str) -> None:
    """Some servers (OpenRouter, vLLM) report failures inside a 200 answer or mid-stream."""
    error = payload.get("error")
    if not error:
        return
    message = _server_message(json.dumps({"error": error}).encode())
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    if status == 429:
        raise ModelRateLimitedError(f"{url} reported: {message}", status=status)
    overflow = recognize_overflow(status, {"error": error}) if status is not None else None
    if overflow is not None:
        raise ModelContextTooLongError(
            f"{url} reported: {message}",
            status=status,
            window=overflow.window,
            prompt_tokens=overflow.prompt_tokens,
        )
    if status is not None and status < 500 and status not in _RETRYABLE_STATUSES:
        raise ModelRejectedError(f"{url} reported: {message}", status=status)
    raise ModelServerError(f"{url} reported an error: {message}", status=status)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _finite_seconds(millis, scale=1000)
        if seconds is not None:
            return seconds
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        float(value)
    except ValueError:
        pass
    else:
        return _finite_seconds(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def _finite_seconds(value: str, *, scale: float = 1) -> float | None:
    """A wait the server asked for, if it is a real one: ``nan`` or ``inf`` would wait forever."""
    try:
        seconds = float(value) / scale
    except ValueError:
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _json_object(raw: bytes, *, bad_json: str, not_object: str, preview: int) -> dict[str, Any]:
    """Parse a JSON object from the server, or say what arrived instead."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise ModelProtocolError(
            f"{bad_json} ({exc}): {raw[:preview].decode(errors='replace')!r}"
        ) from exc
    if not isinstance(payload, dict):
        raise ModelProtocolError(not_object)
    return payload
