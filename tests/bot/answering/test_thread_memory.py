"""A thread's view of the memory is a whole ``PromptMemory``: a forget reaching it drops what the
shared memory holds (it keeps nothing of its own)."""

from __future__ import annotations

import inspect

from bot.answering.thread_memory import ThreadMemory
from conversation.memory import BoundedMemory, PromptMemory


def test_a_thread_memory_is_a_prompt_memory_that_drops_through_to_the_shared_one() -> None:
    asked: list[object] = []
    thread = ThreadMemory(BoundedMemory(), thread_id=2, parent_id=1)
    assert thread.drop(lambda sent: asked.append(sent) or True) == 0  # nothing remembered yet
    wanted = {n for n, _ in inspect.getmembers(PromptMemory) if not n.startswith("_")}
    assert wanted <= {n for n in dir(thread) if not n.startswith("_")}
