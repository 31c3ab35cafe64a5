"""The candidates of a scored build (the default) and the reasons told from their scores.

The walk gathers a ``CandidatePool`` (each message once, with how it was reached: walking back,
the reply chain, the recent messages); the relevance model scores it; ``Scoring`` ranks the scores
and, only for the messages that enter, works out why (their evidence walks every tree).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from conversation.selection.clues import Clue
from conversation.selection.relevance import RelevanceModel, Scored
from conversation.selection.result import Reason, ReasonKind
from conversation.sources.source import MessageLike, reference_id


@dataclass
class CandidatePool:
    """What the scored build may choose from, gathered step by step, each message once."""

    messages: list[MessageLike] = field(default_factory=list)
    by_id: dict[int, MessageLike] = field(default_factory=dict)
    walked: set[int] = field(default_factory=set)  # reached walking back from the trigger
    chain: dict[int, int] = field(default_factory=dict)  # parent id -> the message replying
    sealed_off: set[int] = field(default_factory=set)  # recent, but past a silence

    def add(self, message: MessageLike) -> None:
        if message.id not in self.by_id:
            self.messages.append(message)
            self.by_id[message.id] = message

    def add_walked(self, messages: list[MessageLike]) -> None:
        """Messages reached walking back from the trigger (a run of the cache at once)."""
        for message in messages:
            self.add(message)
            self.walked.add(message.id)

    def add_recent(self, recent: list[MessageLike], *, sealed_off: set[int]) -> None:
        """The recent messages are candidates too (scored like the rest, always in)."""
        for message in recent:
            self.add(message)
        self.sealed_off = sealed_off


# The evidence of a message in as what the trigger likely answers (``likely_answered``).
LIKELY_ANSWERED = "likely what the trigger answers"


@dataclass(frozen=True)
class Scoring:
    """Every candidate's score, and the reasons told from them for the messages that enter."""

    trigger: MessageLike
    trigger_clue: Clue
    model: RelevanceModel
    chain: dict[int, int]
    threshold: float
    results: dict[int, Scored]
    clues: dict[int, Clue]

    def ranked(self) -> Iterator[tuple[int, float]]:
        """Ids and scores, best first; on a tie, the newest first (pairs compared in C: a key
        function costs more than the rest of the choice)."""
        best_first = sorted(((result.score, i) for i, result in self.results.items()), reverse=True)
        return ((message_id, score) for score, message_id in best_first)

    def asked(self, recent: list[MessageLike], trigger: MessageLike) -> int:
        """How many messages this score would let in without a cap: the recent ones, the
        message replied to, and every other candidate over the threshold (what the channel's
        conversation asks for: ``conversation.selection.length``)."""
        fixed = {m.id for m in recent} | {reference_id(trigger)}
        over = sum(
            1
            for i, result in self.results.items()
            if i not in fixed and result.score >= self.threshold
        )
        return len(fixed & self.results.keys()) + over

    def reason(
        self, message_id: int, kind: ReasonKind | None = None, *, answered: bool = False
    ) -> Reason:
        """Why a candidate is in; its evidence is worked out only here (it walks every tree).
        ``answered``: in as what the trigger likely answers, which comes first."""
        result = self.results[message_id]
        evidence = self.model.evidence(result)
        if answered:
            evidence = (LIKELY_ANSWERED, *evidence[:2])
        return Reason(
            kind=kind or _kind(self.clues[message_id], self.trigger_clue, self.chain),
            via=None if kind == "linear" else self.chain.get(message_id, self.trigger.id),
            score=round(result.score, 3),
            evidence=evidence,
        )


def _kind(clue: Clue, trigger: Clue, chain: dict[int, int]) -> ReasonKind:
    """The structural link a scored message has to the trigger, for explanations."""
    if clue.id in chain:
        return "reference"
    if clue.author in trigger.mentions:
        return "mention"
    if clue.author == trigger.author:
        return "author"
    return "temporal"


def show_replies_among(reasons: dict[int, list[Reason]], by_id: dict[int, MessageLike]) -> None:
    """Step 7: the replies among the selected messages, so explanations show the threads."""
    for message_id in list(reasons):
        replied = reference_id(by_id[message_id])
        if replied in reasons and not any(
            r.kind == "reference" and r.via == message_id for r in reasons[replied]
        ):
            reasons[replied].append(Reason(kind="reference", via=message_id))
