"""Every way a model call fails, and the one place an SDK's failure becomes one of ours.

Each error has a short ``user_message`` fit for Discord and a ``detail`` (also ``str(error)``)
for the log; ``retryable`` says whether another attempt may succeed.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import httpx2

from bot.context_overflow import recognize_overflow

if TYPE_CHECKING:
    from bot.model.call import Attempt


class ModelError(Exception):
    """Any failure to get an answer; ``attempts``, ``request`` and ``partial_text`` say how far."""

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
        self.detail, self.status, self.retry_after = detail, status, retry_after
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
    """The server could not be reached, or the connection broke before the answer ended."""

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
        self.window, self.prompt_tokens = window, prompt_tokens


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
    """The server answered something that is not a valid (streamed) answer."""

    default_user_message = "The model sent a garbled answer, try again."


class ModelPartialError(ModelError):
    """A failure after streamed text reached ``on_delta``: not retried (it would repeat)."""

    default_user_message = "The model stopped in the middle of its answer."

    def __init__(self, cause: ModelError, partial_text: str) -> None:
        super().__init__(
            f"failed after {len(partial_text)} characters of streamed answer were delivered "
            f"(not retried, to avoid duplicate text): {type(cause).__name__}: {cause.detail}",
            status=cause.status,
        )
        self.cause, self.partial_text = cause, partial_text


OVERLOADED = "The model is overloaded right now, try again in a minute."


def sdk_error(exc: Exception, sdk: Any, url: str, settings: Any, stream: bool) -> ModelError:
    """What an ``openai`` or ``anthropic`` SDK exception (one family of classes) means here."""
    if isinstance(exc, sdk.APIStatusError) and exc.status_code >= 300:
        response = exc.response
        return status_error(exc.status_code, response.text, url, settings.name, response.headers)
    if isinstance(exc, sdk.APIConnectionError | httpx2.TransportError):
        return connection_error(exc, url, settings.connect_timeout_seconds)
    if isinstance(exc, sdk.APIError):  # an error reported inside a 200 answer or its stream
        return reported_error(exc.body, url, settings.name)
    what = "bad JSON in a stream data line from" if stream else "the answer is not JSON from"
    return ModelProtocolError(f"{what} {url}: {exc}")


def status_error(
    status: int, body: Any, url: str, model: str, headers: Any, where: str = ""
) -> ModelError:
    """The one place an error status and the server's answer (text or JSON) become an error."""
    text = body if isinstance(body, str) else json.dumps(body)
    where = f"{where or f'HTTP {status} from'} {url}: {server_message(text) or 'no message'}"
    wait = retry_after(headers)
    if status in (401, 403):
        hint = "check [model] api_key (or the MODEL_API_KEY environment variable)"
        return ModelAuthError(f"{where} — {hint}", status=status)
    if status == 404:
        hint = f"check [model] base_url and that the model {model!r} exists there"
        return ModelNotFoundError(f"{where} — {hint}", status=status)
    if status == 429:
        return ModelRateLimitedError(where, status=status, retry_after=wait)
    if status >= 500 or status == 408:
        busy = OVERLOADED if status == 529 else None
        return ModelServerError(where, status=status, retry_after=wait, user_message=busy)
    if overflow := recognize_overflow(status, body):
        return ModelContextTooLongError(
            f"{where} — the prompt does not fit the model's context window; check [model] "
            "context_tokens",
            status=status,
            window=overflow.window,
            prompt_tokens=overflow.prompt_tokens,
        )
    if 300 <= status < 400:
        where += f" — redirected to {headers.get('location', '?')}; check [model] base_url"
    return ModelRejectedError(where, status=status)


_STATUS_OF_KIND = {"rate_limit_error": 429, "overloaded_error": 529, "not_found_error": 404,
                   "invalid_request_error": 400, "authentication_error": 401}  # fmt: skip


def reported_error(body: object, url: str, model: str) -> ModelError:
    """An error inside a 200 answer or its stream (OpenRouter, vLLM, Anthropic's error event)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    details = error if isinstance(error, dict) else {}
    code = details.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    status = status or _STATUS_OF_KIND.get(str(details.get("type")), 500)
    return status_error(status, {"error": error}, url, model, {}, where="reported by")


def server_message(text: str) -> str:
    """The human part of an error body: ``{"error": {"message"}}``, Ollama, FastAPI, HTML..."""
    try:
        payload = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:500]
    for key in ("error", "detail", "message") if isinstance(payload, dict) else ():
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("message") or value
        if value:
            return (value if isinstance(value, str) else json.dumps(value))[:500]
    return text.strip()[:500]


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date), if usable.

    ``nan`` and infinities are no advice (they would hold the channel until the total timeout);
    a negative wait is none.
    """
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            seconds = float(headers.get(name) or "x") / scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(headers.get("retry-after") or "")
    except (TypeError, ValueError):
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def connection_error(exc: BaseException, url: str, connect_timeout: float) -> ModelError:
    """A transport failure, told apart by when it happened (connecting or mid-answer)."""
    chain = (exc, exc.__cause__)
    if any(isinstance(e, httpx2.ConnectTimeout) for e in chain):
        return ModelConnectionError(
            f"could not connect to {url} within connect_timeout_seconds={connect_timeout:g}"
        )
    if reason := next((e for e in chain if isinstance(e, httpx2.ConnectError | OSError)), None):
        return ModelConnectionError(
            f"cannot reach the model at {url}: {type(reason).__name__}: {reason}"
            " — is the server running? check [model] base_url"
        )
    return ModelConnectionError(
        f"the connection to {url} broke mid-answer: {exc.__cause__ or exc!r}"
    )
