"""What each answer sent, for the next request in its conversation: in this process first (the
exact messages, bounded), else from the store, so a follow-up after a restart, or answered by
another shard on PostgreSQL, still starts with the request before it.

The store already keeps every request as sent (``request_messages``) and where each message came
from; a request read back is used only when it translates back to exactly the recorded messages,
so a follow-up never starts with something that was not sent. What the memory added to it (where
its conversation was last cut, what each summary stands for, where the other recent talk starts:
``conversation.memory.record``) is read back from the store's columns; a row stored before them
falls back on its work log's line and the label's text. What the store knows was deleted since
is marked gone, so it is never sent again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from bot.storage import InteractionRecord, Store, StoreError
from bot.storage.models import ContextEntry, WorkLogEntry
from conversation.graph import MessageFormatError, MessageNode, node_from_openai, to_openai
from conversation.memory import (
    OTHERS_REASON,
    SUMMARY_REASON,
    BoundedMemory,
    SentPrompt,
    answer_node,
    restored_summary,
    summary_of,
)
from conversation.prompt import OTHERS_LABEL, TokenCounter, conversation_key
from conversation.sources import time_snowflake

log = logging.getLogger(__name__)

STORE_WAIT_SECONDS = 1.5
"""How long a follow-up waits for the store's copy of the request before it (``[storage]
claim_wait_seconds`` in the bot): a stalled store must not hold the answer."""
CUT_FLOOR = "cut_floor"
"""The work log's action for where a request's conversation was last cut."""
# The line's first number: forget-user rewrites a forgotten name wherever it stands as a word
# ("message", "cut"), and leaves numbers that are not their id.
_CUT_AT = re.compile(r"(\d+)")


class StoredPromptMemory:
    """A ``PromptMemory``: the bounded in-process one, with the store behind it."""

    def __init__(
        self,
        store: Store,
        recent: BoundedMemory | None = None,
        *,
        wait: Callable[[], float] = lambda: STORE_WAIT_SECONDS,
    ) -> None:
        self.store = store
        self.recent = recent or BoundedMemory()
        self._wait = wait  # a stalled store costs the follow-up its prefix, not its answer
        # Messages said since this process started were answered (if at all) by it, and are in
        # its memory: the store is asked only about older ones (the usual new conversation
        # costs no query).
        self._started = time_snowflake(datetime.now(UTC))

    async def recall(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        found = self.recent.recall_now(channel_id, candidates)
        older = [i for i in candidates if i < self._started]
        if found is not None or not older:
            return found
        reading = asyncio.to_thread(self._stored, channel_id, older)
        try:
            return await asyncio.wait_for(reading, self._wait())
        except TimeoutError:
            log.warning("the store did not give the previous request in time: a fresh one")
            return None
        except StoreError as error:
            log.warning("could not read the previous request from the store: %s", error)
            return None

    def _stored(self, channel_id: int, candidates: list[int]) -> SentPrompt | None:
        """The stored request, with what the store knows was deleted since marked ``gone``
        (a deletion while this process was not running, or seen by another shard)."""
        record = self.store.latest_answered(channel_id, candidates)
        sent = sent_from_record(record) if record is not None else None
        if sent is None:
            return None
        gone = self.store.deleted_among(sent.message_ids | covered(sent))
        return sent.model_copy(update={"gone": frozenset(gone)}) if gone else sent

    async def remember(self, sent: SentPrompt) -> None:
        # The store records the interaction itself (the recorder): nothing more to write.
        self.recent.remember_now(sent)

    def drop(self, where: Callable[[SentPrompt], bool]) -> int:
        """Forget the remembered requests ``where`` holds true of (the store's own copies are
        scrubbed by forget-user itself)."""
        return self.recent.drop(where)


def sent_from_record(record: InteractionRecord) -> SentPrompt | None:
    """The request an interaction sent (its tool rounds left out) and its answer, or None when
    it does not translate back to exactly what was recorded."""
    context = record.context
    # The request's own trigger: a continued request also holds the triggers it continues.
    trigger = next(
        (
            i
            for i, entry in enumerate(context)
            if entry is not None
            and "trigger" in entry.reasons
            and entry.message_id == record.trigger_message_id
        ),
        None,
    )
    if trigger is None or not record.answer:
        return None
    messages = record.request_messages[: trigger + 1]
    try:
        nodes = [
            _restored(node_from_openai(message), entry)
            for message, entry in zip(messages, context, strict=False)
        ]
    except MessageFormatError:
        return None
    if to_openai(nodes) != messages:
        return None
    ids = record.answer_message_ids
    counter = TokenCounter()
    answer = answer_node(record.answer, ids)
    return SentPrompt(
        channel_id=record.channel_id,
        trigger_id=record.trigger_message_id,
        nodes=tuple(nodes),
        tokens=tuple(
            (entry.tokens if entry else None) or counter.node(node)
            for node, entry in zip(nodes, context, strict=False)
        ),
        answer=answer,
        answer_ids=tuple(ids),
        cache_key=conversation_key(_root(nodes, record.trigger_message_id)),
        others=_others(nodes, record.context),
        cut_at=record.cut_at if record.cut_at is not None else cut_at_of(record.work_log),
    )


def covered(sent: SentPrompt) -> set[int]:
    """The messages the request's summary stands for (none: no summary, or an old row)."""
    summaries = (summary_of(node) for node in sent.nodes)
    return {i for summary in summaries if summary is not None for i in summary.covers}


