"""The in-process memory of what was sent: found by a trigger or an answer message, the latest
request first, and bounded (per channel and in channels)."""

from __future__ import annotations

from conversation.graph.node import MessageNode
from conversation.memory.recall import BoundedMemory
from conversation.memory.sent import SentPrompt

SYSTEM = MessageNode(role="system", content="You are a bot.")


def sent(channel: int, trigger: int, answers: tuple[int, ...] = ()) -> SentPrompt:
    return SentPrompt(
        channel_id=channel,
        trigger_id=trigger,
        nodes=(SYSTEM,),
        tokens=(5,),
        answer_ids=answers,
        cache_key=f"conversation-{trigger}",
    )


def test_a_request_is_found_by_its_trigger_or_answer_in_its_channel_only():
    memory = BoundedMemory()
    memory.remember_now(sent(1, 10, (11, 12)))
    memory.remember_now(sent(1, 20, (21,)))
    assert memory.recall_now(1, [12]).trigger_id == 10
    assert memory.recall_now(1, [5, 21, 10]).trigger_id == 20  # the first candidate found
    assert memory.recall_now(2, [10]) is None
    assert memory.recall_now(1, [99]) is None


def test_the_memory_keeps_the_latest_requests_of_the_latest_channels():
    memory = BoundedMemory(per_channel=2, channels=2)
    for trigger in (10, 20, 30):
        memory.remember_now(sent(1, trigger))
    assert memory.recall_now(1, [10]) is None  # the oldest of the channel went
    assert memory.recall_now(1, [20]).trigger_id == 20
    memory.remember_now(sent(2, 40))
    memory.remember_now(sent(3, 50))  # a third channel: the least recently used one goes
    assert memory.recall_now(1, [30]) is None
    assert memory.recall_now(2, [40]) is not None and memory.recall_now(3, [50]) is not None
