"""Where the requests sent are remembered: an interface (the bot's store can stand behind it)
and the bounded in-process memory used without one (and by the replay tools)."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Protocol

from conversation.memory.sent import SentPrompt

PROMPTS_PER_CHANNEL = 16
"""Requests kept per channel: a follow-up continues one of the latest few conversations (the
replay tools keep as many as the server's cache they measure). A continued request shares its
message objects with the one before, so a conversation's requests cost little more than one."""
CHANNELS_KEPT = 512


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
    """The last ``per_channel`` requests of the ``channels`` channels used most recently: a
    bounded memory when there is no store (and for the replay tools)."""

    def __init__(
        self, per_channel: int = PROMPTS_PER_CHANNEL, channels: int = CHANNELS_KEPT
    ) -> None:
        self._per_channel = per_channel
        self._channels = channels
        self._sent: OrderedDict[int, deque[SentPrompt]] = OrderedDict()

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
            dropped += len(kept) - len(keep)
            if not keep:
                del self._sent[channel_id]
            elif len(keep) < len(kept):
                self._sent[channel_id] = deque(keep, maxlen=self._per_channel)
        return dropped

    def remember_now(self, sent: SentPrompt) -> None:
        kept = self._sent.get(sent.channel_id)
        if kept is None:
            kept = self._sent[sent.channel_id] = deque(maxlen=self._per_channel)
        self._sent.move_to_end(sent.channel_id)
        kept.append(sent)
        while len(self._sent) > self._channels:
            self._sent.popitem(last=False)
