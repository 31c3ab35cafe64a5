"""``/catchup``: the conversations of a channel since the asker last spoke, each summarised in a
few lines by the channel's model, each line with jump links to the messages it draws on. The
same catch-up is the model's ``catch_up`` tool (``bot.answering.catchup_tool``): ``catch_up``
does the work, ``answer`` shows it as ``/catchup``'s messages.

The steps, in order (``Catchup.catch_up``): who may read what (an asker who cannot read the
channel's history gets nothing from it: ``bot.discord.visibility``), the messages since the
asker last spoke (or over the ``hours`` asked, bounded by ``[catchup] max_hours``, at most
``max_messages``, nothing before a ``/fresh`` seal), their conversations as the builder groups
them (``conversation.selection.group_conversations``), the largest ``max_conversations`` of
them, one model call each (``summarise``) and the citations turned into links
(``linked_lines``: a number the model invents links nowhere). Each call is recorded like an
answer, its trigger the interaction's id (the tool's: an id made for it, which the answer's
work log names): ``explain ID`` shows which messages it read and why each belongs to the
conversation, and forget-user empties it with its asker and redacts the messages of anyone
else.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import nextcord

from bot.answering.channels import ChannelRuntime
from bot.config.catchup_settings import CatchupSettings
from bot.discord.limits import DISCORD_MESSAGE_LIMIT
from bot.discord.visibility import REQUEST_FAILED, can_view, member_in
from bot.model.errors import ModelError
from bot.storage import Store
from bot.storage.models import ContextEntry, InteractionRecord, WorkLogEntry
from conversation.prompt import SpeakerLabels, neutral_name, shown_name
from conversation.selection import Conversation, group_conversations, is_seal, worth_summarising

log = logging.getLogger(__name__)
CITATION = re.compile(r"\[(\d{1,4})\]")
NOT_READABLE = "You cannot read this channel's history, so there is nothing here to catch up on."
BOT_CANNOT_READ = "I cannot read this channel's history (Read Message History), so I cannot."
TURNED_OFF = "Catching up is turned off here."
NOT_READ_NOW = "I could not read this channel's history just now; try again in a moment."


@dataclass(frozen=True)
class CatchupAsk:
    """One catch-up: where, by whom, and the span asked for (None: since they spoke).

    ``question``: the message that asked, when a message did (the ``catch_up`` tool's trigger,
    ``bot.answering.catchup_tool``): the catch-up reads what came before it, and the asker's
    own messages just before it ("back!") are their return, not the last time they spoke."""

    channel: Any
    asker: Any
    ask_id: int  # the records' trigger: /catchup's interaction id, or one made for the tool
    hours: float | None = None
    question: Any = None


@dataclass(frozen=True)
class Summary:
    """One conversation summarised: the facts of its head and its linked lines."""

    number: int
    count: int  # its messages
    link: str  # to its first message
    first_at: datetime
    names: list[str]
    lines: list[str]
    authors: dict[int, str]  # whom it retells: id -> name as shown

    def shown(self, when: str) -> str:
        """The block, its head saying when it began as ``when``."""
        head = f"**{self.number}.** [{self.count} messages]({self.link}) from {when}, "
        return "\n".join([head + ", ".join(self.names), *self.lines])


@dataclass(frozen=True)
class CaughtUp:
    """What one catch-up came to: why nothing was read (``refused``), or since when it read,
    how many conversations it found, and the summaries of those chosen."""

    refused: str | None = None
    since: datetime | None = None
    since_spoke: bool = False
    found: int = 0
    summaries: tuple[Summary, ...] = ()

    def retold(self) -> dict[int, str]:
        """Everyone the summaries retell (id -> name as shown)."""
        return {k: v for summary in self.summaries for k, v in summary.authors.items()}


@dataclass(frozen=True)
class Stretch:
    """The messages a catch-up reads, oldest first, and when they start."""

    messages: list[nextcord.Message]
    since: datetime
    since_spoke: bool  # since the asker's own latest message (else over a span)


def jump_link(message: Any) -> str:
    guild = getattr(message, "guild", None)
    where = guild.id if guild is not None else "@me"
    return f"https://discord.com/channels/{where}/{message.channel.id}/{message.id}"


def linked_lines(text: str, messages: Sequence[Any], most: int) -> tuple[list[str], int]:
    """The summary's lines (at most ``most``), each ending with links to the messages it cites
    (``messages`` numbered from 1 as the model saw them); the count of citations dropped for
    naming no message it was given."""
    lines: list[str] = []
    invented = 0
    for raw in text.splitlines():
        line = raw.strip().lstrip("-*• ").strip()
        if not line or len(lines) >= most:
            continue
        cited: list[int] = []
        for number in (int(n) for n in CITATION.findall(line)):
            if not 1 <= number <= len(messages):
                invented += 1
            elif number not in cited:
                cited.append(number)
        words = CITATION.sub("", line).strip()
        links = " ".join(f"[{n}]({jump_link(messages[n - 1])})" for n in cited)
        lines.append(f"- {words} {links}".rstrip())
    return lines, invented


class Catchup:
    """``/catchup`` for the answerer's channels (read at each use: a reload replaces them)."""

    def __init__(self, answerer: Any, store: Store | None, client: nextcord.Client) -> None:
        self.answerer = answerer
        self.store = store
        self.client = client
        # Records of the catch_up tool's summaries on their way to the store (see ``_keep``).
        self._writing: set[asyncio.Task[None]] = set()

    def runtime(self, channel: Any) -> ChannelRuntime:
        return self.answerer.channels.runtime_for(channel)

    def settings(self, channel: Any) -> CatchupSettings:
        return self.runtime(channel).config.catchup

    async def answer(self, ask: CatchupAsk) -> list[str]:
        """``/catchup``'s messages to show the asker, each within Discord's length."""
        caught = await self.catch_up(ask)
        if caught.refused is not None:
            return [caught.refused]
        assert caught.since is not None
        when = f"<t:{int(caught.since.timestamp())}:R>"
        if not caught.summaries:
            since = "since you last spoke here" if caught.since_spoke else f"since {when}"
            return [f"Nothing to catch up on: no conversation here {since}."]
        spoke = f"Since you last spoke here ({when})" if caught.since_spoke else f"Since {when}"
        head = f"{spoke}: {len(caught.summaries)} conversation(s) of {caught.found} found."
        blocks = [s.shown(f"<t:{int(s.first_at.timestamp())}:t>") for s in caught.summaries]
        return pages([head, *blocks])

    async def catch_up(self, ask: CatchupAsk) -> CaughtUp:
        """The catch-up itself, whoever shows it: the stretch read, its conversations, the
        largest summarised (one model call and one record each)."""
        runtime = self.runtime(ask.channel)
        settings = runtime.config.catchup
        if not settings.enabled:
            return CaughtUp(refused=TURNED_OFF)
        if not await self._may_read(ask):
            return CaughtUp(refused=NOT_READABLE)
        try:
            stretch = await self._stretch(ask, settings)
        except nextcord.Forbidden:
            return CaughtUp(refused=BOT_CANNOT_READ)
        except REQUEST_FAILED as error:
            log.warning("catch-up in %s: history not read: %s", ask.channel.id, error)
            return CaughtUp(refused=NOT_READ_NOW)
        # Off the event loop: it scores every message (0.8 s for 500, 7 s for 5,000).
        conversations = await asyncio.to_thread(
            group_conversations, stretch.messages, runtime.builder
        )
        chosen = worth_summarising(conversations, settings.max_conversations)
        by_id = {m.id: m for m in stretch.messages}
        summaries = [
            await self._summary(ask, runtime, conversation, by_id, (k, len(chosen)))
            for k, conversation in enumerate(chosen, 1)
        ]
        return CaughtUp(
            since=stretch.since,
            since_spoke=stretch.since_spoke,
            found=len(conversations),
            summaries=tuple(summaries),
        )

    async def _may_read(self, ask: CatchupAsk) -> bool:
        guild = getattr(ask.channel, "guild", None)
        if guild is None:  # a DM: the asker's own
            return True
        member = member_in(guild, ask.asker)
        return member is not None and await can_view(ask.channel, member)

    async def _stretch(self, ask: CatchupAsk, settings: CatchupSettings) -> Stretch:
        now = datetime.now(UTC)
        hours = settings.max_hours if ask.hours is None else min(ask.hours, settings.max_hours)
        start = now - timedelta(hours=hours)
        newest_first = [
            m
            async for m in ask.channel.history(
                limit=settings.max_messages, after=start, oldest_first=False
            )
            # Before the question only, filtered here: nextcord 3.x reads nothing when a span
            # has both ends (``after`` and ``before``).
            if ask.question is None or m.id < ask.question.id
        ]
        # Oldest first, whatever order the library gives them in (nextcord 3.x pages a
        # span between two ends oldest first).
        messages = sorted(newest_first, key=lambda m: m.id)
        me = self.client.user
        seals = [i for i, m in enumerate(messages) if me is not None and is_seal(m, me.id)]
        if seals:
            messages = messages[seals[-1] + 1 :]
        if me is not None:  # what forget-user took back is not retold
            gone = self.answerer.forgotten.said_before_forgets(messages, me.id)
            messages = [m for m in messages if m.id not in gone]
        if ask.hours is None:
            end = len(messages)
            while ask.question is not None and end and messages[end - 1].author.id == ask.asker.id:
                end -= 1  # their words just before the question: their return
            spoke = [i for i, m in enumerate(messages[:end]) if m.author.id == ask.asker.id]
            if spoke:
                last = messages[spoke[-1]]
                return Stretch(messages[spoke[-1] + 1 : end], last.created_at, True)
        return Stretch(messages, start, False)

    async def _summary(
        self,
        ask: CatchupAsk,
        runtime: ChannelRuntime,
        conversation: Conversation,
        by_id: dict[int, nextcord.Message],
        place: tuple[int, int],
    ) -> Summary:
        settings = runtime.config.catchup
        messages = [by_id[i] for i in conversation.message_ids]
        request = summary_request(settings, messages)
        started = datetime.now(UTC)
        writer = runtime.model.with_settings(
            runtime.config.model.model_copy(
                update={"max_tokens": settings.summary_tokens, "stream": False}
            )
        )
        text, error, completion = "", None, None
        try:
            completion = await writer.complete(request)
            text = completion.text
        except ModelError as failed:
            error = str(failed)
        lines, invented = linked_lines(text, messages, settings.summary_lines)
        if error is not None:
            lines = [f"- (not summarised: {error})"]
        await self._record(ask, runtime, conversation, messages, request, started, place,
                           completion=completion, error=error, invented=invented)  # fmt: skip
        return Summary(
            number=place[0],
            count=len(messages),
            link=jump_link(messages[0]),
            first_at=messages[0].created_at,
            names=sorted({neutral_name(shown_name(m.author)) for m in messages}),
            lines=lines,
            authors={m.author.id: shown_name(m.author) for m in messages},
        )

    async def _record(
        self,
        ask: CatchupAsk,
        runtime: ChannelRuntime,
        conversation: Conversation,
        messages: Sequence[nextcord.Message],
        request: list[dict],
        started: datetime,
        place: tuple[int, int],
        *,
        completion: Any,
        error: str | None,
        invented: int,
    ) -> None:
        if self.store is None:
            return
        guild = getattr(ask.channel, "guild", None)
        usage = {}
        if completion is not None and completion.usage is not None:
            usage = completion.usage.model_dump(exclude_none=True)
        number = {m.id: n for n, m in enumerate(messages, 1)}
        context: list[ContextEntry | None] = [None]
        for join, message in zip(conversation.joins, messages, strict=True):
            parent = f" (message {number[join.parent_id]})" if join.parent_id in number else ""
            context.append(
                ContextEntry(
                    message_id=message.id,
                    author_id=message.author.id,
                    name=shown_name(message.author),
                    reasons=[f"catchup: {join.reason}{parent}"],
                )
            )
        asked = "" if ask.question is None else f" (catch_up, answering {ask.question.id})"
        work = [
            WorkLogEntry(
                action="catchup",
                detail=f"conversation {place[0]} of {place[1]}: {len(messages)} messages{asked}",
                count=len(messages),
            ),
            WorkLogEntry(
                action="model_attempt",
                detail="summary" + (f" ({error})" if error else ""),
                status="failure" if error else "success",
            ),
        ]
        if invented:
            work.append(
                WorkLogEntry(
                    action="catchup_links",
                    detail=f"{invented} citation(s) of no message given dropped",
                    status="failure",
                    count=invented,
                )
            )
        people = {
            m.author.id: sorted({n for n in (m.author.name, m.author.display_name) if n})
            for m in messages
        }
        record = InteractionRecord(
            guild_id=guild.id if guild is not None else None,
            channel_id=ask.channel.id,
            trigger_message_id=ask.ask_id,
            trigger_author_id=ask.asker.id,
            started_at=started,
            ended_at=datetime.now(UTC),
            model=completion.model if completion else runtime.config.model.name,
            parameters={"max_tokens": runtime.config.catchup.summary_tokens},
            request_messages=request,
            context=context,
            answer=completion.text if completion else "",
            usage=usage,
            latency_seconds=completion.latency_seconds if completion else None,
            outcome="failure" if error else "success",
            error=error,
            work_log=work,
            people=people,
        )
        if ask.question is None:
            await self._keep(record)
            return
        # The tool runs in an answer's turn, which a stalled store must not hold (as the
        # answers' own records, bot.answering.record_line): handed to the store's writer, in
        # order, before the answer's record, and not waited for.
        task = asyncio.get_running_loop().create_task(self._keep(record))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _keep(self, record: InteractionRecord) -> None:
        assert self.store is not None
        try:
            await self.store.record(record)
        except Exception:  # a catch-up is shown even when it cannot be kept
            log.exception("the catch-up of %s could not be recorded", record.trigger_message_id)


