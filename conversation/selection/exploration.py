"""The state of a build by the participation rules (``learned_relevance = false``).

The rules' walk takes candidates in a fixed order (the trigger's own links first, then by reason,
then the newest first) until ``max_total``, so the same input always gives the same context;
``Exploration`` keeps what is selected, why, and who takes part in the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conversation.selection.result import Reason, ReasonKind
from conversation.sources.source import MessageLike

# Lower sorts first when a step has more candidates than room left.
_PRIORITY: dict[ReasonKind, int] = {
    "link": 0,
    "reference": 0,
    "mention": 1,
    "reply": 2,
    "author": 3,
    "temporal": 4,
    "linear": 5,
}


@dataclass(frozen=True)
class Candidate:
    message: MessageLike
    reason: Reason

    def order(self, trigger_id: int) -> tuple[bool, int, int]:
        """The trigger's own links first, then by reason, then the newest first."""
        return (self.reason.via != trigger_id, _PRIORITY[self.reason.kind], -self.message.id)


@dataclass
class Exploration:
    """The state of one build: what is selected, who takes part, what is left to explore."""

    trigger: MessageLike
    max_total: int
    selected: dict[int, MessageLike] = field(default_factory=dict)
    reasons: dict[int, list[Reason]] = field(default_factory=dict)
    participants: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return len(self.selected) >= self.max_total

    def knows(self, message_id: int) -> bool:
        return message_id == self.trigger.id or message_id in self.selected

    def note(self, message_id: int, reason: Reason) -> None:
        if message_id in self.reasons and reason not in self.reasons[message_id]:
            self.reasons[message_id].append(reason)

    def take(self, candidates: list[Candidate]) -> list[MessageLike]:
        """Add candidates in their fixed order until the cap; returns what was new."""
        added: list[MessageLike] = []
        for candidate in sorted(candidates, key=lambda c: c.order(self.trigger.id)):
            message = candidate.message
            if self.knows(message.id):
                self.note(message.id, candidate.reason)
                continue
            if self.full:
                break
            self.selected[message.id] = message
            self.reasons[message.id] = [candidate.reason]
            added.append(message)
            if candidate.reason.kind in ("reference", "mention", "reply"):
                self.join(message)
        return added

    def join(self, message: MessageLike) -> None:
        """Its author and whoever it mentions now take part in the conversation."""
        self.participants.add(message.author.id)
        self.participants.update(user.id for user in message.mentions)

    def involves_participant(self, message: MessageLike) -> bool:
        """Whether a message belongs to this conversation, judged by who speaks to whom.

        A participant's message counts unless it is addressed only to outsiders (then it is
        that person's other conversation); an outsider's message counts when it addresses a
        participant (someone joining in).
        """
        addressed = [user.id for user in message.mentions]
        if message.author.id in self.participants:
            return not addressed or any(user in self.participants for user in addressed)
        return any(user in self.participants for user in addressed)
