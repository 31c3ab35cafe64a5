"""What the memory added to a request, as data of its own: the request it starts with, where
its conversation was last cut, what its summary stands for, where the other recent talk starts.

A store keeps these as columns and reads them back from there (``sent_from_record`` in the
bot), never from a work-log sentence or a label's text: a sentence forget-user rewrote, or a
member's message that reads like the label, must not move a cut or a summary. Rows stored before
the columns existed have none, and are read the old way.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from conversation.graph.node import MessageNode
from conversation.memory.summary import summary_of
from conversation.prompt.pipeline import PreparedPrompt, is_others_label

OTHERS_REASON = "others"
"""The reason the label before the other recent talk carries in a stored request: the messages
after it, up to the next answer or the trigger, are not the conversation's."""


class MemoryRecord(BaseModel):
    """What the memory added to one request (the request itself is frozen once built)."""

    model_config = ConfigDict(frozen=True)

    continues: int | None = None  # the trigger of the request it starts with
    reused: int | None = None  # request messages sent again unchanged (None: none, or broken)
    cut_at: int | None = None  # the trigger of the request at which it was last cut
    # Per request position: the Discord messages the summary there stands for.
    summaries: dict[int, tuple[int, ...]] = {}
    labels: tuple[int, ...] = ()  # the positions of the labels before other recent talk


def memory_record(prepared: PreparedPrompt) -> MemoryRecord:
    """The memory's part of ``prepared``, for the store's columns."""
    nodes = prepared.graph.snapshot().nodes()
    return MemoryRecord(
        continues=prepared.continues,
        reused=prepared.reused,
        cut_at=prepared.cut_at,
        summaries=_summaries(nodes),
        labels=tuple(i for i, node in enumerate(nodes) if is_others_label(node)),
    )


def _summaries(nodes: list[MessageNode]) -> dict[int, tuple[int, ...]]:
    found: dict[int, tuple[int, ...]] = {}
    for position, node in enumerate(nodes):
        summary = summary_of(node)
        if summary is not None:
            found[position] = summary.covers
    return found
