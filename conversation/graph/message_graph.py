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

Every change builds a new ``GraphState`` that shares structure with the old one (pyrsistent's
persistent vectors: O(log32 n) per append/edit), so a snapshot is O(1) and every earlier state
stays readable as it was. Inserting or deleting in the middle rebuilds the id vector (O(n)
pointers: pyrsistent has no persistent insert); appends, reads, edits and snapshots never do.

Three classes: ``GraphState`` (the persistent data and its pure transitions), ``MessageGraph``
(the mutable-looking facade that records every change) and ``MessageView`` (the dict a caller
gets for one message, which routes writes back to the graph or refuses them).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import operator
from collections.abc import Iterable, Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyrsistent import PVector

from conversation.common.compat import pvector  # the pure-Python vector, on purpose (see there)
from conversation.graph import formats
from conversation.graph.node import FIELDS, MessageFormatError, MessageNode

MessageInput = MessageNode | Mapping[str, Any]

_EMPTY: PVector = pvector()
_FIELD_SET = frozenset(FIELDS)


class ImmutableSnapshotError(TypeError):
    """A write was attempted on something that records what a model saw, which never changes."""


class StaleViewError(RuntimeError):
    """A message view was written to after its position in the graph changed under it."""


def as_node(message: MessageInput | MessageView) -> MessageNode:
    """Accept a node, a view or a plain message dict (validated, unknown keys refused)."""
    if isinstance(message, MessageNode):
        return message
    if isinstance(message, MessageView):
        return message.node
    if isinstance(message, Mapping):
        return MessageNode.from_dict(message)
    raise MessageFormatError(f"a message must be a dict or MessageNode, got {message!r}")


# --- persistent state -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BranchRecord:
    """Where a branch came from; ``head`` is filled in when the branch stops being current."""

    parent: int | None
    fork_index: int | None
    cause: str | None
    first_sample: int
    head: PVector | None = None


_ROOT_BRANCHES: PVector = pvector([BranchRecord(None, None, None, 0)])


