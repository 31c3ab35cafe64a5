"""What a remembered request costs in memory, measured rather than guessed from its tokens.

The in-process memory is bounded by bytes (``recall.BoundedMemory``), so its bound must count
what Python really holds: each message's text as the ``str`` it is (one, two or four bytes a
character, plus the object's header), its name and ids, the node object and its field
dictionary, its metadata; and each request's own parts (the token counts, the digests, the
answer's ids). Text of one request shared with another (a follow-up's request holds the very
message objects of the one before) is counted once by the memory, not here: ``node_bytes``
sizes one message, ``own_bytes`` what a request holds besides its messages.

Sizes come from ``sys.getsizeof`` over the objects reached, each counted once: never below what
``tracemalloc`` sees the same objects allocate, and at most about a fifth above it (a short
string many nodes share, a role or a metadata key, is counted in each: a test holds both).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from conversation.graph import MessageNode
from conversation.memory.sent import SentPrompt

_SINGLETONS = (type(None), bool)
"""Values Python keeps once: not the request's to count."""


def node_bytes(node: MessageNode) -> int:
    """The bytes one message holds: the node and everything it reaches."""
    return _deep_size(node, set())


def own_bytes(sent: SentPrompt) -> int:
    """The bytes a request holds besides its messages (and its answer's message)."""
    seen = {id(node) for node in sent.nodes}
    if sent.answer is not None:
        seen.add(id(sent.answer))
    return _deep_size(sent, seen)


def messages_of(sent: SentPrompt) -> Iterable[MessageNode]:
    """The messages a request holds: what it sent, and the answer."""
    yield from sent.nodes
    if sent.answer is not None:
        yield sent.answer


def _deep_size(value: Any, seen: set[int]) -> int:
    """``value`` and what it reaches, each object once (``seen``: those counted already)."""
    if id(value) in seen or isinstance(value, _SINGLETONS):
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, str | bytes):
        return size
    if isinstance(value, BaseModel):
        # The field dict and set, not their keys: field names are one string for all nodes.
        fields, named = value.__dict__, value.__pydantic_fields_set__
        seen.update((id(fields), id(named)))
        size += sys.getsizeof(fields) + sys.getsizeof(named)
        parts: Iterable[Any] = (
            *fields.values(),
            value.__pydantic_extra__,
            value.__pydantic_private__,
        )
    elif isinstance(value, Mapping):
        parts = (*value.keys(), *value.values())
        # A mapping type keeping its data in a slot (the nodes' FrozenMap): the dict itself.
        slots = getattr(type(value), "__slots__", ())
        parts = (*parts, *(getattr(value, slot, None) for slot in slots))
    elif isinstance(value, tuple | list | set | frozenset):
        parts = value
    else:
        parts = (getattr(value, "__dict__", None),)
    return size + sum(_deep_size(part, seen) for part in parts if part is not None)
