"""The rules build (``learned_relevance = false``): the tik/tok walk, by who takes part.

It starts from the ``min_linear`` most recent messages, then alternates two steps until
``max_total`` messages are selected or neither step finds anything new:

* TIK follows every unexplored reply reference one level, whatever its age, and every mention
  to the mentioned person's latest message (a message that names someone usually answers them).
* TOK explores the temporal neighbours of the newest additions, before and after them but never
  past the trigger. A neighbour is linked when it is closer in time than the threshold; a longer
  silence seals that direction.

Beyond the original tik/tok design, TOK only links neighbours written by people taking part in the
conversation (the trigger's author, whoever it mentions or replies to, and so on as links are
added). In a busy channel several conversations interleave, and the message right before another
is as likely to belong to a different conversation as to the same one; the people speaking are
the signal that tells them apart. In a quiet channel everyone nearby takes part, so nothing is
lost there. On the IRC disentanglement logs this lifts F1 well above the original design read
literally (see ``lab/context_quality.py`` and docs/benchmarks.md for the figures), though below
the learned score (``scored_build``), which took its place as the default.

``max_total`` is a hard cap. Within a step, candidates are taken in a fixed order (reason
priority, then the newest first), so the same input always gives the same context; the state of
a build (what is selected, why, who takes part) is ``conversation.selection.exploration``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conversation.selection.build_steps import BuildSteps, Step
from conversation.selection.exploration import Candidate, Exploration
from conversation.selection.references import follow_reference, reference_before
from conversation.selection.result import ContextSelection, Reason, ReasonKind
from conversation.sources.source import MessageLike, created_ms, is_conversational, reference_id


@dataclass
class RulesBuild(BuildSteps):
    """One build by the participation rules."""

    state: Exploration = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.state = Exploration(trigger=self.trigger, max_total=self.max_total)
        self.state.join(self.trigger)

    async def run(self) -> ContextSelection:
        """The recent messages, then TIK and TOK in turn from the newest additions."""
        state = self.state
        frontier = await self._take_recent()
        while not state.full:
            added_by_tik = state.take(await self._tik(frontier))
            if state.full:
                break
            added_by_tok = state.take(await self._tok(frontier))
            if not added_by_tik and not added_by_tok:
                break
            frontier = sorted(added_by_tik + added_by_tok, key=lambda m: -m.id)
        return self.selection(state.selected.values(), state.reasons, state.problems)

    async def _take_recent(self) -> list[MessageLike]:
        """The recent messages in, and the first frontier: the trigger and those of them that
        take part, this side of a silence."""
        state = self.state
        recent = await self.recent()
        state.take([Candidate(m, Reason(kind="linear")) for m in recent])
        # A small group talking together is one conversation even without mentions or replies.
        speakers = {
            m.author.id
            for m in recent
            if created_ms(self.trigger) - created_ms(m) <= self.threshold_ms
        }
        if len(speakers | {self.trigger.author.id}) <= self.settings.small_group_size:
            state.participants.update(speakers)
        # Linear messages are context but only seed exploration when they take part: in a busy
        # channel they mostly belong to other conversations. Those past a silence seed nothing:
        # they are in because they are recent, their conversation is over.
        unbroken = self.unbroken(recent)
        return [
            self.trigger,
            *(m for m in recent if m.id in unbroken and state.involves_participant(m)),
        ]

    # ------------------------------------------------------------------ TIK

    async def _tik(self, frontier: list[MessageLike]) -> list[Candidate]:
        candidates: list[Candidate] = []
        state = self.state
        for message in frontier:
            parent_id = reference_before(message, self.trigger)
            if parent_id is not None:
                reason = Reason(kind="reference", via=message.id)
                if state.knows(parent_id):
                    state.note(parent_id, reason)
                else:
                    parent = await follow_reference(message, parent_id, self.reader, state.problems)
                    if parent is not None:
                        candidates.append(Candidate(parent, reason))
            # Only the trigger's mentions are followed: later in the walk, mentions already
            # steer the temporal step through the participants, and following them again
            # pulled in other conversations (lower F1 on the IRC logs).
            if self.settings.follow_mentions and message is self.trigger:
                for user in message.mentions:
                    answered = await self._latest_by(user.id)
                    if answered is not None:
                        reason = Reason(kind="mention", via=message.id)
                        candidates.append(Candidate(answered, reason))
        return candidates

    async def _latest_by(self, author_id: int) -> MessageLike | None:
        """The mentioned person's latest message before the trigger, within the threshold."""
        current = self.trigger
        for _ in range(self.settings.mention_scan_limit):
            previous = await self.reader.previous(current)
            if (
                previous is None
                or created_ms(self.trigger) - created_ms(previous) > self.threshold_ms
            ):
                return None
            if previous.author.id == author_id:
                return previous
            current = previous
        return None

    # ------------------------------------------------------------------ TOK

    async def _tok(self, frontier: list[MessageLike]) -> list[Candidate]:
        candidates: list[Candidate] = []
        here = self.reader.source.channel_id
        steps: dict[str, Step] = {"before": self.reader.previous, "after": self.reader.next}
        for message in frontier:
            if getattr(getattr(message, "channel", None), "id", here) != here:
                continue  # a reply's parent in another channel: its neighbours are not ours
            for direction, step in steps.items():
                if direction == "after" and message is self.trigger:
                    continue  # never past the trigger
                neighbour = await self._neighbour(message, step)
                if neighbour is None:
                    continue
                same_author = neighbour.author.id == message.author.id
                kind: ReasonKind = "author" if same_author else "temporal"
                if direction == "after" and reference_id(neighbour) == message.id:
                    kind = "reply"
                candidates.append(Candidate(neighbour, Reason(kind=kind, via=message.id)))
        return candidates

    async def _neighbour(self, message: MessageLike, step: Step) -> MessageLike | None:
        """The nearest message in ``step``'s direction that takes part, or None once sealed.

        The walk skips messages of other conversations (authors who do not take part) and
        stops at the first one past the threshold: that silence seals the direction.
        """
        current = message
        for _ in range(self.settings.neighbour_scan_limit):
            found = await self.step_from(current, step)
            if found is None:
                return None
            if abs(created_ms(found) - created_ms(message)) > self.threshold_ms:
                return None
            current = found
            if not is_conversational(found):
                continue
            if not self.settings.participants_only or self.state.involves_participant(found):
                return None if self.state.knows(found.id) else found
        return None
