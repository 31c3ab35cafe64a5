"""The scored build (the default): a walk proposes candidates, the learned score decides.

The candidates are the temporal neighbourhood before the trigger, walked back to the first
silence (at most ``candidate_window`` messages, the history page the recent messages cost anyway,
or ``cached_candidate_window`` when the cache holds them), the ``min_linear`` recent messages,
and the trigger's reply chain whatever its age, with what costs nothing around them. A score
learned from public IRC logs (``conversation.selection.relevance``) weighs each against the
trigger: the recent messages are always in, the message the trigger replies to too, the best few
whatever the threshold, then the rest that reach it, highest first, until ``max_total``; the
message the trigger likely answers, when the score left it out, is ranked apart. Under the
rules (``rules_build``) every message a step reaches counts the same; here each has its weight.

``ScoredBuild.run`` tells the steps in the order they run; the candidates and the reasons told
from their scores are in ``conversation.selection.scoring``, how far back the walk reads in
``conversation.selection.walk``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from conversation.selection.addressing import written_addressee
from conversation.selection.build_steps import BuildSteps
from conversation.selection.clues import Clue, ClueCache
from conversation.selection.length import ConversationLengths
from conversation.selection.references import follow_reference, free_parent, reference_before
from conversation.selection.relevance import RelevanceModel
from conversation.selection.result import ContextSelection, Reason
from conversation.selection.scoring import CandidatePool, Scoring, show_replies_among
from conversation.selection.walk import Walk, reaches_edge, with_older
from conversation.sources.reader import WorkEntry
from conversation.sources.source import MessageLike, created_ms, is_conversational, reference_id

# Neighbours read on each side of a replied-to message the walk did not reach.
PARENT_NEIGHBOURS = 10
# The share of candidates whose meaning may be unknown for the score that reads meaning to
# decide (messages of no text have none).
MISSING_MEANINGS = 0.1


def _paid(entry: WorkEntry) -> bool:
    """A work-log entry that cost a REST call (a build round run again keeps only these)."""
    return entry.action in ("history_page", "message_fetched")


@dataclass
class ScoredBuild(BuildSteps):
    """One build by the learned score."""

    model: RelevanceModel
    threshold: float  # the score a candidate needs (``ContextBuilder.threshold_of``)
    clues: ClueCache
    # The score that reads meaning (``ContextBuilder.meaning_model``), None: the plain one only,
    # and the score a candidate needs by it.
    meaning_model: RelevanceModel | None = None
    meaning_threshold: float = 0.0
    # The channel's conversation lengths, told what this build's score asked for.
    lengths: ConversationLengths = field(default_factory=ConversationLengths)
    # The room when the plain score decides, where the cap grew only for the score that reads
    # meaning (``ContextBuilder._cap``); None: the same room whichever score decides.
    plain_room: int | None = None

    def room_for(self, scored: Scoring) -> int:
        """The room of this build under the score that decided it."""
        if self.plain_room is None or scored.model is not self.model:
            return self.max_total
        return min(self.max_total, self.plain_room)

    async def run(self) -> ContextSelection:
        """Steps 1 to 4 gather the candidates, 5 scores them, 6 chooses; 6b reads one more
        history page when the conversation runs at the edge of what was read; 7 tells the
        replies among what entered."""
        recent = await self.recent()
        fetchable = self.settings.candidate_window
        last_round: tuple[dict[int, list[Reason]], CandidatePool] | None = None
        while True:
            problems: list[str] = []
            log_start = len(self.reader.log)
            walk, candidates = await self._gather(recent, fetchable, problems)
            scored = self._score(candidates, keep={m.id for m in recent})
            reasons = self._choose(recent, scored)
            if last_round is not None:  # the new page adds to what the last round chose
                kept, read_before = last_round
                room = self.room_for(scored)
                reasons = with_older(kept, read_before.by_id, scored, reasons, room)
                for message in read_before.messages:
                    candidates.add(message)
            if not (walk.stopped_at_edge and reaches_edge(candidates.walked, reasons)):
                break
            # Step 6b: the conversation goes on past what was read. One more page (as far as
            # ``cached_candidate_window``), then the build again from the cache, candidates in
            # the order a bot that held them all would have, and what the new page adds to this
            # round's choice (``with_older``); the work log keeps what this round paid for, the
            # next one repeats the rest.
            last_round = (reasons, candidates)
            fetchable = walk.step + 1
            self.reader.log[log_start:] = [e for e in self.reader.log[log_start:] if _paid(e)]
        self.lengths.record(self.reader.source.channel_id, scored.asked(recent, self.trigger))
        show_replies_among(reasons, candidates.by_id)
        selection = self.selection((candidates.by_id[i] for i in reasons), reasons, problems)
        selection.threshold = scored.threshold
        return selection

    async def _gather(
        self, recent: list[MessageLike], fetchable: int, problems: list[str]
    ) -> tuple[Walk, CandidatePool]:
        """Steps 1 to 4, in the order a candidate's rank (one of its features) needs."""
        candidates = CandidatePool()
        walk = Walk(current=self.trigger, newer_ms=created_ms(self.trigger))
        await self._walk_back_to_silence(walk, candidates, fetchable)
        # The recent messages past a silence: scored, but nothing is explored from them.
        sealed_off = {m.id for m in recent} - self.unbroken(recent)
        candidates.add_recent(recent, sealed_off=sealed_off)
        await self._follow_reply_chain(candidates, problems)
        await self._add_parent_neighbourhood(candidates)
        self._add_free_parents(candidates)
        return walk, candidates

    async def _walk_back_to_silence(
        self, walk: Walk, candidates: CandidatePool, fetchable: int
    ) -> None:
        """Step 1: the history before the trigger, newest first, up to the first silence.

        A silence seals the history whatever it holds, the gap right before the trigger too:
        an old, finished conversation is no candidate. The recent messages are read apart and
        are in whatever their age. Past ``fetchable`` messages, the walk goes on to
        ``cached_candidate_window`` through what the cache holds only: a long conversation in a
        busy channel reaches further back than one history page, but another page costs a
        REST call, paid only when the conversation reaches the edge of what was read (step 6b).
        ``walk`` keeps where the walk stopped, so that it can go on from there.
        """
        reader, threshold = self.reader, self.threshold_ms
        reach = self.settings.walk_reach
        walk.stopped_at_edge = False
        while walk.step < reach:
            # What the cache holds unbroken comes at once; past it, one step at a time, which
            # may fetch a page within ``fetchable``.
            run = reader.held_before(walk.current, reach - walk.step)
            if not run:
                if walk.step >= fetchable:
                    walk.stopped_at_edge = True
                    return
                found = await reader.previous(walk.current)
                if found is None:
                    return
                run = [found]
            passed: list[MessageLike] = []
            for found in run:
                found_ms = created_ms(found)
                if walk.newer_ms - found_ms > threshold:
                    candidates.add_walked(passed)
                    walk.step = reach  # sealed: nothing older is a candidate
                    return
                walk.step += 1
                walk.current = found
                if is_conversational(found):
                    passed.append(found)
                    walk.newer_ms = found_ms
            candidates.add_walked(passed)

    async def _follow_reply_chain(self, candidates: CandidatePool, problems: list[str]) -> None:
        """Step 2: what the trigger replies to, and what that replies to, whatever its age."""
        chain = candidates.chain
        child = self.trigger
        while len(chain) < self.max_total:
            parent_id = reference_before(child, self.trigger)
            if parent_id is None or parent_id in chain:
                return
            parent = await follow_reference(child, parent_id, self.reader, problems)
            if parent is None:
                return
            chain[parent.id] = child.id
            candidates.add(parent)
            child = parent

    async def _add_parent_neighbourhood(self, candidates: CandidatePool) -> None:
        """Step 3: the replied-to message's own neighbourhood, when the walk did not reach it
        (a reply across a silence): the page read around it already holds these neighbours."""
        parent_id = reference_id(self.trigger)
        if parent_id not in candidates.chain or parent_id in candidates.walked:
            return
        for step in (self.reader.previous, self.reader.next):
            current = candidates.by_id[parent_id]
            for _ in range(PARENT_NEIGHBOURS):
                found = await self.step_from(current, step)
                if found is None:
                    break
                current = found
                if is_conversational(found):
                    candidates.add(found)

    def _add_free_parents(self, candidates: CandidatePool) -> None:
        """Step 4: what the candidates reply to, when it costs nothing (the payload carries it
        or the cache holds it): a thread starter's question in the parent channel, an old
        message someone answered just now."""
        for message in list(candidates.messages):
            parent_id = reference_before(message, self.trigger)
            if parent_id is None or parent_id in candidates.by_id:
                continue
            if message.id in candidates.sealed_off and message.id not in candidates.chain:
                continue  # what an old conversation answered is that conversation
            parent = free_parent(message, parent_id, self.reader)
            if parent is not None:
                candidates.add(parent)

    def _score(self, candidates: CandidatePool, keep: set[int]) -> Scoring:
        """Step 5: every candidate scored against the trigger and its reply thread (``keep``:
        those looked at twice whatever their first look, the recent ones, whose reasons are
        told)."""
        trigger_clue = self.clues.clue(self.trigger)
        clues = [self.clues.clue(m) for m in candidates.messages]
        model = scoring_model(self.model, self.meaning_model, trigger_clue, clues)
        threshold = self.threshold if model is self.model else self.meaning_threshold
        if threshold < model.second_look_floor:  # a threshold that low needs every score
            keep = {clue.id for clue in clues}
        results = model.score_threads(trigger_clue, clues, set(candidates.chain), keep)
        # As the score read it: a name the trigger writes as an address is a mention ("mention"
        # in the reasons, and the token budget keeps that person's message as it keeps one
        # the trigger mentions).
        named = written_addressee(trigger_clue, clues)
        if named is not None:
            trigger_clue = replace(trigger_clue, mentions=frozenset({named}))
        return Scoring(
            trigger=self.trigger,
            trigger_clue=trigger_clue,
            model=model,
            chain=candidates.chain,
            threshold=threshold,
            results={clue.id: result for clue, result in zip(clues, results, strict=True)},
            clues={clue.id: clue for clue in clues},
        )

    def _choose(self, recent: list[MessageLike], scored: Scoring) -> dict[int, list[Reason]]:
        """Step 6: what enters, and why: the recent messages, the message replied to, the best
        few whatever the threshold (unless plainly elsewhere), then the rest that reach it."""
        max_total = self.room_for(scored)
        reasons: dict[int, list[Reason]] = {}
        for message in recent:
            reasons[message.id] = [
                scored.reason(message.id, "linear")
                if message.id in scored.results
                else Reason(kind="linear")
            ]
            if message.id in scored.chain:
                reasons[message.id].append(Reason(kind="reference", via=scored.chain[message.id]))
        # The message the trigger replies to is in, like the recent ones: the asker named it.
        parent_id = reference_id(self.trigger)
        if parent_id in scored.results and parent_id not in reasons and len(reasons) < max_total:
            reasons[parent_id] = [scored.reason(parent_id)]
        entering = scored.model.entering(
            scored.ranked(),
            reasons,
            threshold=scored.threshold,
            room=max(0, max_total - len(reasons)),
            taken=1 if parent_id in scored.results else 0,  # it counts as one of the best few
        )
        for message_id in entering:
            reasons[message_id] = [scored.reason(message_id)]
        # The message the trigger likely answers, when the score left it out: ranked apart.
        answered = scored.model.likely_answered(
            ((i, result) for i, result in scored.results.items() if i not in reasons),
            room=max(0, max_total - len(reasons)),
        )
        for message_id in answered:
            reasons[message_id] = [scored.reason(message_id, answered=True)]
        return reasons


def scoring_model(
    plain: RelevanceModel, meaning: RelevanceModel | None, trigger: Clue, clues: list[Clue]
) -> RelevanceModel:
    """The score that reads meaning when the trigger's and nearly every candidate's are known
    (it was fitted with them all); the plain one otherwise: without the sentence model, or
    while a page read from Discord waits for its embeddings (nothing waits for them)."""
    if meaning is None or trigger.meaning is None:
        return plain
    missing = sum(1 for clue in clues if clue.meaning is None)
    return meaning if missing <= MISSING_MEANINGS * len(clues) else plain
