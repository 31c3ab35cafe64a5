"""The Discord client: gateway events in, answers out.

Gateway events feed the per-channel caches (create, edit, delete), so a busy channel's context
costs no REST calls. Triggers are debounced per person (a burst of messages gets one answer)
and answered one at a time per channel, each member holding one place in line
(``bot.answering.queue``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import nextcord

from bot.answering.answerer import Answerer, Recorder
from bot.answering.metrics import Metrics
from bot.answering.notices import bot_notices
from bot.answering.once import AnsweredOnce
from bot.answering.prompt_budget import PromptBudgeter
from bot.answering.prompt_memory import StoredPromptMemory
from bot.answering.queue import AnswerQueue, AnswerSlots
from bot.config.schema import Config, ConfigError, TriggerSettings
from bot.config.validators import snowflake
from bot.discord.compat import message_from_payload, set_rest_base
from bot.discord.dm_roles import DmRoles, RoleLookupFailed
from bot.discord.limits import DISCORD_MESSAGE_LIMIT
from bot.discord.mentions import allowed_mentions
from bot.discord.triggers import has_role_rules, permitted, trigger_kind
from bot.discord.visibility import may_read_history, may_view_channel
from bot.model.client import ModelClient
from bot.serve.metrics_server import MetricsServer
from bot.storage import Store
from bot.tools.toolbox import Toolbox
from conversation.articles.service import ArticleService
from conversation.common.text import clean_text
from conversation.prompt.materialize import MaterializeOptions, Materializer
from conversation.prompt.names import bot_name_in, shown_name
from conversation.selection.follower import Follower, follow_enabled
from conversation.selection.seal import SEAL_TEXT, is_seal
from conversation.sources.cache import CacheRegistry
from conversation.sources.slim import Slimmer

log = logging.getLogger(__name__)

INTENT_HELP = (
    "Discord refused the Message Content intent. Enable it for your bot in the developer "
    "portal (Applications > your bot > Bot > Privileged Gateway Intents > Message Content)."
)


FRESH_REFUSED = "Only members who may manage messages here can start the context over."
RECALLED_INTERACTIONS = 200
"""The latest interactions read at start for the bot's recent answers (one per channel kept)."""


def make_intents() -> nextcord.Intents:
    intents = nextcord.Intents.default()
    intents.message_content = True  # privileged: without it, content is empty in guilds
    return intents


