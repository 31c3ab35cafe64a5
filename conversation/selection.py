"""The builder's result: which messages make up a context, and why each one is there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from conversation.reader import WorkEntry
from conversation.source import MessageLike

ReasonKind = Literal[
    "linear",  # one of the min_linear most recent messages
    "reference",  # the message ``via`` replies to it
    "mention",  # ``via`` mentions its author, and it is that author's latest message
    "author",  # the same author's previous message, close in time to ``via``
    "temporal",  # a neighbour of ``via`` in the channel, closer than the time threshold
    "reply",  # it replies to ``via`` (the discussion that followed ``via``)
]


class Reason(BaseModel):
    """Why a message was selected, and through which message (None for linear history)."""

    model_config = ConfigDict(frozen=True)

    kind: ReasonKind
    via: int | None = None

    def describe(self) -> str:
        return self.kind if self.via is None else f"{self.kind} via {self.via}"


@dataclass
class ContextSelection:
    """What the builder chose for one trigger. Messages are the raw source objects."""

    trigger: MessageLike
    messages: list[MessageLike]  # chronological, trigger excluded
    reasons: dict[int, list[Reason]]
    rest_calls: int = 0
    work_log: list[WorkEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what could not be read, for the user

    @property
    def ids(self) -> list[int]:
        return [message.id for message in self.messages]

    def report(self) -> SelectionReport:
        return SelectionReport(
            trigger=str(self.trigger.id),
            context=[str(message_id) for message_id in self.ids],
            reasons={
                str(message_id): [reason.describe() for reason in self.reasons[message_id]]
                for message_id in self.ids
            },
            rest_calls=self.rest_calls,
            problems=self.problems,
        )


class SelectionReport(BaseModel):
    """The JSON line ``python -m bot contexts`` prints for one trigger."""

    trigger: str
    context: list[str]
    reasons: dict[str, list[str]]
    rest_calls: int
    problems: list[str] = []
