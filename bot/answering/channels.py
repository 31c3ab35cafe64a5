"""What answers in a channel: its effective settings with the builder, model client and budget
built for them, made once per channel table (and ``/model`` choice) and reused by every answer.

``ChannelSettings`` (``bot.config.channels``) says which settings a channel has; this module
turns them into working parts. Model clients are one per endpoint (``[model]``'s own and each
``[models.NAME]``, opened on first use); a channel whose persona, sampling or model name differs
gets a light client sharing its endpoint's connection. ``/model`` choices live here, in memory:
they last until the next restart or config reload, which builds a fresh ``ChannelRuntimes``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.answering.prompt_budget import PromptBudgeter
from bot.answering.summaries import summary_policy
from bot.config.channels import ChannelSettings, Place
from bot.config.model_settings import ModelSettings
from bot.config.named_models import NamedModel, model_with
from bot.discord.places import place_of
from bot.model.client import ModelClient
from conversation.memory import SummaryPolicy
from conversation.selection import ContextBuilder, ConversationLengths, MeaningStore

if TYPE_CHECKING:
    from bot.config.schema import Config


class ModelClients:
    """One client per model endpoint: ``None`` is ``[model]``'s own, a name a ``[models.NAME]``.

    Clients opened here (the named ones) are closed by :meth:`aclose`; the default one belongs
    to whoever passed it in.
    """

    def __init__(self, default: ModelClient, models: Mapping[str, NamedModel]) -> None:
        self.default = default
        self.models = dict(models)  # as at start: a new endpoint needs a restart
        self._opened: dict[str, ModelClient] = {}

    def endpoint(self, use: str | None, settings: ModelSettings) -> ModelClient:
        """The client of ``use``'s endpoint, opened with ``settings`` on first use."""
        if use is None:
            return self.default
        client = self._opened.get(use)
        if client is None:
            client = self._opened[use] = ModelClient(settings)
        return client

    def for_settings(self, settings: ModelSettings) -> ModelClient:
        """A client answering with ``settings`` (its endpoint's, or a light one sharing it)."""
        base = self.endpoint(settings.use, settings)
        return base if base.pinned(settings) == base.settings else base.with_settings(settings)

    async def aclose(self) -> None:
        for client in self._opened.values():
            await client.aclose()
        self._opened.clear()


@dataclass(frozen=True)
class ChannelRuntime:
    """Everything an answer in one channel reads, built for its effective settings."""

    config: Config
    model: ModelClient
    budgeter: PromptBudgeter
    builder: ContextBuilder
    source: str  # where its model comes from: "/model", "[[channels]] N" or "[model]"
    summaries: SummaryPolicy | None = None  # how cuts are summarized (None: plain cuts)


class ChannelRuntimes:
    """Per channel table and ``/model`` choice, the parts an answer uses; built on first use."""

    def __init__(
        self,
        config: Config,
        *,
        clients: ModelClients,
        budgeter: PromptBudgeter,
        links: Any,
        meanings: MeaningStore | None = None,
        lengths: ConversationLengths | None = None,
    ) -> None:
        self.settings = ChannelSettings(config)
        self.clients = clients
        self.budgeter = budgeter
        self.links = links
        # What the messages mean (None: the plain score), and how long each channel's
        # conversations run: both outlive a config reload, like the caches.
        self.meanings = meanings
        self.lengths = lengths or ConversationLengths()
        self.choices: dict[int, str] = {}  # placed channel id -> named model, from /model
        self._built: dict[tuple[int | None, str | None], ChannelRuntime] = {}

    @property
    def config(self) -> Config:
        return self.settings.config

    def settings_for(self, channel: Any) -> Config:
        """The effective config of ``channel`` (a thread: its parent's), as answers use it."""
        return self.runtime_for(channel).config

    def runtime_for(self, channel: Any) -> ChannelRuntime:
        place = place_of(channel)
        rule = self.settings.rule_for(place)
        choice = self.choices.get(place.channel_id)
        key = (rule, choice)
        runtime = self._built.get(key)
        if runtime is None:
            runtime = self._built[key] = self._build(rule, choice)
        return runtime

    def forget(self, message_ids: Collection[int] = (), people: Collection[int] = ()) -> None:
        """Deleted messages, or people forgotten: every builder's clues of them go, and what
        they mean (the meaning store is shared by all; it knows each message's people, scored
        or not)."""
        dropped = set(message_ids)
        for runtime in self._built.values():
            dropped |= runtime.builder.forget(message_ids, people)
        if self.meanings is not None:
            self.meanings.forget(dropped)
            self.meanings.forget_people(people)

    def choose(self, place: Place, name: str | None) -> None:
        """``/model NAME`` for a channel (and its threads); None goes back to the config's."""
        if name is None:
            self.choices.pop(place.channel_id, None)
        else:
            if name not in self.clients.models:
                raise KeyError(name)
            self.choices[place.channel_id] = name

    def _build(self, rule: int | None, choice: str | None) -> ChannelRuntime:
        config = self.settings.top if rule is None else self.settings.by_rule[rule]
        source = "[model]" if rule is None else f"[[channels]] {rule + 1}"
        if rule is not None and "model" not in self.config.channels[rule].overrides():
            source = "[model]"
        if choice is not None:
            config = config.model_copy(update={"model": self._chosen(rule, choice)})
            source = "/model"
        return ChannelRuntime(
            config=config,
            model=self.clients.for_settings(config.model),
            budgeter=self.budgeter.for_settings(config.model),
            builder=ContextBuilder(
                config.context, links=self.links, meanings=self.meanings, lengths=self.lengths
            ),
            source=source,
            summaries=self._summaries(config),
        )

    def _summaries(self, config: Config) -> SummaryPolicy | None:
        """The channel's summary writer: its own model, or ``summary_model``'s endpoint."""
        if not config.context.summarize:
            return None
        name = config.context.summary_model
        settings = config.model
        if name is not None:
            settings = model_with(config.model, {"use": name}, self.clients.models[name])
        return summary_policy(config.context, self.clients.for_settings(settings), settings)

    def _chosen(self, rule: int | None, name: str) -> ModelSettings:
        """The channel's ``[model]`` settings with ``name``'s endpoint instead of its own."""
        changes: dict[str, Any] = {}
        if rule is not None:
            changes = dict(self.config.channels[rule].overrides().get("model", {}))
        # The channel's own model name and window were for its endpoint, not this one.
        changes = {k: v for k, v in changes.items() if k not in ("name", "context_tokens")}
        changes["use"] = name
        return model_with(self.config.model, changes, self.clients.models[name])