class ThreadwiseClient(nextcord.Client):
    """nextcord client wired to the builder, the materializer, the model and the store."""

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
            memory=StoredPromptMemory(store) if store is not None else None,
        )
        self._sessions = 0
        # DM channels by id: nextcord keeps no DM channel objects to look up edits in.
        self._channels: dict[int, Any] = {}
        self._pending: dict[tuple[int, int], Any] = {}
        self.follower = Follower()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.answer_slots = AnswerSlots(lambda: self.config.triggers.max_concurrent_answers)
        self.queue = AnswerQueue(self._answer_now, self.answer_slots, self._spawn)
        # Trigger id -> why it is answered, until answered or dropped: its kind (for the
        # metrics) and, for a follow-up, the explanation line.
        self._kinds: dict[int, tuple[str, str | None]] = {}
        self.answered_once = AnsweredOnce(store.answered_async if store is not None else None)
        if self.metrics is not None:
            self.metrics.watch(
                queue_length=self.queue.waiting_total,
                cache_messages=lambda: sum(len(cache) for cache in self.caches),
                cache_channels=lambda: len(self.caches),
            )
        self.dm_roles = DmRoles(lambda: self.guilds)
        self._register_commands()

    def _register_commands(self) -> None:
        @self.slash_command(
            name="context",
            description="Show which messages the bot's latest answer here used, and why.",
        )
        async def context_command(
            interaction: nextcord.Interaction,
            message_id: str | None = nextcord.SlashOption(
                description="An answer (or its trigger) to explain; default: the latest answer",
                required=False,
                default=None,
            ),
        ) -> None:
            asker = interaction.user
            text = (
                await self.explain_for(interaction.channel_id, message_id, asker)
                if asker is not None
                else "I cannot tell who is asking."
            )
            await interaction.response.send_message(text, ephemeral=True)

        @self.slash_command(
            name="fresh",
            description="Start the conversation over: the bot reads nothing said here before it.",
        )
        async def fresh_command(interaction: nextcord.Interaction) -> None:
            in_dm = interaction.guild_id is None
            if not in_dm and not interaction.permissions.manage_messages:
                await interaction.response.send_message(FRESH_REFUSED, ephemeral=True)
                return
            await interaction.response.send_message(SEAL_TEXT)

        from bot.serve.model_command import model_choices

        @self.slash_command(
            name="model",
            description="List the models, say which answers here, or choose one for this channel.",
            # Discord hides it from the others; the handler refuses them all the same (and in
            # DMs, where there is no server to manage).
            default_member_permissions=nextcord.Permissions(manage_guild=True),
        )
        async def model_command(
            interaction: nextcord.Interaction,
            name: str | None = nextcord.SlashOption(
                description="A model to answer with in this channel until the next restart or "
                "reload; 'default' goes back to the config's",
                required=False,
                default=None,
                # The named models are fixed until a restart, so Discord can offer them.
                choices=model_choices(self.config) or None,
            ),
        ) -> None:
            from bot.serve.model_command import model_command_text

            text = model_command_text(
                self.answerer.channels,
                interaction.channel,
                may_choose=interaction.guild_id is not None
                and interaction.permissions.manage_guild,
                name=name,
            )
            await interaction.response.send_message(text, ephemeral=True)

    async def explain_for(
        self, channel_id: int | None, message_id: str | None, asker: nextcord.abc.User
    ) -> str:
        """The text of ``/context``: short enough for one ephemeral Discord message.

        An answer from a channel the asker cannot view is "not found", worded exactly like an
        id the store never saw (see ``bot.discord.visibility``).
        """
        from bot.storage import StoreError, not_in_store, render_text, without_linked_text

        if self.store is None:
            return "Answers are not being recorded here ([storage] is not set up)."
        target: int | None = None
        if message_id:
            try:
                target = snowflake(message_id)
            except argparse.ArgumentTypeError:
                return "That is not a message id (right-click a message, Copy Message ID)."
        elif channel_id is not None and self.user is not None:
            cache = self.caches.get(channel_id)
            me = self.user.id
            mine = (
                [m for m in cache.messages() if m.author.id == me and not is_seal(m, me)]
                if cache
                else []
            )
            target = mine[-1].id if mine else None
        if target is None:
            return "I have not answered anything in this channel since I started."
        try:
            explanation = await self.store.explain_async(target)
        except StoreError as error:
            return str(error)
        if not await may_view_channel(
            self,
            asker,
            guild_id=explanation.guild_id,
            channel_id=explanation.channel_id,
            dm_participant_id=explanation.trigger_author_id,
            restricted=any(e.action == "history_restricted" for e in explanation.work_log),
        ):
            return str(not_in_store(target))
        return render_text(without_linked_text(explanation), limit=DISCORD_MESSAGE_LIMIT)

    # ------------------------------------------------------------------ lifecycle

    async def login(self, token: str) -> None:
        # nextcord keeps its REST base as a class attribute; set it before the first request.
        set_rest_base(self.config.discord.api_base)
        await super().login(token)
        # Before the gateway connects, so no follow-up arrives before the bot knows its answers.
        await self._recall_recent_answers()
        if self.metrics is not None and self.metrics_server is None:
            self.metrics_server = MetricsServer(self.metrics, self.config.metrics)
            await self.metrics_server.start()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
        self.materializer.options = MaterializeOptions(
            bot_user_id=self.user.id,
            vision=self.config.model.vision,
            max_text_chars=self.config.attachments.max_text_chars,
            max_text_attachments=self.config.attachments.max_text_attachments,
            notices=bot_notices(),
        )
        log.info("connected as %s (%s) to %d guild(s)", self.user, self.user.id, len(self.guilds))
        if self._sessions == 1 and self.application_id is not None:
            from bot.serve.startup import invite_url

            log.info("invite it with: %s", invite_url(self.application_id))

    async def _recall_recent_answers(self) -> None:
        """The bot's latest answer per channel within the follow window, from the store: a
        follow-up right after a restart is followed as it was before it."""
        if self.store is None or self.user is None:
            return
        from bot.storage import StoreError

        store, bot_id = self.store, self.user.id
        since = datetime.now(UTC) - timedelta(minutes=self.config.triggers.follow_minutes)

        def recent() -> list[Any]:
            latest: dict[int, Any] = {}
            for summary in store.recent_interactions(limit=RECALLED_INTERACTIONS):
                if summary.ended_at < since or summary.outcome != "success":
                    continue
                if summary.channel_id not in latest:
                    latest[summary.channel_id] = store.get_interaction(summary.interaction_id)
            return list(latest.values())

        try:
            records = await asyncio.to_thread(recent)
        except StoreError as error:
            log.warning("could not read the recent answers from the store: %s", error)
            return
        for record in records:
            if not record.answer_message_ids:
                continue
            sent = record.request_messages[-1].get("content") if record.request_messages else ""
            self.follower.recall_answer(
                record.channel_id,
                bot_id,
                (record.trigger_message_id, record.trigger_author_id, str(sent or "")),
                record.answer_message_ids,
                record.answer,
            )
        if records:
            log.info("recalled the latest answer in %d channel(s) from the store", len(records))

    # ------------------------------------------------------------------ gateway events

    async def on_message(self, message: nextcord.Message) -> None:
        cache = self.caches.for_channel(message.channel.id)
        cache.on_gateway_message(message)
        if message.guild is None:
            self._channels[message.channel.id] = message.channel
        if self.user is None:
            return
        if message.author.id == self.user.id and not is_seal(message, self.user.id):
            self.follower.saw_bot_message(message, message.channel.id)
        reference = message.reference
        replies_to_bot = False
        if reference is not None and reference.message_id is not None:
            known = cache.get(reference.message_id)
            replies_to_bot = getattr(getattr(known, "author", None), "id", None) == self.user.id
        triggers = self.answerer.settings_for(message.channel).triggers
        kind = trigger_kind(message, self.user.id, triggers, bot_message=replies_to_bot)
        followed = None if kind is not None else self._follows(message, cache, triggers)
        if followed is not None:
            kind = "follow"
        if kind is None:
            return
        if not await self.answered_once.claim(message.id):
            log.info("message %s delivered again or answered before; not answering", message.id)
            return
        if not await self._permitted(message):
            log.info("ignored message %s from %s: not permitted", message.id, message.author.id)
            return
        if followed is not None:
            log.info("following message %s: %s", message.id, followed)
        self._kinds[message.id] = (kind, followed)
        self._spawn(self._debounced_answer(message))

    def _follows(
        self, message: nextcord.Message, cache: Any, settings: TriggerSettings
    ) -> str | None:
        """The explanation line of a message that calls no one, answered when it continues the
        bot's conversation (``bot.discord.follow``); None when it is not. From the cache
        alone, never for a bot or in a DM, and never for a member who may not read the
        channel's history (the conversation it would continue is that history: issue 23's
        rule, ``bot.discord.visibility``)."""
        assert self.user is not None
        if (
            message.guild is None
            or message.author.id == self.user.id
            or getattr(message.author, "bot", False)
            or not follow_enabled(settings, message.channel)
            or not may_read_history(message.channel, message.author)
            or not self.follower.spoke_lately(message, message.channel.id, settings.follow_minutes)
        ):
            return None
        decision = self.follower.decide(message, cache, self.user.id, settings)
        if not decision.answer or decision.kind != "followed":
            return None

        def name_of(user_id: int) -> str:
            """Named as the prompt names them (``shown_name``: not nextcord's display_name)."""
            member = message.guild.get_member(user_id) if message.guild is not None else None
            if member is None:
                member = self.follower.author_in(cache, message, user_id)
            return (shown_name(member) if member is not None else "") or f"user {user_id}"

        return decision.describe(name_of)

    async def _permitted(self, message: nextcord.Message) -> bool:
        """The permission lists, with a DM author's roles looked up in the shared guilds."""
        settings = self.config.permissions
        if message.guild is not None or not has_role_rules(settings):
            return permitted(message, settings)
        if message.author.id in settings.blocked_users:
            return False  # no lookup needed to refuse
        try:
            roles = await self.dm_roles.held(
                message.author.id, (*settings.blocked_roles, *settings.allowed_roles)
            )
        except RoleLookupFailed as error:
            # Blocks always win: a person whose roles cannot be checked is not answered.
            log.warning("roles of %s for a DM unknown, not answering: %s", message.author.id, error)
            return False
        return permitted(message, settings, roles=roles)

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
        cache = self.caches.get(channel_id)
        for message_id in message_ids:
            if cache is not None:
                cache.on_delete(message_id)
            if self.store is not None:
                await self.store.record_delete(message_id)

    # ------------------------------------------------------------------ answering

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task the client keeps until it ends (and cancels on close)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _debounced_answer(self, message: nextcord.Message) -> None:
        """Wait out a burst: only the person's latest message in it goes in line."""
        key = (message.channel.id, message.author.id)
        waiting = self._pending.get(key)
        if waiting is not None and waiting.id > message.id:
            self._kinds.pop(message.id, None)
            return  # a newer message of the burst got here first (its DM role check was quicker)
        self._pending[key] = message
        settings = self.answerer.settings_for(message.channel)
        await asyncio.sleep(settings.triggers.burst_window_seconds)
        if self._pending.get(key) is not message:
            self._kinds.pop(message.id, None)
            return
        del self._pending[key]
        replaced = self.queue.submit(message)
        if replaced is not None:
            self._kinds.pop(replaced.id, None)

    async def _answer_now(self, message: nextcord.Message) -> None:
        kind, followed = self._kinds.pop(message.id, ("unknown", None))
        cache = self.caches.get(message.channel.id)
        if cache is not None and cache.is_deleted(message.id):
            log.info("message %s was deleted before the answer; not answering", message.id)
            return
        await self.answerer.answer(message, followed=followed, kind=kind)


__all__ = ["ConfigError", "ThreadwiseClient"]
