"""One request as remembered for its follow-ups: what it sent, what the bot answered, and the
text each message had then (an edit since breaks the prefix at that message)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from conversation.graph.node import MessageNode


def content_digest(content: str) -> str:
    """A short, stable digest of a message's text: enough to tell an edit, without keeping
    a second copy of every message in memory (or in the store)."""
    return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def answer_node(text: str, posted: Sequence[int]) -> MessageNode:
    """The bot's answer as a request holds it: the first Discord message it was posted as, and
    every one of them (``parts``) when it took several, so a deletion of any part is seen."""
    ids = [int(i) for i in posted]
    metadata = {"parts": ids} if len(ids) > 1 else {}
    return MessageNode(
        role="assistant",
        content=text,
        message_id=str(ids[0]) if ids else None,
        metadata=metadata,
    )


def discord_ids(node: MessageNode) -> tuple[int, ...]:
    """The Discord messages a sent node stands for: its own, or each part of an answer."""
    parts = (node.metadata or {}).get("parts")
    if parts:
        return tuple(int(i) for i in parts)
    return (int(node.message_id),) if node.message_id is not None else ()


class SentPrompt(BaseModel):
    """What one answer sent and got back, for the next request in its conversation."""

    model_config = ConfigDict(frozen=True)

    channel_id: int
    trigger_id: int
    nodes: tuple[MessageNode, ...]  # the request as sent, system prompt first
    tokens: tuple[int, ...]  # per node, as the budget counted them
    answer: MessageNode | None = None  # the bot's answer (None: replayed logs have none)
    answer_ids: tuple[int, ...] = ()  # the Discord messages the answer was posted as
    cache_key: str
    digests: dict[int, str] = {}  # message id -> digest of its text when sent
    others: tuple[int, ...] = ()  # the messages sent as other recent talk, not the conversation
    # The trigger of the request at which the conversation was last cut (None: not cut since
    # it was last built afresh, or read back from a record stored before the store kept it).
    cut_at: int | None = None
    # Messages it holds known to be deleted when it was recalled (the store's own deletions,
    # for a request read back from it): never sent again, whatever the channel's cache says.
    gone: frozenset[int] = frozenset()

    @property
    def message_ids(self) -> set[int]:
        """Every Discord message the request and its answer hold."""
        ids = {i for node in self.nodes for i in discord_ids(node)}
        return ids | set(self.answer_ids) | {self.trigger_id}

    def answers(self, message_id: int) -> bool:
        """Whether ``message_id`` is this request's trigger or one of its answer's messages."""
        return message_id == self.trigger_id or message_id in self.answer_ids
