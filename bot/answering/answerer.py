"""One answer, start to end: the channel's settings, the prompt, the model, the post, what is
kept. ``Answerer.answer`` tells it in that order, one named step each.

An answer is an *interaction*: the trigger and everything done to answer it. Whatever
fails, the user gets one short line, the operator the detail in the log, the record says what
happened, and the bot keeps running: the failures are handled in one place (``_failed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.answering.asking import Asking
from bot.answering.catchup import Catchup
from bot.answering.catchup_tool import catchup_tool_for
from bot.answering.channels import ChannelRuntime, ChannelRuntimes, ModelClients
from bot.answering.forgotten import ForgottenPeople
from bot.answering.metrics import Metrics
from bot.answering.prompt_budget import PromptBudgeter
from bot.answering.record_line import RecordLine
from bot.answering.result import (
    ABANDONED,
    STOPPING_LINE,
    UNEXPECTED_LINE,
    AnswerResult,
    Ending,
    Recorder,
)
from bot.answering.seals import ChannelSeals
from bot.answering.thread_memory import ThreadMemory
from bot.answering.tool_use import offer_for
from bot.config.schema import Config
from bot.discord.conversation_threads import (
    is_bots_thread,
    open_thread,
    should_move,
    thread_name,
    without_thread_starters,
)
from bot.discord.message_links import DiscordLinkResolver
from bot.discord.posting import ReplyStreamer, typing_indicator
from bot.discord.status_reaction import StatusReaction
from bot.discord.triggers import TriggerMessage
from bot.discord.visibility import history_restriction
from bot.intake.trigger import Trigger
from bot.model.call import Completion
from bot.model.client import ModelClient
from bot.model.errors import ModelError
from bot.tools.tool_images import ToolImage
from bot.tools.toolbox import Toolbox
from conversation.common import clean_text
from conversation.memory import (
    BoundedMemory,
    ChannelNow,
    Continuity,
    PromptMemory,
    SentPrompt,
    answer_node,
    discord_ids,
    remembered_prompt,
    sent_prompt,
)
from conversation.prompt import Materializer, PreparedPrompt, persona_for, prepare_prompt
from conversation.selection import ContextSelection, MeaningStore, sealed
from conversation.sources import (
    HISTORY_UNREADABLE,
    CacheRegistry,
    ChannelReader,
    DiscordChannelSource,
    RestrictedReader,
)

log = logging.getLogger(__name__)

MOVES_KEPT = 1024
"""Answers a thread was opened from, remembered so their conversation moves once: far more
conversations than a channel's memory continues at once."""
SHUTDOWN_GRACE_SECONDS = 0.5
"""How long a stopping bot may spend telling a person their answer was cut short."""


