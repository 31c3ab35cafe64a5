"""The builder's result: which messages make up a context, and why each one is there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from conversation.sources.reader import WorkEntry
from conversation.sources.source import MessageLike

ReasonKind = Literal[
    "linear",  # one of the min_linear most recent messages
    "reference",  # the message ``via`` replies to it
    "mention",  # ``via`` mentions its author, and it is that author's latest message
    "author",  # the same author's previous message, close in time to ``via``
    "temporal",  # a neighbour of ``via`` in the channel, closer than the time threshold
    "reply",  # it replies to ``via`` (the discussion that followed ``via``)
    "link",  # ``via`` links to it (a Discord message link)
]


class Reason(BaseModel):
    """Why a message was selected, and through which message (None for linear history).

    With the learned score, ``score`` is the probability that the message belongs to the
    trigger's conversation and ``evidence`` names the features that raised it most.
    """

    model_config = ConfigDict(frozen=True)

    kind: ReasonKind
    via: int | None = None
    score: float | None = None
    evidence: tuple[str, ...] = ()

    def describe(self) -> str:
        text = self.kind if self.via is None else f"{self.kind} via {self.via}"
        return text + self.describe_score()

    def describe_score(self) -> str:
        """`` (score 0.83: asker's own message, ...)``, or nothing without a score."""
        if self.score is None:
            return ""
        evidence = f": {', '.join(self.evidence)}" if self.evidence else ""
        return f" (score {self.score:.2f}{evidence})"


@dataclass
class ContextSelection:
    """What the builder chose for one trigger. Messages are the raw source objects."""

    trigger: MessageLike
    messages: list[MessageLike]  # chronological, trigger excluded
    reasons: dict[int, list[Reason]]
    rest_calls: int = 0
    work_log: list[WorkEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what could not be read, for the user
    # The score a message needed to be in the conversation, as the build that chose decided
    # (the score that reads meaning has its own); None: the builder's, or no score.
    threshold: float | None = None

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
            scores={
                str(message_id): ScoreReport(score=reason.score, evidence=list(reason.evidence))
                for message_id in self.ids
                for reason in self.reasons[message_id][:1]
                if reason.score is not None
            },
        )


class ScoreReport(BaseModel):
    """A message's learned relevance score and the features that raised it most."""

    score: float
    evidence: list[str]


class SelectionReport(BaseModel):
    """The JSON line ``python -m bot contexts`` prints for one trigger."""

    trigger: str
    context: list[str]
    reasons: dict[str, list[str]]
    rest_calls: int
    problems: list[str] = []
    scores: dict[str, ScoreReport] = {}
