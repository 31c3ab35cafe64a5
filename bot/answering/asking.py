"""Asking the model for one answer: the prompt sent, with the channel's tools when offered,
and, when the server says "context too long", rebuilt smaller and sent again (``MAX_REFITS``
times at most). ``Asking`` keeps every attempt and refit, for the record (``Asked``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.answering.catchup_tool import CatchupTool
from bot.answering.channels import ChannelRuntime
from bot.answering.result import Asked
from bot.answering.tool_use import Offer, complete_using
from bot.model.call import CacheHints, Completion, DeltaCallback
from bot.model.errors import ModelContextTooLongError, ModelError
from bot.model.tool_loop import ToolProgress
from bot.tools.tool_images import ToolImage
from conversation.memory import refit_keeping_summary
from conversation.prompt import PreparedPrompt

log = logging.getLogger(__name__)

# A "context too long" answer is retried with a rebuilt, smaller prompt this many times.
MAX_REFITS = 2


def cache_hints(prepared: PreparedPrompt) -> CacheHints:
    """The prompt cache's key (the conversation) and the end of the prompt's reusable start."""
    return CacheHints(key=prepared.cache_key, stable_end=prepared.stable_end)


class Asking:
    """One answer's turns with the model in one channel (``runtime``).

    What it asks is set by the answer's prompt step: the tools offered (``offer``, taken once
    for the budget and every request; ``catch_up``, the answer's own catch-up tool among them)
    and the prompt (``prepared``), which each refit replaces, so it always ends as the prompt
    last sent.
    """

    def __init__(self, runtime: ChannelRuntime) -> None:
        self.runtime = runtime
        self.offer: Offer | None = None
        self.catch_up: CatchupTool | None = None
        self.prepared: PreparedPrompt | None = None
        self._completion: Completion | None = None
        self._request: dict[str, Any] | None = None
        self._attempts: list[Any] = []
        self._refits: list[str] = []
        self._tool_use: ToolProgress | None = None
        self._refused_tool_use: list[tuple[int, ToolProgress]] = []

    async def complete(
        self, on_delta: DeltaCallback, on_status: Callable[[str], Awaitable[None]]
    ) -> Completion:
        """Ask the model; on "context too long", rebuild a smaller prompt and ask again, with
        the same tools and the same room for them; calls the refused prompt's rounds ran are
        not run again (``Offer.memory``) and stay in the record. The accepted prompt's size
        against what the server counted teaches the channel's budget."""
        assert self.prepared is not None
        while True:
            try:
                completion = await self._ask(self.prepared, on_delta, on_status)
            except ModelContextTooLongError as error:
                if len(self._refits) >= MAX_REFITS or error.partial_text:
                    raise
                await self._refit(self.prepared, error)
            else:
                self._completion, self._request = completion, completion.request
                self._attempts.extend(completion.attempts)
                await self._calibrate(self.prepared, completion)
                return completion

    def failed(self, error: ModelError) -> None:
        """The model failed for good: its attempts, its request and the tool rounds it had run
        are recorded too."""
        self._attempts.extend(error.attempts)
        self._request = error.request
        self._tool_use = error.tool_progress

    def images(self) -> list[ToolImage]:
        """The images the answer's tools returned, to attach to it."""
        shelf = None if self.offer is None else self.offer.images
        return [] if shelf is None else list(shelf.images)

    @property
    def completion(self) -> Completion | None:
        return self._completion

    def asked(self) -> Asked:
        """What was asked and answered so far, for the record."""
        return Asked(
            prepared=self.prepared,
            completion=self._completion,
            request=self._request,
            attempts=list(self._attempts),
            refits=list(self._refits),
            tool_use=self._tool_use,
            refused_tool_use=list(self._refused_tool_use),
            catch_ups=list(self.catch_up.runs) if self.catch_up is not None else [],
        )

    async def _ask(
        self,
        prepared: PreparedPrompt,
        on_delta: DeltaCallback,
        on_status: Callable[[str], Awaitable[None]],
    ) -> Completion:
        """One request of ``prepared``: the plain call, or the tool loop when tools are offered."""
        runtime, offer, cache = self.runtime, self.offer, cache_hints(prepared)
        if offer is None:
            return await runtime.model.complete(
                prepared.request_messages, on_delta=on_delta, cache=cache
            )
        fitted = prepared.fitted
        loop = await complete_using(
            runtime.model, prepared, offer,
            on_delta=on_delta, on_status=on_status, cache=cache,
            room_tokens=runtime.budgeter.budget().limit - fitted.total if fitted else None,
        )  # fmt: skip
        self._tool_use = loop
        final = loop.completion
        self._attempts.extend(loop.attempts[: -len(final.attempts) or None])  # final: with it
        return final

    async def _refit(self, prepared: PreparedPrompt, error: ModelContextTooLongError) -> None:
        """``prepared`` refused as too long: the budget learns the window, and the prompt is
        rebuilt to fit it (the tools keep their room)."""
        self._attempts.extend(error.attempts)
        if error.tool_progress is not None and error.tool_progress.rounds:
            self._refused_tool_use.append((len(self._refits) + 1, error.tool_progress))
        budgeter, fitted = self.runtime.budgeter, prepared.fitted
        room = None if self.offer is None else self.offer.with_room
        budget = await budgeter.after_overflow(error, fitted, room)
        stated = ", ".join(
            f"{label} {value}"
            for label, value in (("window", error.window), ("prompt tokens", error.prompt_tokens))
            if value is not None
        )
        self.prepared = refit_keeping_summary(prepared, budget, budgeter.counter())
        new = self.prepared.fitted
        self._refits.append(
            f"context too long ({stated or 'no numbers stated'}): prompt of "
            f"~{fitted.total if fitted else '?'} tokens rebuilt at "
            f"~{new.total if new else '?'} of {budget.describe()}"
        )
        trigger = prepared.selection.trigger
        log.warning("message %s: %s", trigger.id, self._refits[-1])

    async def _calibrate(self, prepared: PreparedPrompt, completion: Completion) -> None:
        """The server's count of the accepted prompt: with tools, the first request's (the
        prompt alone), with the tool definitions, which it counted too."""
        usage, definitions = completion.usage, 0
        if self._tool_use is not None and self.offer is not None:
            usage = self._tool_use.first_usage
            definitions = self.offer.tokens
        prompt_tokens = usage.prompt_tokens if usage else None
        await self.runtime.budgeter.observe(prepared.fitted, prompt_tokens, definitions)
