"""What the message graph hands out: messages read like dicts, snapshots, training samples.

A ``MessageView`` from ``MessageGraph[i]`` routes writes back to its graph as new nodes (an
edit is recorded, never made in place) and refuses them once its position holds another node; a
``Snapshot`` (what a model saw) and its views refuse every write. ``Branch`` and
``TrainingSample`` are the read-only records ``MessageGraph.branches`` and
``training_records`` give.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pyrsistent import PVector

from conversation.common.compat import pvector
from conversation.graph import formats
from conversation.graph.node import FIELDS, MessageFormatError, MessageNode

MessageInput = MessageNode | Mapping[str, Any]


_FIELD_SET = frozenset(FIELDS)


class ViewOwner(Protocol):
    """What a bound view writes through: the ``MessageGraph`` that handed it out."""

    def _replace_from_view(self, index: int, node_id: int, node: MessageNode) -> int: ...


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
        graph: ViewOwner | None = None,
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
        position = list_position(index, len(self))
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
        return self._nodes[self._ids[self._start + list_position(index, len(self))]]

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
        return same_turns(self.nodes(), other)

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
        return f"Snapshot({preview(self.nodes())})"


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


def list_position(index: int, size: int) -> int:
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


def same_turns(nodes: Sequence[MessageNode], other: object) -> bool:
    snapshot = getattr(other, "snapshot", None)  # a MessageGraph (this module sits below it)
    if isinstance(other, Snapshot) or callable(snapshot):
        other_nodes: Sequence[Any] = (
            other.nodes() if isinstance(other, Snapshot) else snapshot().nodes()
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


def preview(nodes: Sequence[MessageNode], limit: int = 20) -> str:
    if len(nodes) <= limit:
        return repr([node.to_dict() for node in nodes])
    shown = ", ".join(repr(node.to_dict()) for node in nodes[:3])
    return f"[{shown}, ... {len(nodes) - 3} more]"
