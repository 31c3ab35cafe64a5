"""What one model call is made of: its records (attempts, usage, the completion) and the ``Call``
that providers write into as an answer arrives.

A leaf below the client and the providers: the client drives a ``Call`` through a provider, and
each provider fills it in, so both import it and neither imports the other at the top.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from bot.model.errors import ModelStalledError
from bot.model.settings import ModelSettings

DeltaCallback = Callable[[str], Awaitable[None]]
"""Receives each piece of answer text as it streams in (never an empty string)."""
T = TypeVar("T")
_AFTER_FINISH_GRACE_SECONDS = 5.0


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Record):
    """Token counts as the server reported them (any may be missing); cached ones included."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_prompt_tokens: int | None = None


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
    warnings: tuple[str, ...] = ()


class CallbackFailed(Exception):
    """Wraps what the caller's ``on_delta`` raised, so it is never taken for a model failure."""

    def __init__(self, original: BaseException) -> None:
        self.original = original


class Call:
    """One ``complete`` call: its attempts so far, and what the current attempt received.

    Providers write into it as the answer arrives; :meth:`fresh` forgets a failed attempt's.
    """

    def __init__(self, settings: ModelSettings, on_delta: DeltaCallback | None) -> None:
        self.settings, self.on_delta, self.started = settings, on_delta, time.monotonic()
        self.attempts: list[Attempt] = []
        self.request: dict[str, Any] | None = None
        self.began: tuple[float, datetime] | None = None  # the attempt under way
        self.delivered = False
        self.fresh()

    def fresh(self) -> None:
        self.parts: list[str] = []
        self.reasoning: list[str] = []
        self.warnings: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.first_token_at: float | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    async def deliver(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.first_token_at = self.first_token_at or time.monotonic()
        if text and self.on_delta is not None:
            self.delivered = True
            try:
                await self.on_delta(text)
            except Exception as exc:
                raise CallbackFailed(exc) from exc

    async def within_idle(self, step: Awaitable[T]) -> T:
        """Await ``step`` (a streamed response's headers) within the idle timeout."""
        try:
            async with asyncio.timeout(self.settings.idle_timeout_seconds):
                return await step
        except TimeoutError:
            raise self._stalled() from None

    async def events(self, stream: AsyncIterable[T]) -> AsyncIterator[T]:
        """A stream's events, each within the idle timeout (a short grace once finished)."""
        iterator = aiter(stream)
        while True:
            wait = self.settings.idle_timeout_seconds
            if self.finish_reason is not None:
                wait = min(wait, _AFTER_FINISH_GRACE_SECONDS)
            try:
                async with asyncio.timeout(wait):
                    event = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if self.finish_reason is None:
                    raise self._stalled() from None
                self.warnings.append(f"the stream stayed open {wait:g}s after it finished")
                return
            yield event

    def _stalled(self) -> ModelStalledError:
        return ModelStalledError(
            f"no data for idle_timeout_seconds={self.settings.idle_timeout_seconds:g} "
            f"({len(self.text)} characters received so far)"
        )
