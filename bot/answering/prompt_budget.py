"""The token budget of the bot's prompts, and what it learns from the model server.

Two things are learned per model and kept in the store, so a restart does not forget them: the
ratio of the server's real ``prompt_tokens`` to our estimate (calibration), and a context window
smaller than ``[model] context_tokens`` when a server's "context too long" answer states one.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import time
from collections.abc import Callable

from bot.config.model_settings import ModelSettings
from bot.model.errors import ModelContextTooLongError
from bot.storage import Store
from bot.storage.limits import ModelLimits
from conversation.prompt import Budget, Calibration, FittedPrompt, TokenCounter, prompt_tokens

log = logging.getLogger(__name__)

SHRINK_WITHOUT_NUMBERS = 0.7  # a refused prompt, the server not saying why: 30% smaller
MIN_PROMPT_TOKENS = 256
SAVED_SAMPLES = 10
"""A calibration is stored at each of its first samples (they move it most); then at most once
per ``SAVE_SECONDS`` per model, not at every answer (a store write each, through the writer
thread, for an average that barely moves): a restart loses at most that much learning."""
SAVE_SECONDS = 60.0
SAVE_WAIT_SECONDS = 0.25
"""How long an answer waits for its calibration to be stored (milliseconds on a healthy store);
then the write goes on without it."""


class PromptBudgeter:
    """Budgets and token counters per model, learning from answers and refusals."""

    def __init__(self, settings: ModelSettings, store: Store | None = None) -> None:
        self.settings = settings
        self.store = store
        self._limits: dict[str, ModelLimits] = {}
        self._saved_at: dict[str, float] = {}  # when each model's calibration was last stored
        self._saving: set[asyncio.Future[None]] = set()  # writes outlasting their answer's wait
        if store is not None:
            try:
                self._limits = store.model_limits()
            except Exception as error:  # an unreadable table must not stop the bot answering
                log.warning("could not read the learned model limits: %s", error)

    def for_settings(self, settings: ModelSettings) -> PromptBudgeter:
        """The budgeter of a channel with other ``[model]`` settings (its own window or model),
        sharing what is learned per model name with this one."""
        other = copy.copy(self)  # the same _limits dict: learning is per model, not per channel
        other.settings = settings
        return other

    def limits(self, model: str | None = None) -> ModelLimits:
        model = model or self.settings.name
        return self._limits.get(model) or ModelLimits(model=model)

    def budget(self, model: str | None = None) -> Budget:
        """Configured window (or the smaller one a server stated), minus the answer's reserve."""
        window = self.settings.context_tokens
        limits = self.limits(model)
        # A window learned under another context_tokens is the operator's to overrule (a
        # server restarted with a larger window); windows stored without it are kept.
        learned = limits.window
        if learned is not None and limits.window_for in (None, window):
            window = min(window, learned)
        reserve = self.settings.answer_reserve
        if reserve >= window:  # a learned window smaller than the configured reserve
            reserve = window // 4
        return Budget(window=window, reserve=reserve)

    def counter(self, model: str | None = None) -> TokenCounter:
        limits = self.limits(model)
        return TokenCounter(Calibration(ratio=limits.ratio, samples=limits.samples))

    async def observe(
        self, fitted: FittedPrompt | None, reported: int | None, beside: int = 0
    ) -> None:
        """Calibrate from the ``prompt_tokens`` a server reported for an accepted prompt;
        ``beside``: the estimate of what the request carried besides its messages (the tool
        definitions), which the server counted too."""
        if fitted is None or reported is None or reported > fitted.budget.window:
            return  # over the window the count cannot be trusted (the server may have cut)
        if not self._calibrate(prompt_tokens(fitted.nodes) + beside, reported):
            return
        limits = self.limits()
        now = time.monotonic()
        last = self._saved_at.get(limits.model)
        if limits.samples <= SAVED_SAMPLES or last is None or now - last >= SAVE_SECONDS:
            await self._save(limits)

    async def after_overflow(
        self,
        error: ModelContextTooLongError,
        fitted: FittedPrompt | None,
        with_room: Callable[[Budget], Budget] | None = None,
    ) -> Budget:
        """Learn from a "context too long" answer; the budget to rebuild the prompt with.

        ``with_room`` keeps out of the learned budget what the first one kept out beyond the
        answer (the tools' definitions and results); a budget shrunk from the refused prompt
        alone needs none: that prompt was already fitted without it."""
        model = self.settings.name
        limits = self.limits(model)
        if error.window is not None and error.window < self.budget(model).window:
            limits = limits.model_copy(
                update={"window": error.window, "window_for": self.settings.context_tokens}
            )
            self._limits[model] = limits
            log.warning(
                "model %s has a context window of %d tokens, smaller than [model] "
                "context_tokens=%d; using %d",
                model,
                error.window,
                self.settings.context_tokens,
                error.window,
            )
        if fitted is not None and error.prompt_tokens is not None:
            self._calibrate(prompt_tokens(fitted.nodes), error.prompt_tokens)
        await self._save(self.limits(model))
        budget = self.budget(model)
        if with_room is not None:
            budget = with_room(budget)
        if fitted is not None and error.window is None and error.prompt_tokens is None:
            # Nothing to learn from: ask for less than what was refused.
            limit = max(math.floor(fitted.total * SHRINK_WITHOUT_NUMBERS), MIN_PROMPT_TOKENS)
            if limit < budget.limit:
                budget = Budget(window=budget.window, reserve=budget.window - limit)
        return budget

    def _calibrate(self, estimated: int, reported: int) -> bool:
        """One more sample for the current model; False when it was not usable."""
        limits = self.limits()
        calibration = Calibration(ratio=limits.ratio, samples=limits.samples).observe(
            estimated, reported
        )
        if calibration.samples == limits.samples:
            return False
        self._limits[limits.model] = limits.model_copy(
            update={"ratio": calibration.ratio, "samples": calibration.samples}
        )
        return True

    async def _save(self, limits: ModelLimits) -> None:
        if self.store is None:
            return
        self._saved_at[limits.model] = time.monotonic()
        saving = asyncio.ensure_future(self.store.save_model_limits(limits))
        # A stalled store must not hold the answer: after a short wait the write goes on alone,
        # and while one is still out, the next answers do not wait at all.
        if not self._saving:
            await asyncio.wait({saving}, timeout=SAVE_WAIT_SECONDS)
        if saving.done():
            _saved(saving, limits.model)
        else:
            self._saving.add(saving)
            saving.add_done_callback(self._saving.discard)
            saving.add_done_callback(lambda done: _saved(done, limits.model))


def _saved(saving: asyncio.Future[None], model: str) -> None:
    """A calibration's write, ended: losing one is no reason to lose an answer (logged)."""
    error = None if saving.cancelled() else saving.exception()
    if error is not None:
        log.warning("could not store the model limits of %s: %s", model, error)
