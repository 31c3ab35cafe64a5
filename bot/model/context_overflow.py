"""Recognising a server's "the prompt is longer than my context window" answer.

Each server says it its own way, and the bot wants to react to all of them the same way
(rebuild a smaller prompt and retry), so the recognising lives here, as one pure function the
model client calls when it maps an HTTP error. What is recognised:

* OpenAI: ``code: "context_length_exceeded"``, "This model's maximum context length is 8192
  tokens. However, your messages resulted in 9000 tokens...";
* vLLM: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens
  (4000 in the messages, 1000 in the completion)" and "... your request has 3500 input tokens";
* llama.cpp's server: ``type: "exceed_context_size_error"`` with ``n_ctx`` and
  ``n_prompt_tokens``, "the request exceeds the available context size";
* Anthropic: "prompt is too long: 210000 tokens > 200000 maximum";
* Mistral, TGI and LM Studio wordings of the same.

Ollama does not answer an error at all: it silently drops the start of the prompt, which is why
the budget must hold before anything is sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

OVERFLOW_STATUSES = frozenset({400, 413, 422})
OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
)

_PHRASES = re.compile(
    r"maximum context length|context length exceeded|context_length_exceeded|"
    r"exceeds? the (?:available )?context (?:size|window|length)|prompt is too long|"
    r"too large for model with \d+ maximum context length|context window of|"
    r"tokens \+ `max_new_tokens` must be <=|context overflows|input is too long|"
    r"reduce the length of the (?:messages|input|prompt)",
    re.IGNORECASE,
)
_WINDOW = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"maximum context length is (\d+)",
        r"context (?:window|length|size) (?:of|is)(?: only)? (\d+)",
        r"(\d+) maximum context length",
        r"tokens? > (\d+) maximum",
        r"must be <= (\d+)",
        r"context size \((\d+)",
    )
)
_PROMPT = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\((\d+) in the messages",
        r"your (?:request|prompt) has (\d+) input tokens",
        r"your messages resulted in (\d+) tokens",
        r"prompt is too long: (\d+) tokens",
        r"prompt contains (\d+) tokens",
        r"given: (\d+) `inputs` tokens",
        r"keep the first (\d+) tokens",
    )
)


class ContextOverflow(BaseModel):
    """A recognised overflow, with what the server told about it (either may be unknown)."""

    model_config = ConfigDict(frozen=True)

    window: int | None = None
    prompt_tokens: int | None = None


def recognize_overflow(
    status: int, body: bytes | str | Mapping[str, Any]
) -> ContextOverflow | None:
    """The overflow an HTTP error answer reports, or None when it is some other error.

    ``body`` is the error answer as received (JSON or plain text); any shape is accepted.
    """
    if status not in OVERFLOW_STATUSES:
        return None
    payload, text = _parse(body)
    error = payload.get("error") if isinstance(payload, Mapping) else None
    fields: Mapping[str, Any] = error if isinstance(error, Mapping) else (payload or {})
    codes = {str(fields.get(key) or "") for key in ("code", "type")}
    if not (codes & OVERFLOW_CODES or _PHRASES.search(text)):
        return None
    window = _number(fields.get("n_ctx")) or _first(_WINDOW, text)
    prompt = _number(fields.get("n_prompt_tokens")) or _first(_PROMPT, text)
    return ContextOverflow(window=window, prompt_tokens=prompt)


def _parse(body: bytes | str | Mapping[str, Any]) -> tuple[Any, str]:
    """The body as data and as plain text; a body nested too deeply to read is neither."""
    try:
        if isinstance(body, Mapping):
            return body, json.dumps(body, ensure_ascii=False)
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if isinstance(payload, Mapping):
            # Messages may be nested or escaped; search their plain text, not the JSON spelling.
            text = " ".join(_strings(payload))
        return payload, text
    except RecursionError:
        return None, ""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            number = int(match[1])
            if number > 0:
                return number
    return None