@dataclass(frozen=True, slots=True)
class GraphState:
    """All of a graph at one moment, as persistent vectors; transitions return a new state.

    ``nodes[id]`` is every node ever added and ``replaces[id]`` the ids it replaced (parallel
    edges). ``head`` is the current branch's node ids in order. ``turns[:turn_count]`` are the
    positions of the current branch's assistant turns whose context is intact (increasing; slots
    past ``turn_count`` are leftovers that a fork cut off in O(1)). ``samples`` holds the position
    of every assistant turn ever added, grouped by branch in branch order, because only the newest
    branch is ever current; ``branches[b].first_sample`` is where branch ``b``'s group starts.
    """

    nodes: PVector = _EMPTY
    replaces: PVector = _EMPTY
    head: PVector = _EMPTY
    branch: int = 0
    branches: PVector = _ROOT_BRANCHES
    turns: PVector = _EMPTY
    turn_count: int = 0
    samples: PVector = _EMPTY

    @property
    def last_turn(self) -> int:
        """Position of the last intact assistant turn on this branch, -1 if none."""
        return self.turns[self.turn_count - 1] if self.turn_count else -1

    def splice(self, start: int, stop: int, new: tuple[MessageNode, ...]) -> GraphState:
        """Replace ``head[start:stop]`` by ``new`` (an append, edit, insert, delete or squash).

        New nodes replace old ones pairwise when the counts match (an edit), all of them when one
        node replaces several (a squash); otherwise only the flow changes. Replacing nodes by equal
        ones changes nothing and records nothing.
        """
        size = len(self.head)
        if not 0 <= start <= stop <= size:
            raise IndexError(f"splice [{start}:{stop}] out of range for {size} messages")
        removed = stop - start
        if removed == len(new) and all(
            self.nodes[self.head[start + j]] == node for j, node in enumerate(new)
        ):
            return self
        state = self._fork(start, _cause(removed, len(new))) if start <= self.last_turn else self
        first_id = len(state.nodes)
        ids = range(first_id, first_id + len(new))
        head = state.head
        if removed == 0 and start == size:
            head = head.append(first_id) if len(new) == 1 else head.extend(ids)
        elif removed == len(new):
            for j, node_id in enumerate(ids):
                head = head.set(start + j, node_id)
        else:
            spliced = head.tolist()
            spliced[start:stop] = ids
            head = pvector(spliced)
        old_ids = tuple(self.head[start + j] for j in range(removed))
        if removed == len(new):
            edges: Iterable[tuple[int, ...]] = ((old,) for old in old_ids)
        elif len(new) == 1:
            edges = (old_ids,)
        else:
            edges = itertools.repeat((), len(new))
        turns, turn_count, samples = state.turns, state.turn_count, state.samples
        for j, node in enumerate(new):
            if node.role == "assistant":
                # Positions only grow within a branch: every change here is after last_turn.
                position = start + j
                turns = turns.set(turn_count, position)
                turn_count += 1
                samples = samples.append(position)
        if len(new) == 1:  # the common case; append is cheaper than a one-item extend
            nodes, replaces = state.nodes.append(new[0]), state.replaces.append(next(iter(edges)))
        else:
            nodes, replaces = state.nodes.extend(new), state.replaces.extend(edges)
        # Plain constructor calls: dataclasses.replace costs several microseconds per change.
        return GraphState(
            nodes,
            replaces,
            head,
            state.branch,
            state.branches,
            turns,
            turn_count,
            samples,
        )

    def _fork(self, at: int, cause: str) -> GraphState:
        record = self.branches[self.branch]
        branches = self.branches.set(self.branch, replace(record, head=self.head))
        branches = branches.append(BranchRecord(self.branch, at, cause, len(self.samples)))
        kept = bisect.bisect_left(self.turns, at, 0, self.turn_count)
        return GraphState(
            self.nodes,
            self.replaces,
            self.head,
            len(self.branches),
            branches,
            self.turns,
            kept,
            self.samples,
        )

    def branch_head(self, branch: int) -> PVector:
        return self.head if branch == self.branch else self.branches[branch].head

    def sample_range(self, branch: int) -> tuple[int, int]:
        """Indexes into ``samples`` of the turns added while ``branch`` was current."""
        stop = (
            self.branches[branch + 1].first_sample
            if branch + 1 < len(self.branches)
            else len(self.samples)
        )
        return self.branches[branch].first_sample, stop

    def branch_samples(self, branch: int | None) -> Iterator[tuple[int, int]]:
        """``(branch it was added on, position)`` of the turns valid on ``branch`` (all if None).

        A branch shares its parent's samples that lie before its fork position (recursively up
        to the root) and adds those of the turns that entered while it was current.
        """
        if branch is None:
            for each in range(len(self.branches)):
                lo, hi = self.sample_range(each)
                for index in range(lo, hi):
                    yield each, self.samples[index]
            return
        segments = []
        limit: int | None = None
        current: int | None = branch
        while current is not None:
            lo, hi = self.sample_range(current)
            if limit is not None:
                hi = bisect.bisect_left(self.samples, limit, lo, hi)
            segments.append((current, lo, hi))
            record = self.branches[current]
            if record.fork_index is not None:
                limit = record.fork_index if limit is None else min(limit, record.fork_index)
            current = record.parent
        for owner, lo, hi in reversed(segments):
            for index in range(lo, hi):
                yield owner, self.samples[index]


def _cause(removed: int, added: int) -> str:
    if removed == 0:
        return "insert"
    if added == 0:
        return "delete"
    if added == removed:
        return "edit"
    return "squash" if added == 1 else "splice"


# --- read-only values handed out --------------------------------------------------------------


