"""The memory a thread the bot opened reads: its own requests, and before it has any, the
channel request whose answer the thread was opened from (a thread started from a message has
that message's id), so the thread's first request starts with the channel's, byte for byte,
and the model server's prompt cache holds."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from conversation.memory import PromptMemory, SentPrompt


class ThreadMemory:
    """``memory`` as a thread opened from a message of ``parent_id`` reads it."""

    def __init__(self, memory: PromptMemory, thread_id: int, parent_id: int) -> None:
        self.memory = memory
        self.thread_id = thread_id
        self.parent_id = parent_id

    async def recall(self, channel_id: int, candidates: Sequence[int]) -> SentPrompt | None:
        found = await self.memory.recall(channel_id, candidates)
        if found is None and channel_id == self.thread_id:
            found = await self.memory.recall(self.parent_id, [self.thread_id])
        return found

    async def remember(self, sent: SentPrompt) -> None:
        await self.memory.remember(sent)

    def drop(self, where: Callable[[SentPrompt], bool]) -> int:
        """What the shared memory holds goes from it (a thread reads no memory of its own)."""
        return self.memory.drop(where)