class Answerer:
    """Shared by all channels: the caches, the materializer, the model and the memory."""

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
        forgotten: ForgottenPeople | None = None,
        seals: ChannelSeals | None = None,
        meanings: MeaningStore | None = None,
    ) -> None:
        self.config = config
        # What each answer sent, so a follow-up's request starts with it (conversation.memory).
        self.memory: PromptMemory = memory or BoundedMemory(max_bytes=config.cache.max_prompt_bytes)
        # Who forget-user removed (polled from the store): never sent or remembered again.
        self.forgotten = forgotten or ForgottenPeople(None)
        # Each channel's latest /fresh seal as the store recorded it (a cold cache's too).
        self.seals = seals or ChannelSeals(None)
        self.caches = caches
        # What the messages mean, for the score that reads it (None: the plain score).
        self.meanings = meanings
        self.materializer = materializer
        self.model = model
        self.bot_name = bot_name
        self.recorder = recorder
        # Written after the answer, so a stalled store never holds the channel's turn.
        self.records = (
            RecordLine(
                recorder,
                written=metrics.store_write.observe if metrics is not None else None,
            )
            if recorder is not None
            else None
        )
        self.budgeter = budgeter or PromptBudgeter(config.model)
        self.tools = tools
        # The catch-up its catch_up tool runs, /catchup's too (set by the client, which knows
        # the store); None: not offered.
        self.catchup: Catchup | None = None
        self.metrics = metrics
        self._moved: OrderedDict[int, None] = OrderedDict()  # answers a thread was opened from
        self.channels = ChannelRuntimes(
            config,
            clients=ModelClients(model, config.models),
            budgeter=self.budgeter,
            links=DiscordLinkResolver(),
            meanings=meanings,
        )

    def settings_for(self, channel: Any) -> Config:
        """The effective config of a channel: its ``[[channels]]`` table's, else the top level."""
        return self.channels.settings_for(channel)

    def reconfigure(self, config: Config) -> None:
        """A reloaded config: every channel's parts are built again (``/model`` choices end)."""
        channels = self.channels
        self.channels = ChannelRuntimes(
            config,
            clients=channels.clients,
            budgeter=self.budgeter,
            links=channels.links,
            meanings=self.meanings,
            lengths=channels.lengths,
        )
        self.config = config

    async def answer(self, trigger: Trigger) -> AnswerResult:
        """The answer to ``trigger``, posted, recorded and counted; cancelled (the bot is
        stopping), it leaves the person a line and a record, then the cancellation goes on."""
        started, began = datetime.now(UTC), time.perf_counter()
        message, overhead = trigger.message, None  # overhead: trigger to request, our own cost
        runtime = self.channels.runtime_for(message.channel)  # the channel's settings
        reply = ReplyStreamer(
            message,
            self.config.mentions,
            edit_interval=self.config.replies.edit_interval_seconds,
            max_messages=self.config.replies.max_messages_per_answer,
        )
        asking = Asking(runtime)
        status = StatusReaction.for_trigger(message, runtime.config.status)  # [status]
        status.seen()

        async def tool_status(line: str) -> None:
            status.using_tool()
            await reply.status(line)

        try:
            async with typing_indicator(message.channel):
                previous = await self._prompt(message, runtime, asking)  # the prompt, the tools
                overhead = time.perf_counter() - began
                completion = await asking.complete(  # the model, refits included
                    # Its text goes to Discord and the store too: made encodable on arrival.
                    on_delta=lambda delta: reply.add(clean_text(delta)),
                    on_status=tool_status,
                )
            assert asking.prepared is not None  # the prompt the model answered
            ending = await self._post(reply, completion, asking.prepared, asking.images())
            status.answered()
            await self._remember(message, asking.prepared, previous, ending, reply.message_ids)
            try:
                await self._maybe_move(message, runtime, asking.prepared, reply)
            except Exception:  # never the answer's failure
                log.exception("could not move the conversation of %s into a thread", message.id)
        except (Exception, asyncio.CancelledError) as error:
            ending = await self._failed(error, message, reply, asking)
            if ending.abandoned:
                status.abandon()
            else:
                status.failed()
        stopped = ending.abandoned
        if not stopped:  # the reaction's last change, before the next answer's
            try:
                await status.settled()
            except asyncio.CancelledError:  # stopping now: the answer is posted, and recorded
                status.abandon()
                stopped = True
        result = AnswerResult(
            trigger=trigger,
            started_at=started,
            ended_at=datetime.now(UTC),
            model_settings=runtime.config.model,
            asked=asking.asked(),
            ending=ending,
            posted_ids=reply.message_ids,
            overhead_seconds=overhead,
        )
        self._keep(result)  # the log, the store (after this turn), the metrics
        if stopped:
            raise asyncio.CancelledError
        return result

    async def _prompt(
        self, message: TriggerMessage, runtime: ChannelRuntime, asking: Asking
    ) -> SentPrompt | None:
        """What ``asking`` sends: the tools offered, and the prompt, selected and fitted to the
        channel's budget (room kept for the tools), then continuing the conversation's previous
        request (``conversation.memory``), which it returns (None: there is none).

        An asker who may not read the channel's history gets no earlier request: it holds what
        others may read (``bot.discord.visibility``); their prompt reads the channel only as
        they may (``RestrictedReader``).
        """
        channel = message.channel
        me = getattr(getattr(channel, "guild", None), "me", None)
        restriction = history_restriction(message, me.id if me is not None else 0)
        bot_id = self.materializer.options.bot_user_id or 0  # 0 before the gateway said it
        # A thread the bot opened goes on with its channel's conversation: the same persona,
        # and the channel request it came from (bot.answering.thread_memory).
        moved = is_bots_thread(channel, bot_id)
        home = getattr(channel, "parent", None) if moved else None
        # The channel's [tools]: taken once, for the budget and every request; catch_up
        # among them where its [catchup] offers it.
        asking.catch_up = catch_up = catchup_tool_for(self.catchup, message, runtime.config)
        own = [catch_up.tool] if catch_up is not None else []
        asking.offer = offer = offer_for(self.tools, runtime.config.tools, message, own)
        budget, counter = runtime.budgeter.budget(), runtime.budgeter.counter()
        if offer is not None:  # room for the tool definitions and the results
            budget = offer.with_room(budget)
        persona = persona_for(
            runtime.config.model.system_prompt, self.bot_name(channel), home or channel
        )
        source, cache = DiscordChannelSource(channel), self.caches.for_channel(channel.id)
        reader = (
            ChannelReader(source, cache)
            if restriction is None
            else RestrictedReader(source, cache, restriction)
        )
        seal = await self.seals.latest(channel.id)

        def narrow(chosen: ContextSelection) -> ContextSelection:
            """The seal, then the people forgotten: what this answer may not read."""
            return self.forgotten.narrow(
                sealed(without_thread_starters(chosen), cache, bot_id, seal), bot_id
            )

        asking.prepared = await prepare_prompt(
            message, reader, runtime.builder, self.materializer, persona,
            budget=budget, counter=counter,
            narrow=narrow,
        )  # fmt: skip
        if restriction is not None:
            return None
        memory, continuity = self.memory, Continuity(max_total=runtime.config.context.max_total)
        now = ChannelNow.of_cache(cache)
        if moved:  # the whole thread is the conversation: its channel part is kept as sent
            memory = ThreadMemory(self.memory, channel.id, channel.parent_id)
            continuity = dataclasses.replace(continuity, keep_share=0.0)
            # ...but not what was deleted (or edited) in the channel since the move.
            home_cache = self.caches.get(channel.parent_id)
            if home_cache is not None:
                now = now.with_home(ChannelNow.of_cache(home_cache))
        asking.prepared, previous = await remembered_prompt(
            asking.prepared, memory, channel.id,
            continuity=continuity,
            budget=budget, counter=counter, now=now,
            summaries=runtime.summaries,
        )  # fmt: skip
        return previous

    @staticmethod
    async def _post(
        reply: ReplyStreamer,
        completion: Completion,
        prepared: PreparedPrompt,
        images: Sequence[ToolImage] = (),
    ) -> Ending:
        """The whole answer posted over what streamed, with a note when the channel's history
        could not be read, and the images its tools returned attached."""
        answer = clean_text(completion.text)
        shown = answer
        if HISTORY_UNREADABLE in prepared.selection.problems:
            shown = f"{shown}\n\n*({HISTORY_UNREADABLE})*"
        await reply.finish(shown)
        attached = await reply.attach([(image.name, image.data) for image in images])
        return Ending("success", answer, images=tuple(images[:attached]))

    async def _remember(
        self,
        message: TriggerMessage,
        prepared: PreparedPrompt,
        previous: SentPrompt | None,
        ending: Ending,
        posted: list[int],
    ) -> None:
        """What this answer sent and said, for the next request in its conversation. Only an
        answer that was posted whole: a failed one is no turn the conversation went on from."""
        ids = list(posted)
        said = "\n".join([ending.answer, *(image.described() for image in ending.images)])
        answer = answer_node(said, ids)
        try:
            sent = sent_prompt(
                prepared, message.channel.id, answer=answer, answer_ids=ids, previous=previous
            )
            if self.forgotten.holds(sent):  # a person forgotten while it was answered
                return
            await self.memory.remember(sent)
        except Exception:  # a memory that cannot keep it costs the next answer its prefix only
            log.exception("could not remember what the answer to %s sent", message.id)

    async def _maybe_move(
        self,
        message: TriggerMessage,
        runtime: ChannelRuntime,
        prepared: PreparedPrompt,
        reply: ReplyStreamer,
    ) -> None:
        """The conversation into a thread opened from this answer, when ``[threads]`` says
        so (``bot.discord.conversation_threads``); a refusal leaves it in the channel. Once:
        a conversation that goes on in the channel after its move (its request holds the
        answer a thread was opened from) is not moved again at every answer."""
        answered = [n for n in prepared.graph.snapshot().nodes() if n.role == "assistant"]
        settings, channel = runtime.config.threads, message.channel
        if not reply.sent or not should_move(settings, channel, 1 + len(answered), message.content):
            return
        if any(i in self._moved for node in answered for i in discord_ids(node)):
            return
        opened_from = reply.sent[0]
        thread = await open_thread(
            opened_from, thread_name(self.bot_name(channel), datetime.now(UTC))
        )
        if thread is not None:
            self._moved[opened_from.id] = None
            while len(self._moved) > MOVES_KEPT:
                self._moved.popitem(last=False)
            log.info("conversation of %s moved into thread %s", message.id, thread.id)

    async def _failed(
        self, error: BaseException, message: TriggerMessage, reply: ReplyStreamer, asking: Asking
    ) -> Ending:
        """Every way an answer fails, in one place: the model failed (what it wrote is kept),
        something else did (a bug, Discord trouble), or the bot is stopping. The person is told
        in one line, under what they were already shown."""
        if isinstance(error, ModelError):
            log.warning("model failed for message %s: %s", message.id, error.detail)
            asking.failed(error)
            answer = clean_text(error.partial_text)
            await self._tell_user(reply, error.user_message, answer)
            return Ending("partial" if error.partial_text else "failure", answer, error.detail)
        if isinstance(error, asyncio.CancelledError):
            # The bot is stopping: leave the person a line instead of a half answer that looks
            # finished, and record what was done (``answer`` lets the cancellation go on).
            log.info("answer to message %s abandoned: the bot is stopping", message.id)
            answer = reply.text
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._tell_user(reply, STOPPING_LINE, answer), SHUTDOWN_GRACE_SECONDS
                )
            return Ending("partial" if answer else "failure", answer, ABANDONED)
        # A bug or Discord trouble: the bot must keep running.
        log.error("answer to message %s failed", message.id, exc_info=error)
        completion = asking.completion
        answer = (clean_text(completion.text) if completion else "") or reply.text
        await self._tell_user(reply, UNEXPECTED_LINE, answer)
        return Ending("failure", answer, f"{type(error).__name__}: {error}")

    @staticmethod
    async def _tell_user(reply: ReplyStreamer, line: str, partial: str) -> None:
        try:
            await reply.fail(line, partial)
        except Exception:
            log.exception("could not tell the user about a failure")

    def _keep(self, result: AnswerResult) -> None:
        """The answer in the log, in line for the store (``record_line``), in the metrics: no
        wait, so a stop cannot come between the answer and its record."""
        self._log(result)
        if self.records is not None:
            self.records.put(result)
        if self.metrics is not None:
            self.metrics.observe_answer(result)

    @staticmethod
    def _log(result: AnswerResult) -> None:
        prepared, completion = result.asked.prepared, result.asked.completion
        usage = completion.usage if completion else None
        trigger = result.trigger.message
        log.info(
            "answer channel=%s trigger=%s outcome=%s context=%s rest_calls=%s model_latency=%s "
            "tokens=%s/%s posted=%d",
            trigger.channel.id,
            trigger.id,
            result.ending.outcome,
            len(prepared.selection.messages) if prepared else "-",
            prepared.selection.rest_calls if prepared else "-",
            f"{completion.latency_seconds:.2f}s" if completion else "-",
            usage.prompt_tokens if usage else "-",
            usage.completion_tokens if usage else "-",
            len(result.posted_ids),
        )
