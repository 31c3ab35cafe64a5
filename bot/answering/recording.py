"""Turning each answer into a stored interaction (its prompt, answer, work log and outcome)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Sequence

from bot.answering.catchup_tool import CATCH_UP, catchup_work_log, retold
from bot.answering.prompt_memory import cut_floor_entry
from bot.answering.result import AnswerResult, Asked
from bot.answering.tool_record import tool_context, tool_parameters, tool_work_log
from bot.config.model_settings import ModelSettings
from bot.config.schema import Config
from bot.model.tool_loop import ToolProgress
from bot.storage import Store
from bot.storage.models import ArticleEntry, ContextEntry, InteractionRecord, WorkLogEntry
from conversation.graph import MessageNode
from conversation.memory import (
    OTHERS_REASON,
    SUMMARY_REASON,
    MemoryRecord,
    memory_record,
    summary_of,
)
from conversation.prompt import SHORTENED, PreparedPrompt
from conversation.selection import ContextSelection

log = logging.getLogger(__name__)


def interaction_record(result: AnswerResult) -> InteractionRecord:
    """The record of one answer. The request messages are the exact body that was sent.

    With ``provider = "anthropic"`` they are the OpenAI-format messages the Anthropic request was
    translated from (by a fixed translation), so the store and ``export`` keep one format.
    """
    asked, ending, trigger = result.asked, result.ending, result.trigger.message
    model = result.model_settings
    request = asked.request or {}
    messages = request_messages(asked, model)
    completion = asked.completion
    usage = {}
    if completion is not None and completion.usage is not None:
        usage = completion.usage.model_dump(exclude_none=True)
    guild = getattr(trigger, "guild", None)
    return InteractionRecord(
        id=record_id(result),
        guild_id=guild.id if guild is not None else None,
        channel_id=trigger.channel.id,
        trigger_message_id=trigger.id,
        trigger_author_id=trigger.author.id,
        started_at=result.started_at,
        ended_at=result.ended_at,
        model=completion.model if completion else model.name,
        parameters=parameters(request, asked.tool_use)
        or {"temperature": model.temperature, "max_tokens": model.max_tokens},
        request_messages=messages,
        context=context_entries(asked, len(messages)),
        answer=ending.answer,
        answer_message_ids=result.posted_ids,
        usage=usage,
        latency_seconds=completion.latency_seconds if completion else None,
        outcome=ending.outcome,
        error=ending.error,
        work_log=work_log(result, len(messages)),
        articles=article_entries(asked.prepared),
        people=people_names(asked.prepared.selection) if asked.prepared is not None else {},
        **_memory_columns(asked.prepared),
    )


def record_id(result: AnswerResult) -> str:
    """The record's id, the same however often it is built: the record line tries a record
    again after a failure, and a store that took it the first time keeps one copy."""
    trigger = result.trigger.message
    began = result.started_at.isoformat(timespec="microseconds")
    return str(uuid.uuid5(_RECORD_IDS, f"{trigger.channel.id}/{trigger.id}/{began}"))


_RECORD_IDS = uuid.UUID("6f1d2c3e-8a57-4a1b-9a43-3c2f0b7d5e91")
"""The namespace of answers' record ids (``record_id``)."""


def _memory_columns(prepared: PreparedPrompt | None) -> dict[str, int | None]:
    """What the memory added, as the interaction's own columns (read back after a restart)."""
    if prepared is None:
        return {}
    record = memory_record(prepared)
    return {"continues": record.continues, "cut_at": record.cut_at}


def request_messages(asked: Asked, model: ModelSettings) -> list[dict]:
    """The messages as sent: the request body's own (OpenAI), else the prompt's and the tool
    turns after it (the Anthropic request was translated from them)."""
    sent = (asked.request or {}).get("messages") if model.provider == "openai" else None
    prepared = asked.prepared
    added = asked.tool_use.added if asked.tool_use is not None else []
    return list(sent or ([*prepared.request_messages, *added] if prepared else []))