class MessageView(Mapping[str, Any]):
    """One message, read like a dict; writes go to the graph as new nodes, or are refused.

    Keys are the fields that are set (as in ``MessageNode.to_dict``); values are the node's own
    immutable values (tuples, frozen maps), so a nested change cannot slip past the recording.
    A view from ``MessageGraph[i]`` is *bound*: ``view[key] = value`` records an edit of position
    ``i``, and keeps working on the node it created. It refuses (``StaleViewError``) if position
    ``i`` no longer holds the node it was read from. Views from snapshots are read-only.
    """

    __slots__ = ("_graph", "_index", "_node", "_node_id")

    def __init__(
        self,
        node: MessageNode,
        *,
        graph: MessageGraph | None = None,
        index: int | None = None,
        node_id: int | None = None,
    ) -> None:
        self._node = node
        self._graph = graph
        self._index = index
        self._node_id = node_id

    @property
    def node(self) -> MessageNode:
        return self._node

    @property
    def node_id(self) -> int | None:
        return self._node_id

    @property
    def index(self) -> int | None:
        return self._index

    @property
    def writable(self) -> bool:
        return self._graph is not None

    def __getitem__(self, key: str) -> Any:
        if key in _FIELD_SET and self._node.is_set(key):
            return getattr(self._node, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (key for key in FIELDS if self._node.is_set(key))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageView):
            return self._node == other._node
        if isinstance(other, MessageNode):
            return self._node == other
        if isinstance(other, Mapping):
            try:
                return self._node == MessageNode.from_dict(other)
            except MessageFormatError:
                return False
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # dict-like: equal to dicts, so not hashable

    def __setitem__(self, key: str, value: Any) -> None:
        self._write({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._write({}, drop=key)

    def update(
        self, other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **kw: Any
    ) -> None:
        """Change several fields as one recorded edit (one new node, not one per field)."""
        self._write({**dict(other), **kw})

    def to_dict(self) -> dict[str, Any]:
        return self._node.to_dict()

    copy = to_dict

    def __repr__(self) -> str:
        return repr(self.to_dict())

    def _write(self, changes: dict[str, Any], drop: str | None = None) -> None:
        if self._graph is None:
            raise ImmutableSnapshotError(
                "this message is part of a snapshot (what a model saw) and never changes; "
                "edit the MessageGraph instead, e.g. graph[i]['content'] = ..."
            )
        data = self._node.to_dict()
        data.update(changes)
        if drop is not None:
            del data[drop]
        node = MessageNode.from_dict(data)
        assert self._index is not None and self._node_id is not None
        self._node_id = self._graph._replace_from_view(self._index, self._node_id, node)
        self._node = node


class Snapshot(Sequence[MessageView]):
    """The messages of one moment, exactly as a model saw them: O(1) to take, never changes.

    Indexing gives read-only ``MessageView``s; contiguous slices are snapshots too (O(1)).
    Equality follows the graph's (role and content, as in the original design); the hash agrees
    with it and is computed once.
    """

    __slots__ = ("_digest", "_hash", "_ids", "_nodes", "_start", "_stop")

    def __init__(self, ids: PVector, nodes: PVector, start: int = 0, stop: int | None = None):
        self._ids = ids
        self._nodes = nodes
        self._start = start
        self._stop = len(ids) if stop is None else stop
        self._hash: int | None = None
        self._digest: str | None = None

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return Snapshot(
                    self._ids, self._nodes, self._start + start, self._start + max(start, stop)
                )
            picked = [self._ids[self._start + i] for i in range(start, stop, step)]
            return Snapshot(pvector(picked), self._nodes)
        position = _position(index, len(self))
        node_id = self._ids[self._start + position]
        return MessageView(self._nodes[node_id], node_id=node_id)

    def __setitem__(self, index: Any, value: Any = None) -> None:
        raise ImmutableSnapshotError(
            "a snapshot is what a model saw and never changes; edit the MessageGraph instead"
        )

    __delitem__ = __setitem__

    def _iter_ids(self) -> Iterator[int]:
        if (self._stop - self._start) * 4 < len(self._ids):  # a small window of a big vector
            return (self._ids[i] for i in range(self._start, self._stop))
        return itertools.islice(self._ids, self._start, self._stop)

    def node_ids(self) -> tuple[int, ...]:
        """The node ids in order: consecutive pairs are the sequential edges of this moment."""
        return tuple(self._iter_ids())

    def nodes(self) -> tuple[MessageNode, ...]:
        return tuple(self._nodes[node_id] for node_id in self.node_ids())

    def node(self, index: int) -> MessageNode:
        return self._nodes[self._ids[self._start + _position(index, len(self))]]

    def __iter__(self) -> Iterator[MessageView]:
        for node_id in self._iter_ids():
            yield MessageView(self._nodes[node_id], node_id=node_id)

    def to_dicts(self) -> list[dict[str, Any]]:
        return [node.to_dict() for node in self.nodes()]

    def to_openai(self) -> list[dict[str, Any]]:
        return formats.to_openai(self.nodes())

    def to_anthropic(self) -> tuple[str, list[dict[str, Any]]]:
        return formats.to_anthropic(self.nodes())

    def __eq__(self, other: object) -> bool:
        if (
            isinstance(other, Snapshot)
            and other._ids is self._ids
            and (other._start, other._stop) == (self._start, self._stop)
        ):
            return True
        return _same_turns(self.nodes(), other)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((node.role, node.content) for node in self.nodes()))
        return self._hash

    def digest(self) -> str:
        """SHA-256 of every field of every message: the same in every process (unlike ``hash``),
        so storage can name "exactly what the model saw" and find it again."""
        if self._digest is None:
            canonical = json.dumps(
                [node.model_dump(mode="json") for node in self.nodes()],
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
            self._digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        return self._digest

    def __repr__(self) -> str:
        return f"Snapshot({_preview(self.nodes())})"


@dataclass(frozen=True, slots=True)
class Branch:
    """One line of the conversation's history. ``fork_index``: where it left its parent."""

    id: int
    parent: int | None
    fork_index: int | None
    cause: str | None
    head: Snapshot
    current: bool


@dataclass(frozen=True, slots=True)
class TrainingSample:
    """An assistant turn and the exact context it was generated from."""

    branch: int
    position: int
    context: Snapshot
    turn: MessageNode

    def to_openai(self) -> dict[str, Any]:
        """OpenAI fine-tuning chat form: ``{"messages": [...context..., turn]}``."""
        return {"messages": [*self.context.to_openai(), formats.node_to_openai(self.turn)]}


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
        position = _position(index, len(self))
        node_id = self._state.head[position]
        return MessageView(self._state.nodes[node_id], graph=self, index=position, node_id=node_id)

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            start, stop = self._span(index)
            self._splice(start, stop, tuple(as_node(message) for message in value))
        else:
            position = _position(index, len(self))
            self._splice(position, position + 1, (as_node(value),))

    def __delitem__(self, index: int | slice) -> None:
        if isinstance(index, slice):
            start, stop = self._span(index)
        else:
            start = _position(index, len(self))
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
        position = _position(index, len(self))
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
        return _same_turns(self.snapshot().nodes(), other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"MessageGraph({_preview(self.snapshot().nodes())}, branch={self.branch})"

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
        return self._state.head[_position(index, len(self))]

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


def _position(index: int, size: int) -> int:
    index = operator.index(index)
    position = index + size if index < 0 else index
    if not 0 <= position < size:
        raise IndexError(f"message index {index} out of range for {size} messages")
    return position


def _turn_of(item: object) -> tuple[str, str] | None:
    if isinstance(item, MessageNode):
        return item.role, item.content
    if isinstance(item, Mapping):
        role, content = item.get("role"), item.get("content")
        if isinstance(role, str) and isinstance(content, str):
            return role, content
    return None


def _same_turns(nodes: Sequence[MessageNode], other: object) -> bool:
    if isinstance(other, MessageGraph | Snapshot):
        other_nodes: Sequence[Any] = (
            other.snapshot().nodes() if isinstance(other, MessageGraph) else other.nodes()
        )
    elif isinstance(other, Sequence) and not isinstance(other, str | bytes):
        other_nodes = other
    else:
        return NotImplemented  # type: ignore[return-value]
    if len(nodes) != len(other_nodes):
        return False
    return all(
        (node.role, node.content) == _turn_of(item)
        for node, item in zip(nodes, other_nodes, strict=True)
    )


def _preview(nodes: Sequence[MessageNode], limit: int = 20) -> str:
    if len(nodes) <= limit:
        return repr([node.to_dict() for node in nodes])
    shown = ", ".join(repr(node.to_dict()) for node in nodes[:3])
    return f"[{shown}, ... {len(nodes) - 3} more]"
