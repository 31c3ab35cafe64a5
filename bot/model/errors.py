"""Every way a model call fails, and the one place an SDK's failure becomes one of ours.

An error's ``str()`` is the detail for the log, ``user_message`` the short line members see, and
``retryable`` whether another attempt may succeed.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.model.context_overflow import recognize_overflow

if TYPE_CHECKING:
    from bot.model.call import Attempt

# What members see when the server says it is overloaded (HTTP 529) rather than failing.
OVERLOADED_MESSAGE = "The model is overloaded right now, try again in a minute."


class ModelError(Exception):
    """No (whole) answer; ``attempts``, ``request`` and ``partial_text`` say how far it got."""

    user_message = "The model is not answering right now, try again in a minute."
    retryable = False

    def __init__(
        self, detail: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(detail)
        self.detail, self.status, self.retry_after = detail, status, retry_after
        self.attempts: tuple[Attempt, ...] = ()
        self.request: dict[str, Any] | None = None
        self.partial_text = ""
        # The tool rounds run before it, when tools were offered (a tool_loop.ToolProgress,
        # which sits above this module).
        self.tool_progress: Any = None

    def __str__(self) -> str:
        return self.detail


class ModelConnectionError(ModelError):
    """Unreachable, or the connection broke before the answer ended."""

    retryable = True


class ModelStalledError(ModelError):
    """The stream went silent for longer than ``idle_timeout_seconds``."""

    user_message, retryable = "The model stopped responding, try again in a minute.", True


class ModelTimeoutError(ModelError):
    """The whole call, retries included, took longer than ``timeout_seconds``."""

    user_message = "The model took too long to answer, try again later."


class ModelRateLimitedError(ModelError):
    """HTTP 429: slow down."""

    user_message, retryable = "The model is busy right now, try again in a minute.", True


class ModelServerError(ModelError):
    """HTTP 5xx or 408, or an error the server reported inside a 200 answer."""

    user_message, retryable = "The model server had a problem, try again in a minute.", True


class ModelRejectedError(ModelError):
    """A 4xx the server will answer the same way next time."""

    user_message = "The model refused this request; the operator can see why in the bot's log."


class ModelContextTooLongError(ModelRejectedError):
    """The prompt does not fit the window; the answer flow rebuilds it smaller. ``window`` and
    ``prompt_tokens`` are what the server said (None when it did not)."""

    user_message = "This conversation is too long for the model; try a shorter question."

    def __init__(
        self, detail: str, *, status: int | None = None, window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(detail, status=status)
        self.window, self.prompt_tokens = window, prompt_tokens


class ModelAuthError(ModelRejectedError):
    """HTTP 401/403: the API key is missing or wrong."""

    user_message = (
        "The bot cannot use its model right now (access denied); the operator must fix it."
    )


class ModelNotFoundError(ModelRejectedError):
    """HTTP 404: wrong ``base_url`` or unknown model name."""

    user_message = "The bot's model is not available right now; the operator must check the setup."


class ModelProtocolError(ModelError):
    """The server answered something that is not a valid (streamed) answer."""

    user_message = "The model sent a garbled answer, try again."


class ModelPartialError(ModelError):
    """A failure after streamed text reached ``on_delta``: never retried (it would repeat)."""

    user_message = "The model stopped in the middle of its answer."

    def __init__(self, cause: ModelError, partial_text: str) -> None:
        super().__init__(
            f"failed after {len(partial_text)} characters of streamed answer were delivered "
            f"(not retried, to avoid duplicate text): {type(cause).__name__}: {cause.detail}",
            status=cause.status,
        )
        self.cause, self.partial_text = cause, partial_text


def too_deep(url: str, what: str) -> ModelProtocolError:
    """JSON from the server nested deeper than Python reads (an error body, an event, the
    answer): the server's fault, said in one line rather than a RecursionError traceback."""
    return ModelProtocolError(
        f"{what} from {url} is JSON nested too deeply to read: the model server sent a "
        "malformed answer"
    )


def unreadable_event(data: str, url: str) -> ModelProtocolError:
    """An error event whose data is not JSON the SDK could read: nested too deeply, or not JSON
    at all. Either way the server broke the protocol."""
    try:
        json.loads(data)
    except RecursionError:
        return too_deep(url, "an error event")
    except ValueError:
        pass
    return ModelProtocolError(f"an error event from {url} is not readable JSON: {data[:200]!r}")