def context_entries(asked: Asked, sent: int) -> list[ContextEntry | None]:
    """Why each of the ``sent`` request messages is there, aligned with them: a Discord message
    and why it was selected, a summary and whom it drew on, a tool turn; None for the rest (the
    system prompt, a label)."""
    prepared = asked.prepared
    context: list[ContextEntry | None] = []
    if prepared is not None:
        record = memory_record(prepared)
        context = [
            _context_entry(node, position, record)
            for position, node in enumerate(_nodes(prepared)[:sent])
        ]
        if asked.tool_use is not None and _tool_turns_sent(asked, sent):
            context.extend([None] * (len(prepared.request_messages) - len(context)))
            people = {CATCH_UP.name: retold(asked.catch_ups)}
            context.extend(tool_context(asked.tool_use, people)[: sent - len(context)])
    context.extend([None] * (sent - len(context)))
    return context


def _context_entry(node: MessageNode, position: int, record: MemoryRecord) -> ContextEntry | None:
    summary = summary_of(node)
    if summary is not None:  # who it drew on: forget-user drops it with them
        tokens = (node.metadata or {}).get("tokens")
        return ContextEntry(
            reasons=[SUMMARY_REASON],
            tokens=tokens,
            named=summary.authors,
            covers=list(record.summaries.get(position, ())),
        )
    if position in record.labels:  # the other recent talk starts after it
        return ContextEntry(reasons=[OTHERS_REASON])
    if node.message_id is None:
        return None
    metadata = node.metadata or {}
    reasons = list(metadata.get("reasons", ()))
    if metadata.get("trigger"):
        reasons = ["trigger"]
    if metadata.get("budget") == "shortened":
        reasons.append(SHORTENED)
    named = metadata.get("named", {})
    return ContextEntry(
        message_id=int(node.message_id),
        author_id=int(node.user_id) if node.user_id else None,
        name=node.name,
        reasons=reasons,
        tokens=metadata.get("tokens"),
        named={int(user_id): name for user_id, name in named.items()},
    )


def work_log(result: AnswerResult, sent: int) -> list[WorkLogEntry]:
    """What the answer did, in order: why a follow-up was answered, how the prompt was built,
    the tool rounds (those of refused prompts first) and every model attempt."""
    asked = result.asked
    work: list[WorkLogEntry] = []
    if result.trigger.followed is not None:
        work.append(WorkLogEntry(action="followed", detail=result.trigger.followed))
    if asked.prepared is not None:
        work.extend(prompt_log(asked.prepared, asked.refits))
    for prompt, refused in asked.refused_tool_use:
        work.extend(tool_work_log(refused, refused=prompt))
    if asked.tool_use is not None and _tool_turns_sent(asked, sent):
        work.extend(tool_work_log(asked.tool_use))
    work.extend(catchup_work_log(asked.catch_ups))
    work.extend(
        WorkLogEntry(action="tool_image", detail=image.reference())
        for image in result.ending.images
    )  # attached to the answer: a reference, never the bytes
    work.extend(
        WorkLogEntry(
            action="model_attempt",
            detail=f"attempt {attempt.number}: {attempt.outcome}"
            + (f" ({attempt.error})" if attempt.error else ""),
            status="success" if attempt.outcome == "ok" else "failure",
        )
        for attempt in asked.attempts
    )
    return work


def prompt_log(prepared: PreparedPrompt, refits: Sequence[str]) -> list[WorkLogEntry]:
    """How the prompt was built: the selection's steps, the earlier request it continues, the
    cut and its summary, the token budget, the linked articles."""
    work = [
        WorkLogEntry(action=e.action, detail=e.detail, status=e.status, count=e.messages)
        for e in prepared.selection.work_log
    ]
    work.extend(continued_log(prepared))
    if prepared.cut_at is not None:
        work.append(cut_floor_entry(prepared.cut_at))
    if prepared.summary_note is not None:
        status, detail = prepared.summary_note
        work.append(WorkLogEntry(action="summary", detail=detail, status=status))
    work.extend(budget_log(prepared, refits))
    work.extend(
        WorkLogEntry(
            action="article",
            detail=f"{article.url}: {article.reason or 'extracted'}",
            status="success" if article.ok else "failure",
        )
        for article in prepared.materialized.articles
    )
    return work


def article_entries(prepared: PreparedPrompt | None) -> list[ArticleEntry]:
    """Each linked page the prompt read, and how reading it went."""
    if prepared is None:
        return []
    return [
        ArticleEntry(url=article.url, status=str(article.status), reason=article.reason or None)
        for article in prepared.materialized.articles
    ]


