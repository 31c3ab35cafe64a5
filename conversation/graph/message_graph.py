"""The conversation as an immutable DAG of messages behind a list-of-dicts interface.

Why a graph of immutable nodes: to train on-policy, the context an assistant turn was generated
from must stay exactly as the model saw it, while the conversation itself keeps being edited
(Discord edits, squashed context, corrections). So nothing is ever changed in place:

* **Nodes** (``MessageNode``) are frozen and never removed; each gets a node id (its creation
  order) when it enters the graph.
* **Sequential edges** are the order of node ids in a *head* (a persistent vector of node ids):
  ``head[i] -> head[i + 1]`` is the flow of the conversation.
* **Parallel edges** link a node to the node(s) that replaced it: an edit (``g[i] = ...``), a
  squash of several messages into one, a Discord edit. See ``MessageGraph.versions``.
* **Branches**: a change at or before the last assistant turn whose context is intact breaks the
  prefix that turn was generated from. The head then moves to a new branch, and the old branch
  keeps its final head for good. A change after the last assistant turn breaks nothing and stays
  on the branch.

Every change builds a new ``GraphState`` (``conversation.graph.state``: the persistent data and
its pure transitions) that shares structure with the old one, so a snapshot is O(1) and every
earlier state stays readable as it was. ``MessageGraph`` here is the mutable-looking facade that
records every change; what it hands out (``MessageView``, the dict a caller gets for one message,
which routes writes back to the graph or refuses them, and ``Snapshot``) is in
``conversation.graph.views``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping, MutableSequence
from typing import Any

from conversation.graph import formats
from conversation.graph.node import MessageNode
from conversation.graph.state import GraphState
from conversation.graph.views import (
    Branch,
    MessageInput,
    MessageView,
    Snapshot,
    StaleViewError,
    TrainingSample,
    as_node,
    list_position,
    preview,
    same_turns,
)

# --- the facade -------------------------------------------------------------------------------


class MessageGraph(MutableSequence[MessageView]):
    """A conversation used like a list of message dicts, recorded as an immutable graph.

    ``g.append(msg)``, ``g[i] = msg``, ``g[i]["content"] = text``, ``del g[i]``,
    ``g.insert(i, msg)``, slices with step 1 and the other list methods all work; each change adds
    nodes and moves the head, so ``snapshot()``s taken before never change. Equality compares role
    and content in order, against another graph, a snapshot or a list of dicts.
    """

    __slots__ = ("_state",)

    def __init__(self, messages: Iterable[MessageInput] = ()) -> None:
        self._state = GraphState()
        self.extend(messages)

    @classmethod
    def from_state(cls, state: GraphState) -> MessageGraph:
        """A graph continuing from ``state`` (O(1); the two graphs then evolve independently)."""
        graph = cls()
        graph._state = state
        return graph

    @classmethod
    def from_openai(cls, messages: Iterable[Mapping[str, Any]]) -> MessageGraph:
        return cls(formats.from_openai(messages))

    @property
    def state(self) -> GraphState:
        """The persistent state behind the graph (for storage; never changes once read)."""
        return self._state

    def copy(self) -> MessageGraph:
        return MessageGraph.from_state(self._state)

    # --- list protocol ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._state.head)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = list_position(index, len(self))
        node_id = self._state.head[position]
        return MessageView(self._state.nodes[node_id], graph=self, index=position, node_id=node_id)

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            start, stop = self._span(index)
            self._splice(start, stop, tuple(as_node(message) for message in value))
        else:
            position = list_position(index, len(self))
            self._splice(position, position + 1, (as_node(value),))

    def __delitem__(self, index: int | slice) -> None:
        if isinstance(index, slice):
            start, stop = self._span(index)
        else:
            start = list_position(index, len(self))
            stop = start + 1
        self._splice(start, stop, ())

    def insert(self, index: int, value: MessageInput) -> int:  # type: ignore[override]
        """Insert as ``list.insert`` does (index clamped); returns the new node's id."""
        size = len(self)
        index = operator.index(index)
        position = max(0, size + index) if index < 0 else min(index, size)
        self._splice(position, position, (as_node(value),))
        return self._state.head[position]

    def append(self, value: MessageInput) -> int:  # type: ignore[override]
        """Append a message; returns the new node's id."""
        size = len(self)
        self._splice(size, size, (as_node(value),))
        return self._state.head[size]

    def extend(self, values: Iterable[MessageInput]) -> None:
        size = len(self)
        self._splice(size, size, tuple(as_node(message) for message in values))

    def pop(self, index: int = -1) -> MessageView:
        """Remove a message (recorded) and return it as a read-only view."""
        position = list_position(index, len(self))
        node_id = self._state.head[position]
        removed = MessageView(self._state.nodes[node_id], node_id=node_id)
        self._splice(position, position + 1, ())
        return removed

    def clear(self) -> None:
        self._splice(0, len(self), ())

    def __iter__(self) -> Iterator[MessageView]:
        state = self._state
        for position, node_id in enumerate(state.head):
            yield MessageView(state.nodes[node_id], graph=self, index=position, node_id=node_id)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageGraph) and other._state.head is self._state.head:
            return True
        return same_turns(self.snapshot().nodes(), other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"MessageGraph({preview(self.snapshot().nodes())}, branch={self.branch})"

    # --- graph --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The current messages, frozen: O(1), and unchanged by anything done to the graph later."""
        return Snapshot(self._state.head, self._state.nodes)

    def squash(self, start: int, stop: int, message: MessageInput) -> int:
        """Replace messages ``start:stop`` by one (e.g. a summary), linked to all of them."""
        start, stop = self._span(slice(start, stop))
        if start == stop:
            raise IndexError(f"squash needs at least one message, got [{start}:{stop}]")
        self._splice(start, stop, (as_node(message),))
        return self._state.head[start]

    @property
    def branch(self) -> int:
        """The id of the current branch (0 until a change first breaks a prefix)."""
        return self._state.branch

    def branches(self) -> list[Branch]:
        """Every branch, oldest first, with its final head (the current head for the last)."""
        state = self._state
        return [
            Branch(
                id=branch,
                parent=record.parent,
                fork_index=record.fork_index,
                cause=record.cause,
                head=Snapshot(state.branch_head(branch), state.nodes),
                current=branch == state.branch,
            )
            for branch, record in enumerate(state.branches)
        ]

    def node_id(self, index: int) -> int:
        return self._state.head[list_position(index, len(self))]

    def node(self, node_id: int) -> MessageNode:
        """Any node ever added, by id (ids are creation order)."""
        return self._state.nodes[node_id]

    def replaced(self, node_id: int) -> tuple[int, ...]:
        """Ids of the nodes ``node_id`` replaced (its incoming parallel edges)."""
        return self._state.replaces[node_id]

    def parallel_edges(self) -> Iterator[tuple[int, int]]:
        """Every ``(old id, new id)`` replacement ever recorded, in the order they happened."""
        for new_id, olds in enumerate(self._state.replaces):
            for old_id in olds:
                yield old_id, new_id

    def versions(self, index: int) -> list[MessageNode]:
        """Every version of the message at ``index``, oldest first, the current one last.

        Follows parallel edges back from the current node; after a squash this includes every
        message that was folded into it, in creation order.
        """
        state = self._state
        seen = {self.node_id(index)}
        stack = list(seen)
        while stack:
            for old in state.replaces[stack.pop()]:
                if old not in seen:
                    seen.add(old)
                    stack.append(old)
        return [state.nodes[node_id] for node_id in sorted(seen)]

    def find(self, message_id: str | int) -> int | None:
        """Position of the latest message from Discord message ``message_id`` (O(n) scan)."""
        wanted = str(message_id)
        state = self._state
        for position in range(len(state.head) - 1, -1, -1):
            if state.nodes[state.head[position]].message_id == wanted:
                return position
        return None

    def training_records(self, branch: int | None = None) -> Iterator[TrainingSample]:
        """Every assistant turn with the exact context it was generated from; see below."""
        state = self._state
        if branch is not None and not 0 <= branch < len(state.branches):
            raise IndexError(f"no branch {branch}; this graph has {len(state.branches)}")
        for owner, position in state.branch_samples(branch):
            head = state.branch_head(owner)
            yield TrainingSample(
                branch=owner,
                position=position,
                context=Snapshot(head, state.nodes, 0, position),
                turn=state.nodes[head[position]],
            )

    def training_samples(self, branch: int | None = None) -> Iterator[dict[str, Any]]:
        """On-policy fine-tuning data: ``{"messages": [...]}`` per assistant turn (OpenAI JSONL).

        Each sample is an assistant turn (appended, inserted or put in by an edit) preceded by
        exactly the messages before it at the moment it entered the graph; a later edit of that
        context never shows up, because such an edit moves the head to a new branch instead.

        With ``branch=None`` every sample of every branch is yielded once, branch by branch.
        With a branch id, the samples valid on that branch: it *shares* its parent's samples
        whose turn lies before its fork position (and, through the parent, the ancestors'), and
        *adds* the samples of the turns that entered while it was the current branch. Turns the
        branch carried over from after the fork position are not its samples: their context
        changed.
        """
        for record in self.training_records(branch):
            yield record.to_openai()

    # --- provider formats ---------------------------------------------------------------------

    def to_dicts(self) -> list[dict[str, Any]]:
        return self.snapshot().to_dicts()

    def to_openai(self) -> list[dict[str, Any]]:
        """The current head as OpenAI chat messages (see ``conversation.graph.formats``)."""
        return self.snapshot().to_openai()

    def to_anthropic(self) -> tuple[str, list[dict[str, Any]]]:
        """The current head as Anthropic ``(system, messages)``."""
        return self.snapshot().to_anthropic()

    # --- internals ----------------------------------------------------------------------------

    def _splice(self, start: int, stop: int, new: tuple[MessageNode, ...]) -> None:
        self._state = self._state.splice(start, stop, new)

    def _span(self, index: slice) -> tuple[int, int]:
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("only slices with step 1 can be changed in a MessageGraph")
        return start, max(start, stop)

    def _replace_from_view(self, index: int, node_id: int, node: MessageNode) -> int:
        head = self._state.head
        if index >= len(head) or head[index] != node_id:
            raise StaleViewError(
                f"message {index} changed since this view was read; read graph[{index}] again"
            )
        self._splice(index, index + 1, (node,))
        return self._state.head[index]