def cut_floor_entry(cut_at: int) -> WorkLogEntry:
    """The work log's line for a request whose conversation was cut at ``cut_at``'s request:
    it tells the operator why older messages stay out, and the next follow-up (read back from
    the store after a restart, or by another shard) where the cut was."""
    detail = (
        f"the conversation was cut at the request for message {cut_at}: what the cut left out "
        "is not selected back"
    )
    return WorkLogEntry(action=CUT_FLOOR, detail=detail)


def cut_at_of(work_log: Sequence[WorkLogEntry]) -> int | None:
    """Where the recorded request's conversation was last cut (None: not since it was built
    afresh, or recorded before the work log said so)."""
    for entry in work_log:
        found = _CUT_AT.search(entry.detail) if entry.action == CUT_FLOOR else None
        if found is not None:
            return int(found.group(1))
    return None


def _restored(node: MessageNode, entry: ContextEntry | None) -> MessageNode:
    """A sent message read back: its Discord id and why it was selected (a linked message may
    be of another channel: ``ChannelNow.gone``), or the summary it was (its authors kept for
    the next summary, which draws on them too)."""
    if entry is not None and entry.message_id is None and entry.reasons == [SUMMARY_REASON]:
        return restored_summary(node, dict(entry.named), entry.covers)
    if entry is None or entry.message_id is None:
        return node.model_copy(update={"message_id": None})
    reasons = [reason for reason in entry.reasons if reason != "trigger"]  # it was, not now
    return node.replace(message_id=str(entry.message_id), metadata={"reasons": reasons})


def _root(nodes: list[MessageNode], trigger_id: int) -> int:
    """The conversation's first message, as the request's key was made from (the layout's)."""
    first = next((n.message_id for n in nodes[1:] if n.message_id is not None), None)
    return int(first) if first is not None else trigger_id


def _others(nodes: list[MessageNode], context: Sequence[ContextEntry | None]) -> tuple[int, ...]:
    """The messages sent after a label of other recent talk, up to the next answer or trigger:
    the label as its row says (a row of before that said nothing: by its text)."""
    labels = {i for i, entry in enumerate(context) if entry and entry.reasons == [OTHERS_REASON]}
    found: list[int] = []
    after_label = False
    for index, node in enumerate(nodes[:-1]):
        by_text = not labels and node.content == OTHERS_LABEL and node.message_id is None
        if index in labels or by_text:
            after_label = True
        elif node.role == "assistant":
            after_label = False
        elif after_label and node.message_id is not None:
            found.append(int(node.message_id))
    return tuple(found)