def summary_request(settings: CatchupSettings, messages: Sequence[Any]) -> list[dict]:
    """The instructions, then each message as its own turn, numbered as the links are."""
    prompt = settings.prompt.replace("{lines}", str(settings.summary_lines))
    # No name can spell another speaker's line.
    labels = SpeakerLabels((m.author.id, shown_name(m.author)) for m in messages)
    turns = [
        {"role": "user", "content": f"[{n}] {labels.label(m.author.id, shown_name(m.author))}: "
         f"{m.content}"}
        for n, m in enumerate(messages, 1)
    ]  # fmt: skip
    return [{"role": "system", "content": prompt}, *turns]


def pages(blocks: Sequence[str]) -> list[str]:
    """The blocks joined into as few messages as fit Discord's length (a block too long for one
    is cut at a line)."""
    pages: list[str] = []
    for block in blocks:
        while len(block) > DISCORD_MESSAGE_LIMIT:
            cut = block.rfind("\n", 0, DISCORD_MESSAGE_LIMIT)
            cut = cut if cut > 0 else DISCORD_MESSAGE_LIMIT
            pages.append(block[:cut])
            block = block[cut:].lstrip("\n")
        if pages and len(pages[-1]) + 2 + len(block) <= DISCORD_MESSAGE_LIMIT:
            pages[-1] += "\n\n" + block
        else:
            pages.append(block)
    return pages
