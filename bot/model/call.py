"""What one model call yields (usage, attempts, the completion), and the ``Call`` a provider fills
in as the answer arrives. A leaf: the client and the providers import it, not each other."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bot.tools.spec import ToolCallRequest

DeltaCallback = Callable[[str], Awaitable[None]]  # each piece of answer text, never empty


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Record):
    """Token counts as the server reported them (any may be missing)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_prompt_tokens: int | None = None


class CacheHints(_Record):
    """Where a prompt's reusable start ends and which cache it belongs to, for the providers'
    prompt caches: ``key`` is the same for every answer in one conversation (OpenAI's
    ``prompt_cache_key`` routes by it); ``stable_end`` counts the request messages a follow-up
    in the same conversation sends again unchanged (system prompt and conversation), where
    Anthropic gets its second cache breakpoint."""

    key: str | None = None
    stable_end: int | None = None


class Attempt(_Record):
    """One HTTP request of a call, for the work log (``status`` None: no response came)."""

    number: int
    started_at: datetime
    duration_seconds: float
    stream: bool
    status: int | None = None
    outcome: Literal["ok", "retried", "failed"]
    error: str | None = None
    retry_after_seconds: float | None = None
    delay_seconds: float | None = None


class Completion(_Record):
    """A finished answer, how it was obtained, and the exact JSON ``request`` body sent."""

    text: str
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str
    reasoning: str = ""
    latency_seconds: float
    time_to_first_token: float | None = None
    attempts: tuple[Attempt, ...]
    request: dict[str, Any]
    tool_calls: tuple[ToolCallRequest, ...] = ()


class CallbackFailed(Exception):
    """What the caller's ``on_delta`` raised, kept apart so it is never taken for a model
    failure (and never retried)."""


class Call:
    """One ``complete`` call: its attempts so far, and what the current attempt received."""

    def __init__(self, on_delta: DeltaCallback | None) -> None:
        self.on_delta, self.started = on_delta, time.monotonic()
        self.attempts: list[Attempt] = []
        self.request: dict[str, Any] | None = None
        self.delivered = False  # text reached on_delta: a new attempt would repeat it
        self.fresh()

    def fresh(self) -> None:
        """Forget what a failed attempt received, and time the next one."""
        self.began, self.began_at, self.in_flight = time.monotonic(), datetime.now(UTC), True
        self.status: int | None = None  # the answer began: its headers came
        self.parts: list[str] = []
        self.reasoning: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.first_token_at: float | None = None
        # Tool calls by their index in the answer: [id, name, pieces of the arguments' JSON].
        self.tool_parts: dict[int, list[Any]] = {}

    @property
    def text(self) -> str:
        return "".join(self.parts)

    async def deliver(self, text: object) -> None:
        if not isinstance(text, str) or not text:  # a garbled part of an answer is no text
            return
        self.parts.append(text)
        self.first_token_at = self.first_token_at or time.monotonic()
        if self.on_delta is not None:
            self.delivered = True
            try:
                await self.on_delta(text)
            except Exception as exc:
                raise CallbackFailed() from exc
