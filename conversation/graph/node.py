"""One message of a conversation, frozen the moment it is created.

A ``MessageNode`` is what the model saw. The graph (``conversation.graph.message_graph``) keeps
every node it was ever given and only ever *adds* nodes, so a node must never change after creation,
not even deep inside: ``images`` and ``tool_calls`` are tuples and ``metadata`` is JSON frozen into
a ``FrozenMap`` (objects) and tuples (arrays). Whoever holds a node can rely on it staying what it
was when it was recorded, which is the whole point of on-policy training data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from conversation.common.text import clean_text

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


class MessageFormatError(ValueError):
    """A message (dict, provider payload) cannot become a ``MessageNode``; the text says why."""


# --- deeply immutable JSON for metadata -------------------------------------------------------


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable mapping for JSON objects inside a node.

    Unlike a persistent map, it has no methods that *return* a changed copy (``update``, ``set``),
    so code written for dicts fails loudly (``TypeError``/``AttributeError``) instead of changing
    a copy that nobody keeps, the very slip the original design's sketch made.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data = dict(data or {})
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def freeze_json(value: Any, path: str = "metadata") -> Any:
    """Return ``value`` as immutable JSON: objects become ``FrozenMap``, arrays tuples.

    Only JSON-able values are accepted (str keys; str, int, float, bool, None, lists, dicts), so
    that metadata survives storage and export unchanged and ``thaw_json`` gives back what came in
    (with tuples read back as lists, JSON having only one kind of array).
    """
    if value is None or type(value) in _SCALARS or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        frozen = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise MessageFormatError(f"{path}: keys must be strings, got {key!r}")
            # A scalar is taken as it is: its path is written only on the way to a container.
            frozen[key] = item if type(item) in _SCALARS else freeze_json(item, f"{path}.{key}")
        return FrozenMap(frozen)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return tuple(
            item if type(item) in _SCALARS else freeze_json(item, f"{path}[{i}]")
            for i, item in enumerate(value)
        )
    raise MessageFormatError(f"{path}: {type(value).__name__} is not a JSON value")


_SCALARS = frozenset({str, int, float, bool, type(None)})  # exactly these types, no subclass


def thaw_json(value: Any) -> Any:
    """Inverse of ``freeze_json``: plain (mutable, detached) dicts and lists."""
    if isinstance(value, FrozenMap):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw_json(item) for item in value]
    return value


_EMPTY_METADATA = FrozenMap()


def _validate_metadata(value: Any) -> FrozenMap:
    if value is None:
        return _EMPTY_METADATA
    if not isinstance(value, Mapping):
        raise MessageFormatError(f"metadata must be a mapping, got {type(value).__name__}")
    return freeze_json(value)


def _snowflake_to_str(value: Any) -> Any:
    # nextcord hands out snowflakes as int; the node keeps them as text so JSON never rounds them.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Metadata = Annotated[FrozenMap, PlainValidator(_validate_metadata), PlainSerializer(thaw_json)]
Snowflake = Annotated[str | None, BeforeValidator(_snowflake_to_str)]


class ToolCall(BaseModel):
    """A function call an assistant turn asked for (OpenAI ``tool_calls`` / Anthropic ``tool_use``).

    ``arguments`` is the JSON text of the call's arguments, kept as text because that is what the
    model produced; providers that want an object get it parsed at translation time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: str = "{}"


class MessageNode(BaseModel):
    """An immutable chat message: who said what, when, where it came from and why it was chosen.

    ``name`` is the speaker's display name as free text (providers that restrict names get a
    sanitized form at translation time); ``user_id`` and ``message_id`` are Discord snowflakes as
    text; ``metadata`` holds why the message was selected and similar notes, as immutable JSON
    (read it like a dict; ``to_dict()`` returns a plain copy).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str
    name: str | None = None
    user_id: Snowflake = None
    message_id: Snowflake = None
    created_at: AwareDatetime | None = None
    images: tuple[str, ...] = ()
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: Metadata = _EMPTY_METADATA

    @field_validator("content", "name")
    @classmethod
    def _encodable(cls, value: str | None) -> str | None:
        # Whatever a node holds is sent, stored and printed: it must be valid Unicode text.
        return None if value is None else clean_text(value)

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    @field_validator("name")
    @classmethod
    def _name_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name must be a non-blank string or omitted")
        return value

    @model_validator(mode="after")
    def _role_fields(self) -> MessageNode:
        # Providers reject these combinations; refusing them here keeps bad input at the door
        # instead of failing later, far from where it came in.
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a tool message needs tool_call_id (the call it answers)")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError(f"tool_call_id is only for tool messages, not {self.role}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"tool_calls are only for assistant messages, not {self.role}")
        if self.images and self.role != "user":
            raise ValueError(f"images are only for user messages, not {self.role}")
        return self

    # --- dict interface ---------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MessageNode:
        """Build a node from a plain message dict, refusing keys it does not know by name."""
        if not isinstance(data, Mapping):
            raise MessageFormatError(f"a message must be a mapping, got {type(data).__name__}")
        unknown = [key for key in data if key not in FIELDS]
        if unknown:
            raise MessageFormatError(
                f"unknown message field(s) {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(FIELDS)}"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            shown = repr(dict(data))
            shown = shown if len(shown) <= 200 else shown[:200] + "...}"
            raise MessageFormatError(f"invalid message {shown}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """A plain, detached dict of the fields that are set (defaults left out).

        Leaving defaults out makes ``from_dict(d).to_dict() == d`` for any dict ``d`` written
        without default values, which is what lets the graph stand in for a list of dicts.
        """
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        for key in _OPTIONAL:
            if not self.is_set(key):
                continue
            value = getattr(self, key)
            if key == "images":
                value = list(value)
            elif key == "tool_calls":
                value = [call.model_dump() for call in value]
            elif key == "metadata":
                value = thaw_json(value)
            out[key] = value
        return out

    def replace(self, **changes: Any) -> MessageNode:
        """A new, validated node with ``changes`` applied (this one is left as it is)."""
        return MessageNode.from_dict({**self.to_dict(), **changes})

    def is_set(self, key: str) -> bool:
        """Whether ``key`` differs from its default (the keys ``to_dict`` would include)."""
        if key in ("role", "content"):
            return True
        value = getattr(self, key)
        return not (value is None or value == () or (key == "metadata" and not value))


FIELDS: tuple[str, ...] = tuple(MessageNode.model_fields)
_OPTIONAL: tuple[str, ...] = tuple(key for key in FIELDS if key not in ("role", "content"))
