"""Data crossing the storage boundary: what the bot records, and what explanations give back.

The bot builds an :class:`InteractionRecord` after each answer (or failure) and hands it to the
store; everything is validated here so that a bad record is refused whole, before any row is
written, instead of leaving a half-recorded interaction behind.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from conversation.common import clean_json

Outcome = Literal["success", "failure", "partial"]
VersionState = Literal["active", "superseded", "invalidated"]

REMOVED = "[removed at the user's request]"
_STRICT_JSON = json.JSONEncoder(allow_nan=False)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: Any) -> Any:
        """Text either database can hold: a NUL in a server's error message would make
        PostgreSQL refuse the whole record (messages and answers are cleaned where they enter)."""
        return clean_json(data) if isinstance(data, dict) else data


class ContextEntry(_Frozen):
    """Where one request message came from and why it was chosen (None fields for the prompt)."""

    message_id: int | None = None
    author_id: int | None = None
    name: str | None = None
    reasons: list[str] = Field(default_factory=list)
    tokens: int | None = Field(None, description="Its share of the prompt's token budget.")
    named: dict[int, str] = Field(
        default_factory=dict, description="People the text names (id -> name as shown)."
    )
    covers: list[int] = Field(
        default_factory=list,
        description="A summary's: the Discord messages it stands for (a deletion drops it).",
    )


class WorkLogEntry(_Frozen):
    """One thing done to answer: a history page fetched, a reference followed, a retry..."""

    action: str
    detail: str = ""
    status: Literal["success", "failure"] = "success"
    count: int | None = None


class ArticleEntry(_Frozen):
    """A linked page and what became of it (extracted, cached, refused, failed) and why."""

    url: str
    status: str
    reason: str | None = None


class InteractionHeader(_Frozen):
    """What every view of an interaction starts with: where and by whom it was asked, when, which
    model answered with which parameters, what it used and how it ended (the interactions row's
    own columns, which ``reads.header_fields`` decodes for each view)."""

    guild_id: int | None = None
    channel_id: int
    trigger_message_id: int
    trigger_author_id: int
    started_at: AwareDatetime
    ended_at: AwareDatetime
    model: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    latency_seconds: float | None = None
    outcome: Outcome
    error: str | None = None


class InteractionRecord(InteractionHeader):
    """One answer: its trigger, exactly what the model was sent, what came back, what was done.

    ``context`` is aligned with ``request_messages`` (same length) so each sent message keeps
    its Discord origin and selection reasons; use ``None`` for messages without one (the system
    prompt).
    """

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    request_messages: list[dict[str, Any]]
    context: list[ContextEntry | None]
    answer: str = ""
    answer_message_ids: list[int] = Field(default_factory=list)
    work_log: list[WorkLogEntry] = Field(default_factory=list)
    articles: list[ArticleEntry] = Field(default_factory=list)
    people: dict[int, list[str]] = Field(
        default_factory=dict,
        description="Every name each person in the context goes by (nickname, global name, "
        "username), so that forgetting them finds the names they were not shown under.",
    )
    continues: int | None = Field(
        None, description="The trigger of the earlier request this one starts with."
    )
    cut_at: int | None = Field(
        None,
        description="The trigger of the request at which its conversation was last cut (None: "
        "not since it was built afresh; in a row of before the column: see the work log).",
    )

    @field_validator("usage", mode="before")
    @classmethod
    def _token_counts(cls, value: Any) -> Any:
        """Servers add nested details (``prompt_tokens_details``...): keep the counts only."""
        if isinstance(value, dict):
            return {
                k: v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)
            }
        return value

    @model_validator(mode="after")
    def _aligned(self) -> InteractionRecord:
        if len(self.context) != len(self.request_messages):
            raise ValueError(
                f"context has {len(self.context)} entries but request_messages has "
                f"{len(self.request_messages)}; they must be aligned (None for the system prompt)"
            )
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        orphan = orphan_tool_result(self.request_messages)
        if orphan is not None:
            raise ValueError(
                f"request_messages[{orphan}] is a tool result without its call before it; "
                "a result is kept only with the call it answers"
            )
        # Refuse what the store could not write, here, where the caller can still see why.
        for label, value in [("parameters", self.parameters)] + [
            (f"request_messages[{i}]", m) for i, m in enumerate(self.request_messages)
        ]:
            try:
                _STRICT_JSON.encode(value)
            except (TypeError, ValueError) as error:
                raise ValueError(f"{label} is not storable as JSON: {error}") from error
        return self


def orphan_tool_result(messages: list[dict[str, Any]]) -> int | None:
    """The position of the first ``tool`` message whose call is not in an assistant turn
    before it, or None: whatever is cut, dropped or redacted, a tool result never stands
    without the call it answers (nor a call it does not answer)."""
    called: set[Any] = set()
    for position, message in enumerate(messages):
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict):
                    called.add(call.get("id"))
        elif message.get("role") == "tool" and message.get("tool_call_id") not in called:
            return position
    return None


class MessageVersion(_Frozen):
    """One known version of a Discord message; version 1 is how the bot first saw it."""

    message_id: int
    version: int
    channel_id: int | None
    author_id: int | None
    content: str | None
    state: VersionState
    superseded_by: int | None
    edited_at: datetime | None
    recorded_at: datetime


class ExplainedMessage(_Frozen):
    """A message the model was sent, with why it was chosen and what became of it since.

    ``state``: ``superseded`` if edited after the answer started, ``invalidated`` if deleted,
    ``active`` otherwise; None when the message has no Discord id (the system prompt).
    """

    position: int
    role: str
    message_id: int | None
    author_id: int | None
    name: str | None
    reasons: list[str]
    excerpt: str
    state: VersionState | None = None
    tokens: int | None = None


class Explanation(InteractionHeader):
    """Why an answer was what it was: the trigger, the context and reasons, what was done."""

    interaction_id: str
    context: list[ExplainedMessage]
    articles: list[ArticleEntry]
    answer_message_ids: list[int]
    work_log: list[WorkLogEntry]
    work_log_summary: list[str]
    removed: bool = False


class InteractionSummary(InteractionHeader):
    """One line of a list of interactions: enough to pick one and ask for its full record."""

    seq: int
    interaction_id: str
    message_count: int
    answer_excerpt: str
    removed: bool = False


class PruneResult(_Frozen):
    interactions: int
    nodes: int
    versions: int


class ForgetResult(_Frozen):
    """What forget_user changed (counts), so the operator sees it did something."""

    context_messages: int
    versions: int
    interactions_emptied: int
    nodes_removed: int
