"""Where the requests sent are remembered: an interface (the bot's store can stand behind it)
and the bounded in-process memory used without one (and by the replay tools)."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Protocol

from conversation.memory.footprint import messages_of, node_bytes, own_bytes
from conversation.memory.sent import SentPrompt

PROMPTS_PER_CHANNEL = 16
"""Requests kept per channel: a follow-up continues one of the latest few conversations (the
replay tools keep as many as the server's cache they measure). A continued request shares its
message objects with the one before, so a conversation's requests cost little more than one."""
CHANNELS_KEPT = 512
MAX_BYTES = 64 * 1024 * 1024
"""Bytes the remembered requests may hold across channels unless told otherwise (``[cache]
max_prompt_bytes``): some 600 requests of 8k tokens, the oldest going first."""


class PromptMemory(Protocol):
    """The requests a channel's answers sent, found by a trigger or answer message."""

    async def recall(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        """The latest request whose trigger or answer is the first of ``candidates`` that has
        one (candidates come latest first)."""
        ...

    async def remember(self, sent: SentPrompt) -> None: ...

    def drop(self, where: Callable[[SentPrompt], bool]) -> int:
        """Forget every request ``where`` holds true of; returns how many went."""
        ...


class BoundedMemory:
    """The last ``per_channel`` requests of the ``channels`` channels used most recently, in
    at most ``max_bytes`` (the oldest request of the least recently used channel goes first):
    a bounded memory when there is no store (and for the replay tools)."""

    def __init__(
        self,
        per_channel: int = PROMPTS_PER_CHANNEL,
        channels: int = CHANNELS_KEPT,
        *,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._per_channel = per_channel
        self._channels = channels
        self._max_bytes = max_bytes
        self._sent: OrderedDict[int, deque[SentPrompt]] = OrderedDict()
        self._bytes = 0
        # id of a message object held -> [requests holding it, its bytes]: counted once.
        self._held: dict[int, list[int]] = {}

    @property
    def bytes(self) -> int:
        """What the remembered requests hold now, as ``footprint`` measures it."""
        return self._bytes

    async def recall(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        return self.recall_now(channel_id, candidates)

    def recall_now(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        kept = self._sent.get(channel_id)
        if not kept:
            return None
        self._sent.move_to_end(channel_id)
        by_message: dict[int, SentPrompt] = {}
        for sent in kept:  # oldest first: the latest request with a message wins
            by_message[sent.trigger_id] = sent
            by_message.update(dict.fromkeys(sent.answer_ids, sent))
        for candidate in candidates:
            if candidate in by_message:
                return by_message[candidate]
        return None

    async def remember(self, sent: SentPrompt) -> None:
        self.remember_now(sent)

    def drop(self, where: Callable[[SentPrompt], bool]) -> int:
        """Forget every request ``where`` holds true of (a person removed at their request:
        ``bot.answering.forgotten``); returns how many went."""
        dropped = 0
        for channel_id, kept in list(self._sent.items()):
            keep = [sent for sent in kept if not where(sent)]
            for sent in kept:
                if not any(sent is kept_one for kept_one in keep):
                    self._release(sent)  # its bytes no longer count against the bound
            dropped += len(kept) - len(keep)
            if not keep:
                del self._sent[channel_id]
            elif len(keep) < len(kept):
                self._sent[channel_id] = deque(keep, maxlen=self._per_channel)
        return dropped

    def remember_now(self, sent: SentPrompt) -> None:
        kept = self._sent.get(sent.channel_id)
        if kept is None:
            kept = self._sent[sent.channel_id] = deque()
        self._sent.move_to_end(sent.channel_id)
        kept.append(sent)
        self._hold(sent)
        if len(kept) > self._per_channel:
            self._release(kept.popleft())
        while len(self._sent) > self._channels:
            for dropped in self._sent.popitem(last=False)[1]:
                self._release(dropped)
        while self._bytes > self._max_bytes and self._sent:
            channel_id, oldest = next(iter(self._sent.items()))
            self._release(oldest.popleft())
            if not oldest:
                del self._sent[channel_id]

    def _hold(self, sent: SentPrompt) -> None:
        self._bytes += own_bytes(sent)
        for node in messages_of(sent):
            held = self._held.get(id(node))
            if held is None:
                held = self._held[id(node)] = [0, node_bytes(node)]
                self._bytes += held[1]
            held[0] += 1

    def _release(self, sent: SentPrompt) -> None:
        self._bytes -= own_bytes(sent)
        for node in messages_of(sent):
            held = self._held[id(node)]
            held[0] -= 1
            if not held[0]:
                del self._held[id(node)]
                self._bytes -= held[1]
