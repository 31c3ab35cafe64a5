"""The selectors our builder is measured against, over the same channel reader.

``original_literal`` is the design document's algorithm read literally (docs/benchmarks.md calls it
"original tik/tok"): every neighbour within the threshold is linked, linear messages seed the
exploration, and a step adds everything it found before the cap is checked.
"""

from __future__ import annotations

from datetime import timedelta

from conversation.common import ContextSettings
from conversation.sources import ChannelReader, MessageLike, reference_id


async def last_n(trigger: MessageLike, reader: ChannelReader, count: int) -> list[MessageLike]:
    return await reader.recent(trigger, count)


async def reply_chain(trigger: MessageLike, reader: ChannelReader, limit: int = 25) -> list:
    """llmcord-style: the chain of replies above the trigger, nothing else."""
    chain: list[MessageLike] = []
    current = trigger
    while len(chain) < limit:
        parent_id = reference_id(current)
        if parent_id is None:
            break
        parent = await reader.get(parent_id)
        if parent is None:
            break
        chain.append(parent)
        current = parent
    return chain


async def original_literal(
    trigger: MessageLike, reader: ChannelReader, settings: ContextSettings
) -> list[MessageLike]:
    threshold = timedelta(minutes=settings.time_threshold_minutes)
    reader.learn(trigger)
    graph: dict[int, MessageLike] = {}
    for message in await reader.recent(trigger, settings.min_linear):
        graph[message.id] = message
    unexplored_refs = list(graph.values())
    frontier = list(graph.values())
    sealed: set[tuple[int, str]] = set()
    while len(graph) < settings.max_total:
        added_refs = []
        for message in unexplored_refs:
            parent_id = reference_id(message)
            if parent_id and parent_id not in graph and parent_id != trigger.id:
                parent = await reader.get(parent_id)
                if parent is not None:
                    graph[parent.id] = parent
                    added_refs.append(parent)
        if len(graph) >= settings.max_total:
            break
        added_temporal = []
        for message in frontier:
            for direction in ("before", "after"):
                if (message.id, direction) in sealed:
                    continue
                if direction == "before":
                    neighbour = await reader.previous(message)
                else:
                    neighbour = await reader.next(message)
                if neighbour is None or neighbour.id >= trigger.id or neighbour.id in graph:
                    continue
                if abs(neighbour.created_at - message.created_at) > threshold:
                    sealed.add((message.id, direction))
                    continue
                graph[neighbour.id] = neighbour
                added_temporal.append(neighbour)
        if not added_refs and not added_temporal:
            break
        unexplored_refs = added_refs + added_temporal
        frontier = added_refs + added_temporal
    return sorted(graph.values(), key=lambda m: m.id)