def _nodes(prepared: PreparedPrompt) -> list[MessageNode]:
    return prepared.graph.snapshot().nodes()


def _tool_turns_sent(asked: Asked, sent: int) -> bool:
    """Whether the request sent tool turns after the prompt (more messages than its nodes)."""
    return asked.prepared is not None and len(_nodes(asked.prepared)) < sent


def parameters(request: dict, loop: object) -> dict:
    """What was asked of the model besides the messages (the tools offered, if any)."""
    kept = {k: v for k, v in request.items() if k not in ("messages", "system", "stream_options")}
    return tool_parameters(kept, loop) if isinstance(loop, ToolProgress) and kept else kept


def people_names(selection: ContextSelection) -> dict[int, list[str]]:
    """Every name of each author, mentioned person and reply target in the context: the
    nickname, global name and username, where the prompt showed only one of them."""
    people: dict[int, set[str]] = {}
    for message in [*selection.messages, selection.trigger]:
        reference = getattr(message, "reference", None)
        replied_to = getattr(getattr(reference, "resolved", None), "author", None)
        for user in [message.author, *getattr(message, "mentions", []), replied_to]:
            if user is None or getattr(user, "id", None) is None:
                continue
            names = people.setdefault(int(user.id), set())
            for attribute in ("nick", "global_name", "name", "display_name"):
                value = getattr(user, attribute, None)
                if isinstance(value, str) and value.strip():
                    names.add(value)
    return {user_id: sorted(names) for user_id, names in people.items() if names}


def continued_log(prepared: PreparedPrompt) -> list[WorkLogEntry]:
    """Which earlier request the prompt starts with (``conversation.memory``), if any."""
    if prepared.continues is None:
        return []
    if prepared.reused is None:
        how = "an edit or deletion broke it at that message"
    else:
        how = f"{prepared.reused} messages sent again unchanged"
    detail = f"starts with the request for message {prepared.continues} and its answer ({how})"
    return [WorkLogEntry(action="prompt_continued", detail=detail)]


def budget_log(prepared: PreparedPrompt, refits: Sequence[str]) -> list[WorkLogEntry]:
    """The token budget in the work log: prompts refused as too long, the accepted prompt's
    size against its budget, and each cut made to fit it."""
    entries = [
        WorkLogEntry(action="budget_refit", detail=note, status="failure") for note in refits
    ]
    fitted = prepared.fitted
    if fitted is not None:
        entries.append(
            WorkLogEntry(
                action="budget",
                detail=fitted.summary(),
                status="success" if fitted.fits else "failure",
            )
        )
        entries.extend(
            WorkLogEntry(action="budget_cut", detail=cut.describe()) for cut in fitted.cuts
        )
    return entries


class InteractionRecorder:
    """The answer flow's recorder: writes each interaction through the store's writer thread."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def __call__(self, result: AnswerResult) -> None:
        await self.store.record(interaction_record(result))


RETENTION_INTERVAL_SECONDS = 24 * 3600
STORE_CLOSE_SECONDS = 2.0
"""How long a stopping bot waits for the store's last writes (the answers' records drained
before it): a stalled database must not keep the process from exiting."""


async def apply_retention(store: Store, days: int) -> None:
    """Prune daily: a bot that runs for months must not keep data past its limit."""
    while True:
        await asyncio.sleep(RETENTION_INTERVAL_SECONDS)
        pruned = await store.prune(days)
        log.info("retention (%d days): %s", days, pruned)


@contextlib.asynccontextmanager
async def open_recorder(config: Config) -> AsyncIterator[InteractionRecorder]:
    """Open the store (migrating it), apply retention while open, and yield the recorder."""
    store = Store.open_target(config.storage.path, config.storage.url_text)
    retention: asyncio.Task[None] | None = None
    try:
        if config.storage.retention_days:
            pruned = await store.prune(config.storage.retention_days)  # before the first answer
            log.info("retention (%d days): %s", config.storage.retention_days, pruned)
            retention = asyncio.create_task(
                apply_retention(store, config.storage.retention_days), name="retention"
            )
        yield InteractionRecorder(store)
    finally:
        if retention is not None:
            retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await retention
        if not store.close(timeout=STORE_CLOSE_SECONDS):
            log.error(
                "stopping without closing the store %s: it did not finish writing in %.0f s",
                store.location,
                STORE_CLOSE_SECONDS,
            )
