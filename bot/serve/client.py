"""The Discord client: gateway events in, answers out.

Gateway events feed the per-channel caches (create, edit, delete), so a busy channel's context
costs no REST calls. A message that calls for an answer becomes a ``Trigger``
(``bot.intake.admission``), waits out its author's burst (``bot.intake.burst``: a burst of
messages gets one answer) and is answered in its turn, one at a time per channel, each member
holding one place in line (``bot.intake.queue``). The slash commands are in
``bot.serve.commands``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

import nextcord

from bot.answering.answerer import Answerer
from bot.answering.catchup import Catchup
from bot.answering.forgotten import ForgottenPeople
from bot.answering.metrics import Metrics
from bot.answering.notices import bot_notices
from bot.answering.prompt_budget import PromptBudgeter
from bot.answering.prompt_memory import StoredPromptMemory
from bot.answering.result import Recorder
from bot.answering.seals import ChannelSeals
from bot.config.schema import Config, ConfigError
from bot.discord.compat import message_from_payload, set_rest_base
from bot.discord.dm_roles import DmRoles
from bot.discord.mentions import allowed_mentions
from bot.intake.admission import Admission
from bot.intake.burst import BurstWindow
from bot.intake.once import AnsweredOnce
from bot.intake.queue import AnswerQueue, AnswerSlots
from bot.intake.recall import longest_follow_minutes, recall_recent_answers
from bot.intake.store_wait import BoundedQuestions
from bot.intake.trigger import Trigger
from bot.model.client import ModelClient
from bot.serve.commands import register_commands
from bot.serve.metrics_server import MetricsServer
from bot.storage import Store, StoreError
from bot.tools.toolbox import Toolbox
from conversation.articles import ArticleService
from conversation.common import clean_text
from conversation.memory import BoundedMemory
from conversation.prompt import MaterializeOptions, Materializer, bot_name_in
from conversation.selection import Follower, is_seal, meaning_store
from conversation.sources import CacheRegistry, Slimmer

log = logging.getLogger(__name__)

INTENT_HELP = (
    "Discord refused the Message Content intent. Enable it for your bot in the developer "
    "portal (Applications > your bot > Bot > Privileged Gateway Intents > Message Content)."
)


def make_intents() -> nextcord.Intents:
    intents = nextcord.Intents.default()
    intents.message_content = True  # privileged: without it, content is empty in guilds
    return intents


def materialize_settings(config: Config) -> dict[str, Any]:
    """What the materializer takes from the config (``MaterializeOptions``' fields)."""
    return {
        "vision": config.model.vision,
        "max_text_chars": config.attachments.max_text_chars,
        "max_text_attachments": config.attachments.max_text_attachments,
    }


class ThreadwiseClient(nextcord.Client):
    """nextcord client wired to the intake, the answerer and the store."""

    def __init__(
        self,
        config: Config,
        *,
        articles: ArticleService | None,
        model: ModelClient,
        recorder: Recorder | None = None,
        store: Store | None = None,
        tools: Toolbox | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(
            intents=make_intents(),
            allowed_mentions=allowed_mentions(config.mentions),
            guild_ready_timeout=config.discord.guild_ready_timeout,
            # Our channel caches are the one place messages are kept, within [cache]
            # max_messages; nextcord's own deque would only serve its on_message_edit/_delete
            # object events (the bot listens to the raw ones) and keep copies alive past the
            # budget, so it holds none.
            max_messages=None,
            **client_options,
        )
        self.config = config
        self.store = store
        # The questions on a message's way to its answer (answered already? the channel's
        # seal?), each waited on a bounded time; a stall one meets stops them all until it ends.
        self.store_questions = BoundedQuestions(lambda: self.config.storage.claim_wait_seconds)
        self.caches = CacheRegistry(
            max_channels=config.cache.max_channels,
            max_messages=config.cache.max_messages_per_channel,
            max_total=config.cache.max_messages,
            slim=Slimmer(),
        )
        self.materializer = Materializer(MaterializeOptions(), articles)
        # Counted only when [metrics] port is set; served from login() to close().
        self.metrics = Metrics() if config.metrics.port is not None else None
        self.metrics_server: MetricsServer | None = None
        # What each message means, embedded off the event loop where the sentence model is
        # installed (the meaning extra); None: the plain score.
        self.meanings = meaning_store()
        self.answerer = Answerer(
            config,
            self.caches,
            self.materializer,
            model,
            bot_name=lambda channel: bot_name_in(channel, self.user) if self.user else "assistant",
            recorder=recorder,
            budgeter=PromptBudgeter(config.model, store),
            tools=tools,
            metrics=self.metrics,
            memory=(
                StoredPromptMemory(
                    store,
                    BoundedMemory(max_bytes=config.cache.max_prompt_bytes),
                    wait=lambda: self.config.storage.claim_wait_seconds,
                )
                if store is not None
                else None
            ),
            forgotten=ForgottenPeople(store),
            seals=ChannelSeals(store, questions=self.store_questions),
            meanings=self.meanings,
        )
        self._sessions = 0
        # DM channels by id: nextcord keeps no DM channel objects to look up edits in.
        self._channels: dict[int, Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._forget_watch: asyncio.Task[None] | None = None  # from login() to close()
        self._open_intake(store)
        if self.metrics is not None:
            self.metrics.watch(
                queue_length=self.queue.waiting_total,
                cache_messages=lambda: sum(len(cache) for cache in self.caches),
                cache_channels=lambda: len(self.caches),
            )
        self.answerer.catchup = Catchup(self.answerer, store, self)
        register_commands(self, self.answerer, store, self.caches)

    def _open_intake(self, store: Store | None) -> None:
        """The way from a gateway message to its answer: the door it goes through (becoming a
        ``Trigger``), its author's burst, the line. Each reads the settings when it is used,
        so a reloaded config applies to the next message."""
        self.admission = Admission(
            follower=Follower(),
            answered_once=AnsweredOnce(
                store.answered_async if store is not None else None,
                questions=self.store_questions,
            ),
            dm_roles=DmRoles(lambda: self.guilds),
            permissions=lambda: self.config.permissions,
            triggers_for=lambda channel: self.answerer.settings_for(channel).triggers,
        )
        self.answer_slots = AnswerSlots(lambda: self.config.triggers.max_concurrent_answers)
        self.queue = AnswerQueue(self._answer_now, self.answer_slots, self._spawn)
        self.burst = BurstWindow(
            lambda channel: self.answerer.settings_for(channel).triggers.burst_window_seconds,
            then=self.queue.submit,
        )

    def reconfigure(self, config: Config) -> None:
        """A reloaded config: read per message from here on (the permissions, how many answers
        at once), and the mentions Discord may ping made from it."""
        mentions = allowed_mentions(config.mentions)
        self.config = config
        self.allowed_mentions = mentions

    # ------------------------------------------------------------------ lifecycle

    async def login(self, token: str) -> None:
        # nextcord keeps its REST base as a class attribute; set it before the first request.
        set_rest_base(self.config.discord.api_base)
        await super().login(token)
        # Before the gateway connects, so no follow-up arrives before the bot knows its answers.
        if self.store is not None and self.user is not None:
            forgotten = self.answerer.forgotten
            with contextlib.suppress(StoreError):  # the watch reads it again soon
                await forgotten.poll()
            await recall_recent_answers(
                self.store,
                self.admission.follower,
                self.user.id,
                longest_follow_minutes(self.config),
                forgotten=dict(forgotten.at),
            )
            if self._forget_watch is None:  # not one of _tasks: those are answers in progress
                self._forget_watch = asyncio.create_task(forgotten.watch(self._forget))
        if self.metrics is not None and self.metrics_server is None:
            self.metrics_server = MetricsServer(self.metrics, self.config.metrics)
            await self.metrics_server.start()

    def _forget(self, people: set[int]) -> None:
        """People forget-user removed (maybe in another process): what this process remembers
        of them goes (the store's copies are scrubbed by forget-user itself)."""
        dropped = self.answerer.memory.drop(
            lambda sent: self.answerer.forgotten.holds(sent, people)
        )
        self.admission.follower.forget(people)
        self.answerer.channels.forget(people=people)
        log.info("dropped %d remembered request(s) holding a forgotten person", dropped)

    async def close(self) -> None:
        watch, self._forget_watch = self._forget_watch, None
        for task in [*self._tasks, *([watch] if watch is not None else [])]:
            task.cancel()
        await asyncio.gather(*self._tasks, *([watch] if watch else []), return_exceptions=True)
        if self.answerer.records is not None:  # what was answered, abandoned ones included
            await self.answerer.records.drain()
        await super().close()
        if self.metrics_server is not None:
            await self.metrics_server.stop()
            self.metrics_server = None
        await self.answerer.channels.clients.aclose()

    async def on_ready(self) -> None:
        assert self.user is not None
        if self._sessions:
            # A new session, not a resume: events between the two were never delivered, so
            # every channel's live coverage stops; its next message starts it again.
            for cache in self.caches:
                cache.stop_live()
        self._sessions += 1
        self.materializer.reconfigure(
            bot_user_id=self.user.id, notices=bot_notices(), **materialize_settings(self.config)
        )
        log.info("connected as %s (%s) to %d guild(s)", self.user, self.user.id, len(self.guilds))
        if self._sessions == 1 and self.application_id is not None:
            from bot.serve.startup import invite_url

            log.info("invite it with: %s", invite_url(self.application_id, self.config))

    # ------------------------------------------------------------------ gateway events

    async def on_message(self, message: nextcord.Message) -> None:
        cache = self.caches.for_channel(message.channel.id)
        cache.on_gateway_message(message)
        if self.meanings is not None:
            self.meanings.add(message)
        if message.guild is None:
            self._channels[message.channel.id] = message.channel
        if self.user is None:
            return
        if is_seal(message, self.user.id):  # /fresh: recorded, and the talk before is over
            self.admission.follower.sealed(message.channel.id)
            await self.answerer.seals.posted(message.channel.id, message.id)
        trigger = await self.admission.admit(message, cache, self.user.id)
        if trigger is not None:
            self._spawn(self.burst.wait_out(trigger))

    async def on_raw_message_edit(self, payload: nextcord.RawMessageUpdateEvent) -> None:
        data = payload.data
        if "content" not in data:
            return  # an embed-only update: nothing the conversation said changed
        author_id = int(data.get("author", {}).get("id", 0)) or None
        bot_id = self.user.id if self.user is not None else None
        # The bot's own edits are its streaming answer, already recorded with the interaction.
        if self.store is not None and author_id != bot_id:
            edited_at = nextcord.utils.parse_time(data.get("edited_timestamp")) or datetime.now(UTC)
            await self.store.record_edit(
                payload.message_id,
                payload.channel_id,
                author_id,
                clean_text(str(data["content"])),
                edited_at,
            )
        cache = self.caches.get(payload.channel_id)
        channel = self.get_channel(payload.channel_id) or self._channels.get(payload.channel_id)
        if cache is None or channel is None or "author" not in data:
            return
        try:
            message = message_from_payload(self, channel, data)
        except (KeyError, TypeError, ValueError) as error:  # a partial payload
            log.debug("edit of %s not cached: %s", payload.message_id, error)
            return
        cache.add(message)

    async def on_raw_message_delete(self, payload: nextcord.RawMessageDeleteEvent) -> None:
        await self._deleted(payload.channel_id, [payload.message_id])

    async def on_raw_bulk_message_delete(self, payload: nextcord.RawBulkMessageDeleteEvent) -> None:
        await self._deleted(payload.channel_id, sorted(payload.message_ids))

    async def _deleted(self, channel_id: int, message_ids: list[int]) -> None:
        """Deleted messages leave what this process holds at once, all of them (the cache, the
        seals, what is derived from them), before any waits on the store: a stalled store
        must not let the next answer send the rest of a bulk deletion. The store's writes
        follow, one per message; one that fails is logged and the others still go."""
        cache = self.caches.get(channel_id)
        # What is derived from them (the score's words, their meaning) goes at once, too.
        self.answerer.channels.forget(message_ids)
        self.admission.follower.deleted(message_ids)
        for message_id in message_ids:
            if cache is not None:
                cache.on_delete(message_id)
            self.answerer.seals.deleted(channel_id, message_id)  # deleting a seal un-seals
        if self.store is None:
            return
        for message_id in message_ids:
            try:
                await self.store.record_delete(message_id)  # a seal's row too
            except Exception as error:  # the store's trouble; the next deletion still goes
                log.warning("could not record the deletion of %s: %s", message_id, error)

    # ------------------------------------------------------------------ answering

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task the client keeps until it ends (and cancels on close)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _answer_now(self, trigger: Trigger) -> None:
        message = trigger.message
        cache = self.caches.get(message.channel.id)
        if cache is not None and cache.is_deleted(message.id):
            log.info("message %s was deleted before the answer; not answering", message.id)
            return
        await self.answerer.answer(trigger)


__all__ = ["ConfigError", "ThreadwiseClient"]
