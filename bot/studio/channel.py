"""The studio's view of one channel log: its timeline, any trigger's context, and gold scores.

Everything here is plain data (pydantic models) computed with the same builder, materializer
and token budget the bot uses, so what the page shows for a setting is what ``replay`` and the
running bot would do with it. A build starts from a cold cache, as ``replay`` does, or warm
(``replay --warm``): the cache holding the log up to the trigger, as a bot that saw it arrive.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.answering.notices import bot_notices
from bot.answering.prompt_budget import PromptBudgeter
from bot.config.errors import describe_errors
from bot.config.model_settings import ModelSettings
from bot.config.schema import Config, TriggerSettings
from bot.studio.applied import AppliedSettings, ChannelTable, settings_for_studio
from conversation.common import ContextSettings
from conversation.prompt import (
    MaterializeOptions,
    Materializer,
    is_others_label,
    persona_for,
    prepare_prompt,
    shown_name,
)
from conversation.replay import (
    GoldTrigger,
    LogSource,
    ReplayCaches,
    Score,
    gold_path_for,
    load_gold,
    replay_decisions,
    select_contexts,
)
from conversation.selection import ContextBuilder, Follower
from conversation.sources import ChannelReader, created_ms, reference_id

KINDS: dict[object, str] = {bool: "bool", int: "int", float: "float"}
SCORE_CACHE_SIZE = 256  # whole-log scores kept, one per settings tried


class SettingsError(ValueError):
    """Settings from the page that ``config.toml`` would refuse, as the same lines."""


class TimelineMessage(BaseModel):
    """One message of the log as the page draws it. Ids are strings: JavaScript numbers lose
    precision past 2**53 and Discord ids are larger."""

    id: str
    author_id: str
    author: str
    bot: bool
    time: str
    ms: int
    content: str
    reply_to: str | None
    mentions: list[str]
    gold: bool  # an annotated trigger with a gold context


class FollowMark(BaseModel):
    """What the bot would do with one message of the log (``python -m bot follow``'s line)."""

    id: str
    answer: bool
    score: float | None
    why: str
    followed: bool  # answered without being called: the mark the timeline draws


class FollowView(BaseModel):
    """The follow decisions over the log with one author standing in for the bot."""

    bot_id: str | None  # None: nobody wrote in the log
    threshold: float
    fitted_threshold: float
    marks: list[FollowMark]


class SettingField(BaseModel):
    """A ``[context]`` key and what the page needs to draw a control for it."""

    key: str
    kind: str  # "int", "float", "bool", or "text" for anything else
    nullable: bool = False  # may be left unset (an empty control)
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    description: str = ""


class ChannelInfo(BaseModel):
    path: str
    guild: str
    channel: str
    messages: list[TimelineMessage]
    fields: list[SettingField]
    settings: dict[str, Any]
    has_gold: bool
    default_trigger: str | None
    applies: AppliedSettings | None = None  # which settings apply: None when not from a config


class ChosenReason(BaseModel):
    kind: str
    via: str | None
    score: float | None = None  # the learned relevance score, when it decided
    evidence: list[str] = []  # what raised that score most


class ChosenMessage(BaseModel):
    id: str
    reasons: list[ChosenReason]
    tokens: int  # estimated, of the text the model is sent for it (0: dropped by the budget)
    text: str  # that text, as materialized and fitted to the budget
    cuts: list[str] = []  # what the budget shortened or dropped of it
    in_gold: bool | None = None  # None without gold labels for this trigger


class Edge(BaseModel):
    source: str  # the message the builder came through
    target: str  # the message it selected
    kind: str


class ScoreFigures(BaseModel):
    triggers: int
    precision: float
    recall: float
    f1: float
    parent_recall: float | None
    # Over a whole log: the history pages a build read, per trigger (cold or warm, as asked).
    rest_calls_per_trigger: float | None = None

    @classmethod
    def of(cls, score: Score) -> ScoreFigures:
        return cls(
            triggers=score.triggers,
            precision=round(score.precision, 4),
            recall=round(score.recall, 4),
            f1=round(score.f1, 4),
            parent_recall=round(score.parent_recall, 4) if score.with_parent else None,
        )


class TriggerScore(ScoreFigures):
    gold: list[str]
    missed: list[str]  # gold messages the context left out
    parents: list[str]


class ContextView(BaseModel):
    trigger: str
    trigger_tokens: int
    system_tokens: int
    # The label before the recent messages that are not part of the conversation (0: none).
    label_tokens: int = 0
    context: list[ChosenMessage]
    edges: list[Edge]
    tokens: int  # the whole prompt, estimated
    budget: str  # how the prompt fits the token budget, and what was cut
    rest_calls: int
    warm: bool = False  # built from the cache of a bot that saw the log arrive
    problems: list[str]
    score: TriggerScore | None
    toml: str


def validate_settings(data: dict[str, Any], label: str = "studio") -> ContextSettings:
    """The page's settings checked exactly as ``config.toml`` is, errors as its lines (one per
    problem)."""
    try:
        return Config.model_validate({"context": data}).context
    except ValidationError as error:
        raise SettingsError("\n".join(describe_errors(Path(label), error, Config))) from error


def settings_toml(settings: ContextSettings) -> str:
    """The ``[context]`` section to paste into ``config.toml`` (unset keys commented out)."""
    lines = ["[context]"]
    for key, value in settings.model_dump(mode="json").items():
        if value is None:
            lines.append(f"# {key} = (unset)")
        elif isinstance(value, float) and value.is_integer():
            lines.append(f"{key} = {int(value)}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")  # JSON scalars and arrays are TOML
    return "\n".join(lines) + "\n"


def setting_fields() -> list[SettingField]:
    fields = []
    for key, info in ContextSettings.model_fields.items():
        types = set(typing.get_args(info.annotation)) or {info.annotation}
        nullable = type(None) in types
        types.discard(type(None))
        kind = KINDS.get(types.pop(), "text") if len(types) == 1 else "text"
        minimum, maximum, exclusive = None, None, False
        for rule in info.metadata:
            if getattr(rule, "ge", None) is not None:
                minimum = rule.ge
            elif getattr(rule, "gt", None) is not None:
                minimum, exclusive = rule.gt, True
            elif getattr(rule, "le", None) is not None:
                maximum = rule.le
        fields.append(
            SettingField(
                key=key,
                kind=kind,
                nullable=nullable,
                default=info.default,
                minimum=minimum,
                maximum=maximum,
                exclusive_minimum=exclusive,
                description=info.description or "",
            )
        )
    return fields


class ChannelStudio:
    """A loaded channel log, its gold labels if any, and builds over it under any settings."""

    def __init__(
        self,
        log_path: Path,
        settings: ContextSettings,
        model: ModelSettings | None = None,
        triggers: TriggerSettings | None = None,
        applies: AppliedSettings | None = None,
        table: ChannelTable | None = None,
        *,
        source: LogSource | None = None,
    ) -> None:
        """``source``: the log already read (from ``log_path``)."""
        self.path = log_path
        self.applies = applies
        self.table = table  # the log channel's [[channels]] table: what "Copy as TOML" writes
        self.triggers = triggers or TriggerSettings()
        self._follower: Follower | None = None
        self.source = source or LogSource.from_file(log_path)
        self.settings = settings
        self.model = model or ModelSettings()
        self._budgeter = PromptBudgeter(self.model)  # the conservative count: no store here
        self._bot_name = self.source.bot_name  # as replay names it, on nextcord 2 and 3
        gold_path = gold_path_for(log_path)
        self.gold: dict[int, GoldTrigger] = load_gold(gold_path) if gold_path.exists() else {}
        self._materializer = Materializer(
            MaterializeOptions(bot_user_id=self.source.bot_user_id, notices=bot_notices())
        )
        self._log_scores: dict[str, ScoreFigures] = {}

    @classmethod
    def for_config(cls, log_path: Path, config: Config) -> ChannelStudio:
        """The studio of a log with the settings its channel answers with under ``config``
        (its ``[[channels]]`` table's, else the top level's), the log read once."""
        source = LogSource.from_file(log_path)
        effective, applies, table = settings_for_studio(config, source.export)
        return cls(
            log_path, effective.context, effective.model, effective.triggers, applies, table,
            source=source,
        )  # fmt: skip

    def info(self) -> ChannelInfo:
        export = self.source.export
        messages = [self._timeline_message(m) for m in self.source.messages]
        default = None
        if self.gold:
            default = str(max(self.gold))
        elif messages:
            default = messages[-1].id
        return ChannelInfo(
            path=str(self.path),
            guild=export.guild.name,
            channel=export.channel.name,
            messages=messages,
            fields=setting_fields(),
            settings=self.settings.model_dump(),
            has_gold=bool(self.gold),
            default_trigger=default,
            applies=self.applies,
        )

    def _timeline_message(self, message: Any) -> TimelineMessage:
        reference = reference_id(message)
        return TimelineMessage(
            id=str(message.id),
            author_id=str(message.author.id),
            author=shown_name(message.author),
            bot=bool(message.author.bot),
            time=message.created_at.isoformat(),
            ms=created_ms(message),
            content=_readable(message),
            reply_to=str(reference) if reference is not None else None,
            mentions=[str(user.id) for user in message.mentions],
            gold=message.id in self.gold,
        )

    def follow(self, bot_id: int | None, threshold: float | None) -> FollowView:
        """Which messages the bot (the log's own, or ``bot_id``) would answer without being
        called, at ``threshold`` (None: ``[triggers] follow_threshold``, else the fitted one)."""
        if self._follower is None:
            self._follower = Follower()
        fitted = self._follower.model.threshold
        if threshold is None:
            threshold = self.triggers.follow_threshold
        shown = fitted if threshold is None else threshold  # 0.0 is a threshold, not unset
        triggers = self.triggers.model_copy(
            update={"follow": True, "follow_off_channels": (), "follow_threshold": threshold}
        )
        if bot_id is None:
            bot_id = self.source.bot_user_id
        messages = self.source.messages
        if not any(m.author.id == bot_id for m in messages):
            return FollowView(bot_id=None, threshold=shown, fitted_threshold=fitted, marks=[])
        marks = [
            FollowMark(
                id=str(decided.message.id),
                answer=decided.decision.answer,
                score=decided.decision.score,
                why=decided.why,
                followed=decided.decision.kind == "followed",
            )
            for decided in replay_decisions(
                messages,
                bot_id,
                triggers,
                self._follower,
                answer_bots=triggers.answer_bots,
                always_on_channels=triggers.always_on_channels,
            )
        ]
        return FollowView(
            bot_id=str(bot_id),
            threshold=shown,
            fitted_threshold=fitted,
            marks=marks,
        )

    async def context(
        self, trigger_id: int, settings: ContextSettings, *, warm: bool = False
    ) -> ContextView:
        """The context the bot would send for ``trigger_id`` under ``settings``, fitted to the
        token budget of ``[model]`` as the bot fits it (with the uncalibrated count); ``warm``:
        from the cache of a bot that saw the log up to the trigger arrive."""
        trigger = self.source.message(trigger_id)
        if trigger is None:
            raise KeyError(f"{self.path}: no message {trigger_id} in the log")
        cache = ReplayCaches(self.source, warm=warm).for_trigger(trigger_id)
        reader = ChannelReader(self.source, cache)
        prepared = await prepare_prompt(
            trigger,
            reader,
            ContextBuilder(settings),
            self._materializer,
            persona_for(self.model.system_prompt, self._bot_name, self.source.channel),
            budget=self._budgeter.budget(),
            counter=self._budgeter.counter(),
            now=trigger.created_at,  # the prompt replay prints for this trigger
        )
        selection, fitted = prepared.selection, prepared.fitted
        assert fitted is not None  # a budget was given
        sent = {
            int(node.message_id): (node.content, tokens)
            for node, tokens in zip(fitted.nodes, fitted.tokens, strict=True)
            if node.message_id is not None
        }
        cuts: dict[int, list[str]] = {}
        for cut in fitted.cuts:
            if cut.message_id is not None:
                cuts.setdefault(int(cut.message_id), []).append(cut.describe())
        gold = self.gold.get(trigger_id)
        chosen = [
            ChosenMessage(
                id=str(message.id),
                reasons=[
                    ChosenReason(
                        kind=r.kind,
                        via=str(r.via) if r.via is not None else None,
                        score=r.score,
                        evidence=list(r.evidence),
                    )
                    for r in selection.reasons[message.id]
                ],
                tokens=sent.get(message.id, ("", 0))[1],
                text=sent.get(message.id, ("", 0))[0],
                cuts=cuts.get(message.id, []),
                in_gold=(message.id in gold.context) if gold else None,
            )
            for message in selection.messages
        ]
        edges = [
            Edge(source=reason.via, target=item.id, kind=reason.kind)
            for item in chosen
            for reason in item.reasons
            if reason.via is not None
        ]
        return ContextView(
            trigger=str(trigger_id),
            trigger_tokens=sent.get(trigger_id, ("", 0))[1],
            system_tokens=fitted.tokens[0],
            label_tokens=sum(
                tokens
                for node, tokens in zip(fitted.nodes, fitted.tokens, strict=True)
                if is_others_label(node)
            ),
            context=chosen,
            edges=edges,
            tokens=fitted.total,
            budget=fitted.summary(),
            rest_calls=selection.rest_calls,
            warm=warm,
            problems=selection.problems + prepared.materialized.problems,
            score=self._trigger_score(trigger_id, set(selection.ids), gold),
            toml=self.table.toml(settings) if self.table else settings_toml(settings),
        )

    @staticmethod
    def _trigger_score(
        trigger_id: int, context: set[int], gold: GoldTrigger | None
    ) -> TriggerScore | None:
        if gold is None:
            return None
        score = Score()
        score.add(trigger_id, context, gold)
        figures = ScoreFigures.of(score)
        return TriggerScore(
            **figures.model_dump(),
            gold=[str(m) for m in sorted(gold.context)],
            missed=[str(m) for m in sorted(gold.context - context)],
            parents=[str(m) for m in sorted(gold.parents)],
        )

    async def log_score(
        self, settings: ContextSettings, *, warm: bool = False
    ) -> ScoreFigures | None:
        """Precision, recall and F1 over every gold trigger of the log (cached per settings and
        cache state)."""
        if not self.gold:
            return None
        key = f"{warm} {settings.model_dump_json()}"
        if key not in self._log_scores:
            # Labelled but not in the log: nothing to score. In order: one warm cache fed on.
            wanted = [t for t in sorted(self.gold) if self.source.message(t) is not None]
            score = Score()
            async for selection in select_contexts(self.source, settings, wanted, warm=warm):
                trigger_id = selection.trigger.id
                score.add(trigger_id, set(selection.ids), self.gold[trigger_id])
                score.rest_calls += selection.rest_calls
            if len(self._log_scores) >= SCORE_CACHE_SIZE:
                del self._log_scores[next(iter(self._log_scores))]  # the oldest
            per_trigger = round(score.rest_calls / score.triggers, 3) if score.triggers else 0.0
            self._log_scores[key] = ScoreFigures.of(score).model_copy(
                update={"rest_calls_per_trigger": per_trigger}
            )
        return self._log_scores[key]


def _readable(message: Any) -> str:
    """The text as people read it: mentions as names. Attachments are noted by name."""
    try:
        text = message.clean_content
    except (AttributeError, KeyError, TypeError):
        text = message.content
    names = [attachment.filename for attachment in getattr(message, "attachments", [])]
    if names:
        text = f"{text}\n[attached: {', '.join(names)}]".strip()
    return text