def status_error(
    status: int, body: Any, url: str, model: str, headers: Mapping[str, str], where: str = ""
) -> ModelError:
    """An error status and the server's answer (text or JSON) as one of our errors."""
    try:
        text = body if isinstance(body, str) else json.dumps(body)
    except RecursionError:
        text = "an error body nested too deeply to read (malformed JSON from the server)"
    detail = f"{where or f'HTTP {status} from'} {url}: {server_message(text) or 'no message'}"
    if status in (401, 403):
        hint = "check [model] api_key (or the MODEL_API_KEY environment variable)"
        return ModelAuthError(f"{detail} — {hint}", status=status)
    if status == 404:
        hint = f"check [model] base_url and that the model {model!r} exists there"
        return ModelNotFoundError(f"{detail} — {hint}", status=status)
    if status == 429:
        return ModelRateLimitedError(detail, status=status, retry_after=retry_after(headers))
    if status >= 500 or status == 408:
        error = ModelServerError(detail, status=status, retry_after=retry_after(headers))
        if status == 529:  # Anthropic's "overloaded"
            error.user_message = OVERLOADED_MESSAGE
        return error
    if overflow := recognize_overflow(status, body):
        hint = "the prompt does not fit the model's context window; check [model] context_tokens"
        return ModelContextTooLongError(
            f"{detail} — {hint}", status=status, window=overflow.window,
            prompt_tokens=overflow.prompt_tokens,
        )  # fmt: skip
    if 300 <= status < 400:
        detail += f" — redirected to {headers.get('location', '?')}; check [model] base_url"
    return ModelRejectedError(detail, status=status)


_STATUS_OF_TYPE = {"rate_limit_error": 429, "overloaded_error": 529, "not_found_error": 404,
                   "invalid_request_error": 400, "authentication_error": 401}  # fmt: skip


def reported_error(body: object, url: str, model: str) -> ModelError:
    """An error inside a 200 answer or its stream (OpenRouter, vLLM, Anthropic's error event)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    details = error if isinstance(error, dict) else {}
    code = details.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    status = status or _STATUS_OF_TYPE.get(str(details.get("type")), 500)
    return status_error(status, {"error": error}, url, model, {}, where="reported by")


def server_message(text: str) -> str:
    """The human part of an error body: ``{"error": {"message"}}``, Ollama, FastAPI, HTML..."""
    try:
        payload = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:500]
    except RecursionError:
        return "an error body nested too deeply to read (malformed JSON from the server)"
    for key in ("error", "detail", "message") if isinstance(payload, dict) else ():
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("message") or value
        if value:
            return (value if isinstance(value, str) else json.dumps(value))[:500]
    return text.strip()[:500]


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After``, read by their grammar, else None
    (the client's own backoff).

    ``Retry-After`` is ``1*DIGIT`` or an HTTP date (RFC 9110 10.2.3); OpenAI's
    ``retry-after-ms`` is digits with an optional fraction. Anything else is no advice: Python's
    ``float()`` and ``int()`` would read ``" 1_000 "`` as 1000 seconds and ``"1e400"`` as
    infinity, holding the channel until the total timeout.
    """
    milliseconds = _header(headers, "retry-after-ms")
    if _MILLISECONDS.fullmatch(milliseconds):
        return float(milliseconds) / 1000
    value = _header(headers, "retry-after")
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    if not _HTTP_DATE.fullmatch(value):
        return None
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        when = email.utils.parsedate_to_datetime(value)
        wait = when.replace(tzinfo=when.tzinfo or UTC) - datetime.now(UTC)
        return max(wait.total_seconds(), 0.0)
    return None


# Only ASCII digits (``\d`` takes any script's), no sign, no exponent, no underscores.
_DELAY_SECONDS = re.compile(r"[0-9]{1,12}")
_MILLISECONDS = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,6})?")
# The three HTTP date forms: "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
# "Sun Nov  6 08:49:37 1994".
_HTTP_DATE = re.compile(
    r"[A-Za-z]{3,9}, [0-9]{2}[ -][A-Za-z]{3}[ -][0-9]{2,4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT"
    r"|[A-Za-z]{3} [A-Za-z]{3} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}"
)


def _header(headers: Mapping[str, str], name: str) -> str:
    """The field's value without the optional whitespace HTTP allows around it."""
    return (headers.get(name) or "").strip(" \t")
