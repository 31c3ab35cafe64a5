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


def conversation(channel: int, trigger: int, before: SentPrompt | None, text: str) -> SentPrompt:
    """A request continuing ``before`` (its very message objects) with one new message."""
    new = MessageNode(role="user", content=text, name="Ann", message_id=str(trigger))
    nodes = (*(before.nodes if before else (SYSTEM,)), new)
    return SentPrompt(
        channel_id=channel,
        trigger_id=trigger,
        nodes=nodes,
        tokens=(5,) * len(nodes),
        cache_key=f"conversation-{channel}",
    )


def test_the_memory_stays_within_its_bytes_forgetting_the_oldest_first():
    budget = 200_000
    memory = BoundedMemory(per_channel=16, channels=512, max_bytes=budget)
    for trigger in range(1, 61):  # 60 channels, one request of ~10 KB each
        newest = conversation(trigger, trigger, None, "x" * 10_000)
        memory.remember_now(newest)
        assert memory.bytes <= budget
    assert memory.recall_now(60, [60]) is newest
    assert memory.recall_now(1, [1]) is None  # the oldest went first
    kept = [c for c in range(1, 61) if memory.recall_now(c, [c]) is not None]
    assert kept == list(range(kept[0], 61)) and len(kept) >= 15  # the latest, as many as fit


def test_a_message_shared_by_requests_is_counted_once_and_freed_with_the_last():
    memory = BoundedMemory(per_channel=16, max_bytes=10 * 1024 * 1024)
    first = conversation(1, 1, None, "y" * 50_000)
    memory.remember_now(first)
    alone = memory.bytes
    memory.remember_now(conversation(1, 2, first, "a follow-up"))
    assert alone < memory.bytes < alone + 5_000  # the 50 KB message is not counted again
    for trigger in range(3, 20):  # 16 per channel: the first two requests go, and the text
        memory.remember_now(conversation(1, trigger, None, "z"))
    assert memory.bytes < 16 * 5_000


def test_a_request_forgotten_by_drop_no_longer_counts_against_the_bytes():
    """forget-user drops requests (bot.answering.forgotten): their bytes must go with them, or
    the bound would evict live requests to make room for ones already gone."""
    memory = BoundedMemory(per_channel=16, max_bytes=10 * 1024 * 1024)
    kept = conversation(1, 1, None, "kept")
    memory.remember_now(kept)
    alone = memory.bytes
    memory.remember_now(conversation(2, 2, None, "secret " * 10_000))
    assert memory.bytes > alone + 70_000
    assert memory.drop(lambda s: s.channel_id == 2) == 1
    assert memory.bytes == alone
    assert memory.recall_now(2, [2]) is None and memory.recall_now(1, [1]) is kept


def test_a_request_is_measured_at_least_as_large_as_python_holds_it():
    import random
    import tracemalloc
    from datetime import UTC, datetime

    from conversation.memory.footprint import node_bytes

    rng = random.Random(7)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        nodes = [
            MessageNode(
                role="user",
                content=("héllo wörld " * rng.randint(1, 60)) + str(i),
                name=f"Alice{i}",
                user_id=str(123456789012345678 + i),
                message_id=str(1300000000000000000 + i),
                created_at=datetime.now(UTC),
                metadata={"reasons": ["linear", "reply"], "score": 0.5},
            )
            for i in range(2000)
        ]
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    measured = sum(node_bytes(node) for node in nodes)
    assert traced <= measured <= 1.3 * traced, (traced, measured)
