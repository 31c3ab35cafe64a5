"""One answer, start to end: build the context, ask the model, post the reply, keep a record.

An answer is an *interaction*: the trigger and everything done to answer it. Whatever
fails, the user gets one short line, the operator the detail in the log, the record says what
happened, and the bot keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from bot.answering.channels import ChannelRuntime, ChannelRuntimes, ModelClients
from bot.answering.prompt_budget import PromptBudgeter
from bot.answering.tool_use import Offer, complete_using, offer_for
from bot.config.model_settings import ModelSettings
from bot.config.schema import Config
from bot.discord.message_links import DiscordLinkResolver
from bot.discord.posting import ReplyStreamer
from bot.discord.triggers import TriggerMessage
from bot.discord.visibility import history_restriction
from bot.model.call import CacheHints, Completion, DeltaCallback
from bot.model.client import ModelClient
from bot.model.errors import ModelContextTooLongError, ModelError
from bot.model.tool_loop import ToolProgress
from bot.tools.toolbox import Toolbox
from conversation.common.text import clean_text
from conversation.graph.node import MessageNode
from conversation.memory.append import (
    ChannelNow,
    Continuity,
    refit_keeping_summary,
    remembered_prompt,
    sent_prompt,
)
from conversation.memory.recall import BoundedMemory, PromptMemory
from conversation.memory.sent import SentPrompt
from conversation.prompt.materialize import Materializer
from conversation.prompt.pipeline import PreparedPrompt, persona_for, prepare_prompt
from conversation.selection.builder import ContextBuilder
from conversation.selection.seal import sealed
from conversation.sources.cache import CacheRegistry
from conversation.sources.discord_source import HISTORY_UNREADABLE, DiscordChannelSource
from conversation.sources.read_access import RestrictedReader
from conversation.sources.reader import ChannelReader

if TYPE_CHECKING:
    from bot.answering.metrics import Metrics

log = logging.getLogger(__name__)

Outcome = Literal["success", "failure", "partial"]
ABANDONED = "abandoned: the bot stopped before the answer was finished"
STOPPING_LINE = "I am being restarted and could not finish this answer; please ask again shortly."
UNEXPECTED_LINE = "Something went wrong on my side, sorry."
SHUTDOWN_GRACE_SECONDS = 0.5
"""How long a stopping bot may spend telling a person their answer was cut short."""

# A "context too long" answer is retried with a rebuilt, smaller prompt this many times.
MAX_REFITS = 2


@dataclass
class AnswerResult:
    """Everything the interaction record needs about one answer."""

    trigger: TriggerMessage
    started_at: datetime
    ended_at: datetime | None = None
    prepared: PreparedPrompt | None = None
    completion: Completion | None = None
    answer: str = ""
    posted_ids: list[int] = field(default_factory=list)
    outcome: Outcome = "failure"
    error: str | None = None
    model_attempts: list[Any] = field(default_factory=list)
    request: dict[str, Any] | None = None
    overhead_seconds: float | None = None  # trigger to model request, our own cost
    refits: list[str] = field(default_factory=list)  # prompts refused as too long, and why
    followed: str | None = None  # answered without a call: why (see bot.discord.follow)
    tool_use: ToolProgress | None = None  # the tool rounds, when tools were offered
    # The tool rounds of prompts refused as too long, by the prompt's number (1: the first
    # sent): their calls ran, so they are recorded.
    refused_tool_use: list[tuple[int, ToolProgress]] = field(default_factory=list)
    model_settings: ModelSettings | None = None  # the channel's [model], as it answered


Recorder = Callable[[AnswerResult], Awaitable[None]]


def cache_hints(prepared: PreparedPrompt) -> CacheHints:
    """The prompt cache's key (the conversation) and the end of the prompt's reusable start."""
    return CacheHints(key=prepared.cache_key, stable_end=prepared.stable_end)


@contextlib.asynccontextmanager
async def typing_indicator(channel: Any) -> AsyncIterator[None]:
    """Show "typing..." while the answer is prepared, without waiting for Discord to ack it.

    nextcord's ``channel.typing()`` awaits the first request before the body runs, which put a
    REST round trip on every answer's critical path; here it runs beside the work instead.
    """

    async def keep_typing() -> None:
        while True:
            try:
                await channel.trigger_typing()
            except Exception as error:  # typing is cosmetic: never fail an answer for it
                log.debug("typing indicator failed: %s", error)
                return
            await asyncio.sleep(8)  # Discord shows it for about 10 seconds

    task = asyncio.create_task(keep_typing())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Answerer:
    """Shared by all channels: the caches, the builder, the materializer and the model."""

    def __init__(
        self,
        config: Config,
        caches: CacheRegistry,
        materializer: Materializer,
        model: ModelClient,
        *,
        bot_name: Callable[[Any], str],
        recorder: Recorder | None = None,
        budgeter: PromptBudgeter | None = None,
        tools: Toolbox | None = None,
        metrics: Metrics | None = None,
        memory: PromptMemory | None = None,
    ) -> None:
        self.config = config
        # What each answer sent, so a follow-up's request starts with it (conversation.memory).
        self.memory: PromptMemory = memory or BoundedMemory()
        self.caches = caches
        self.builder = ContextBuilder(config.context, links=DiscordLinkResolver())
        self.materializer = materializer
        self.model = model
        self.bot_name = bot_name
        self.recorder = recorder
        self.budgeter = budgeter or PromptBudgeter(config.model)
        self.tools = tools
        self.metrics = metrics
        self.channels = ChannelRuntimes(
            config,
            clients=ModelClients(model, config.models),
            budgeter=self.budgeter,
            links=self.builder.links,
        )

    def settings_for(self, channel: Any) -> Config:
        """The effective config of a channel: its ``[[channels]]`` table's, else the top level."""
        return self.channels.settings_for(channel)

    def reconfigure(self, config: Config) -> None:
        """A reloaded config: every channel's parts are built again (``/model`` choices end)."""
        self.channels = ChannelRuntimes(
            config,
            clients=self.channels.clients,
            budgeter=self.budgeter,
            links=self.builder.links,
        )

    async def answer(
        self, trigger: TriggerMessage, followed: str | None = None, *, kind: str = "unknown"
    ) -> AnswerResult:
        """``followed``: why a message that called no one is answered (``bot.discord.follow``),
        kept in the record for ``/context`` and ``explain``; ``kind`` (mention, reply, dm,
        always_on, follow) is for the metrics."""
        result = AnswerResult(trigger=trigger, started_at=datetime.now(UTC), followed=followed)
        began = time.perf_counter()
        channel = trigger.channel
        runtime = self.channels.runtime_for(channel)
        result.model_settings = runtime.config.model
        streamer = ReplyStreamer(
            trigger,
            self.config.mentions,
            edit_interval=self.config.replies.edit_interval_seconds,
            max_messages=self.config.replies.max_messages_per_answer,
        )
        abandoned = False

        async def on_delta(delta: str) -> None:
            # The model's text goes to Discord and the store too: made encodable on arrival.
            await streamer.add(clean_text(delta))

        try:
            async with typing_indicator(channel):
                reader = self._reader(trigger)
                persona = persona_for(
                    runtime.config.model.system_prompt, self.bot_name(channel), channel
                )
                budget = runtime.budgeter.budget()
                # The channel's [tools]: taken once, for the budget and every request.
                offer = offer_for(self.tools, runtime.config.tools, trigger)
                if offer is not None:  # room for the tool definitions and the results
                    budget = offer.with_room(budget)
                cache, bot_id = self.caches.for_channel(channel.id), self._bot_id()
                fresh = await prepare_prompt(
                    trigger,
                    reader,
                    runtime.builder,
                    self.materializer,
                    persona,
                    budget=budget,
                    counter=runtime.budgeter.counter(),
                    narrow=lambda selection: sealed(selection, cache, bot_id),
                )
                result.prepared, previous = fresh, None
                # An asker who may not read the channel's history gets no earlier request: it
                # holds what others may read (``bot.discord.visibility``).
                if not isinstance(reader, RestrictedReader):
                    result.prepared, previous = await remembered_prompt(
                        fresh,
                        self.memory,
                        channel.id,
                        continuity=Continuity(max_total=runtime.config.context.max_total),
                        budget=budget,
                        counter=runtime.budgeter.counter(),
                        now=ChannelNow.of_cache(cache),
                        summaries=runtime.summaries,
                    )
                result.overhead_seconds = time.perf_counter() - began
                completion = await self._complete(result, on_delta, streamer.status, runtime, offer)
            result.completion = completion
            result.request = completion.request
            result.model_attempts.extend(completion.attempts)
            usage, definitions = completion.usage, 0
            if result.tool_use is not None and offer is not None:  # the prompt alone
                usage = result.tool_use.first_usage
                definitions = offer.tokens  # the server counted them
            await runtime.budgeter.observe(
                result.prepared.fitted, usage.prompt_tokens if usage else None, definitions
            )
            result.answer = clean_text(completion.text)
            shown = result.answer
            if HISTORY_UNREADABLE in result.prepared.selection.problems:
                shown = f"{shown}\n\n*({HISTORY_UNREADABLE})*"
            await streamer.finish(shown)
            result.outcome = "success"
            await self._remember(result, previous, streamer.message_ids)
        except ModelError as error:
            log.warning("model failed for message %s: %s", trigger.id, error.detail)
            result.error = error.detail
            result.model_attempts.extend(error.attempts)
            result.request = error.request
            result.tool_use = error.tool_progress  # the calls already run are recorded too
            result.answer = clean_text(error.partial_text)
            result.outcome = "partial" if error.partial_text else "failure"
            await self._tell_user(streamer, error.user_message, result.answer)
        except Exception as error:  # a bug or Discord trouble: the bot must keep running
            log.exception("answer to message %s failed", trigger.id)
            result.error = f"{type(error).__name__}: {error}"
            if not result.answer:
                result.answer = streamer.text
            await self._tell_user(streamer, UNEXPECTED_LINE, result.answer)
        except asyncio.CancelledError:
            # The bot is stopping: leave the person a line instead of a half answer that looks
            # finished, record what was done, and let the cancellation go on.
            abandoned = True
            log.info("answer to message %s abandoned: the bot is stopping", trigger.id)
            result.error = ABANDONED
            result.answer = streamer.text
            result.outcome = "partial" if result.answer else "failure"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._tell_user(streamer, STOPPING_LINE, result.answer),
                    SHUTDOWN_GRACE_SECONDS,
                )
        result.posted_ids = streamer.message_ids
        result.ended_at = datetime.now(UTC)
        self._log(result)
        if self.recorder is not None:
            writing = time.perf_counter()
            try:
                await self.recorder(result)
            except Exception:
                log.exception("could not record the interaction for message %s", trigger.id)
            else:
                if self.metrics is not None:
                    self.metrics.store_write.observe(time.perf_counter() - writing)
        if self.metrics is not None:
            self.metrics.observe_answer(result, kind, runtime.config.model.name)
        if abandoned:
            raise asyncio.CancelledError
        return result

    async def _remember(
        self, result: AnswerResult, previous: SentPrompt | None, posted: list[int]
    ) -> None:
        """What this answer sent and said, for the next request in its conversation. Only an
        answer that was posted whole: a failed one is no turn the conversation went on from."""
        if result.prepared is None:
            return
        ids = list(posted)
        answer = MessageNode(
            role="assistant",
            content=result.answer,
            message_id=str(ids[0]) if ids else None,
        )
        sent = sent_prompt(
            result.prepared,
            result.trigger.channel.id,
            answer=answer,
            answer_ids=ids,
            previous=previous,
        )
        try:
            await self.memory.remember(sent)
        except Exception:  # a memory that cannot keep it costs the next answer its prefix only
            log.exception("could not remember what the answer to %s sent", result.trigger.id)

    def _bot_id(self) -> int:
        """The bot's user id (0 before the gateway said it: then no message is its own)."""
        return self.materializer.options.bot_user_id or 0

    def _reader(self, trigger: TriggerMessage) -> ChannelReader:
        """The channel as the trigger's author may read it: all of it, or (without Read Message
        History there) only their messages and the bot's answers to them."""
        channel = trigger.channel
        source, cache = DiscordChannelSource(channel), self.caches.for_channel(channel.id)
        me = getattr(getattr(channel, "guild", None), "me", None)
        restriction = history_restriction(trigger, me.id if me is not None else 0)
        if restriction is None:
            return ChannelReader(source, cache)
        return RestrictedReader(source, cache, restriction)

    async def _complete(
        self,
        result: AnswerResult,
        on_delta: DeltaCallback,
        on_status: Callable[[str], Awaitable[None]],
        runtime: ChannelRuntime,
        offer: Offer | None,
    ) -> Completion:
        """Ask the model; on "context too long", rebuild a smaller prompt and ask again, with
        the same tools (``offer``) and the same room for them; calls the refused prompt's
        rounds ran are not run again (``Offer.memory``) and stay in the record.

        ``result.prepared`` always ends as the prompt last sent, so the record holds exactly
        the accepted prompt; the refused attempts stay in ``result.model_attempts``.
        """
        assert result.prepared is not None
        while True:
            try:
                cache = cache_hints(result.prepared)
                if offer is None:
                    return await runtime.model.complete(
                        result.prepared.request_messages, on_delta=on_delta, cache=cache
                    )
                fitted = result.prepared.fitted
                loop = await complete_using(
                    runtime.model, result.prepared, offer,
                    on_delta=on_delta, on_status=on_status, cache=cache,
                    room_tokens=runtime.budgeter.budget().limit - fitted.total if fitted else None,
                )  # fmt: skip
                result.tool_use = loop
                final = loop.completion
                earlier = loop.attempts[: -len(final.attempts) or None]
                result.model_attempts.extend(earlier)  # the final ones are added with it
                return final
            except ModelContextTooLongError as error:
                if len(result.refits) >= MAX_REFITS or error.partial_text:
                    raise
                result.model_attempts.extend(error.attempts)
                if error.tool_progress is not None and error.tool_progress.rounds:
                    prompt = len(result.refits) + 1
                    result.refused_tool_use.append((prompt, error.tool_progress))
                fitted = result.prepared.fitted
                room = None if offer is None else offer.with_room  # the tools keep their room
                budget = await runtime.budgeter.after_overflow(error, fitted, room)
                stated = ", ".join(
                    f"{label} {value}"
                    for label, value in (
                        ("window", error.window),
                        ("prompt tokens", error.prompt_tokens),
                    )
                    if value is not None
                )
                result.prepared = refit_keeping_summary(
                    result.prepared, budget, runtime.budgeter.counter()
                )
                new = result.prepared.fitted
                result.refits.append(
                    f"context too long ({stated or 'no numbers stated'}): prompt of "
                    f"~{fitted.total if fitted else '?'} tokens rebuilt at "
                    f"~{new.total if new else '?'} of {budget.describe()}"
                )
                log.warning("message %s: %s", result.trigger.id, result.refits[-1])

    @staticmethod
    async def _tell_user(streamer: ReplyStreamer, line: str, partial: str) -> None:
        try:
            await streamer.fail(line, partial)
        except Exception:
            log.exception("could not tell the user about a failure")

    def _log(self, result: AnswerResult) -> None:
        prepared = result.prepared
        completion = result.completion
        usage = completion.usage if completion else None
        log.info(
            "answer channel=%s trigger=%s outcome=%s context=%s rest_calls=%s model_latency=%s "
            "tokens=%s/%s posted=%d",
            result.trigger.channel.id,
            result.trigger.id,
            result.outcome,
            len(prepared.selection.messages) if prepared else "-",
            prepared.selection.rest_calls if prepared else "-",
            f"{completion.latency_seconds:.2f}s" if completion else "-",
            usage.prompt_tokens if usage else "-",
            usage.completion_tokens if usage else "-",
            len(result.posted_ids),
        )
