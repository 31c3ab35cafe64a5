"""The tik/tok context builder: which earlier messages a trigger is about.

It starts from the ``min_linear`` most recent messages, then alternates two steps until
``max_total`` messages are selected or neither step finds anything new:

* TIK follows every unexplored reply reference one level, whatever its age, and every mention
  to the mentioned person's latest message (a message that names someone usually answers them).
* TOK explores the temporal neighbours of the newest additions, before and after them but never
  past the trigger. A neighbour is linked when it is closer in time than the threshold; a longer
  silence seals that direction.

The ``min_linear`` recent messages are in whatever their age, but a silence between them and the
trigger seals too: nothing is explored from them (neither their neighbours nor, under the learned
score, what they reply to), so a question after days of quiet does not bring the old thread.
References from the trigger's side of the silence, and Discord message links, are still followed
whatever their age.

Beyond the original tik/tok design, TOK only links neighbours written by people taking part in the
conversation (the trigger's author, whoever it mentions or replies to, and so on as links are
added). In a busy channel several conversations interleave, and the message right before another
is as likely to belong to a different conversation as to the same one; the people speaking are
the signal that tells them apart. In a quiet channel everyone nearby takes part, so nothing is
lost there. On the IRC disentanglement logs this lifts F1 well above the original design read
literally (see ``lab/context_quality.py`` and docs/benchmarks.md for the figures).

``max_total`` is a hard cap. Within a step, candidates are taken in a fixed order (reason
priority, then the newest first), so the same input always gives the same context.

With ``learned_relevance`` (the default) those participation rules no longer decide: the walk
proposes candidates and a score learned from public IRC logs (``conversation.selection.relevance``)
decides which enter and in what order, so every candidate no longer counts the same. Links to
Discord messages in the trigger come in first, like references, in both modes.

The state of a build by the rules is in ``conversation.selection.exploration``, the candidates and
reasons of a scored build in ``conversation.selection.scoring``.
"""

from __future__ import annotations

from dataclasses import replace

from conversation.common.settings import ContextSettings
from conversation.selection.addressing import written_addressee
from conversation.selection.clues import ClueCache
from conversation.selection.exploration import Candidate, Exploration
from conversation.selection.message_links import (
    LinkOutcome,
    LinkResolver,
    MessageLink,
    guild_id_of,
    message_links,
)
from conversation.selection.relevance import RelevanceModel
from conversation.selection.result import ContextSelection, Reason, ReasonKind
from conversation.selection.scoring import CandidatePool, Scoring, show_replies_among
from conversation.selection.walk import Walk, reaches_edge, with_older
from conversation.selection.weights import load_model
from conversation.sources.cache import UNKNOWN
from conversation.sources.reader import ChannelReader, WorkEntry
from conversation.sources.source import MessageLike, created_ms, is_conversational, reference_id

# Neighbours read on each side of a replied-to message the walk did not reach.
PARENT_NEIGHBOURS = 10


def _paid(entry: WorkEntry) -> bool:
    """A work-log entry that cost a REST call (a build round run again keeps only these)."""
    return entry.action in ("history_page", "message_fetched")


def _restricted(problems: list[str], trigger: MessageLike, note: str) -> list[str]:
    """The problems of a context its asker may not see the history of: why it is short first,
    and a message beyond the trigger's own reply not called gone (it is only not theirs)."""
    own = f"message {trigger.id} replies to "
    return [note] + [
        problem
        if problem.startswith(own) or not problem.endswith(", which is gone")
        else problem.removesuffix(", which is gone") + ", which the asker may not read"
        for problem in problems
    ]


class ContextBuilder:
    """Builds the context of a trigger from a channel reader (cache, payloads, then REST)."""

    def __init__(
        self,
        settings: ContextSettings,
        model: RelevanceModel | None = None,
        *,
        links: LinkResolver | None = None,
    ) -> None:
        self.settings = settings
        self.threshold_ms = int(settings.time_threshold_minutes * 60_000)
        self.model = model if model is not None or not settings.learned_relevance else load_model()
        self.links = links
        self._clues = ClueCache()

    def threshold_of(self, model: RelevanceModel) -> float:
        """The score a candidate needs: ``[context] relevance_threshold``, else the model's."""
        setting = self.settings.relevance_threshold
        return model.threshold if setting is None else setting

    @property
    def conversation_threshold(self) -> float | None:
        """The learned score's threshold in force (None when the rules decide): the one line
        the selection and the prompt's layout both read, so they never disagree."""
        return None if self.model is None else self.threshold_of(self.model)

    async def build(self, trigger: MessageLike, reader: ChannelReader) -> ContextSelection:
        reader.learn(trigger)
        calls_before, log_start = reader.rest_calls, len(reader.log)
        if (note := reader.restriction_note) is not None:
            reader.log.append(WorkEntry(action="history_restricted", detail=note))
        linked, left_out = await self._linked(trigger, reader)
        room = max(1, self.settings.max_total - len(linked))
        if self.model is not None:
            selection = await self._build_scored(trigger, reader, self.model, room)
        else:
            selection = await self._build_by_rules(trigger, reader, room)
        known = set(selection.reasons)
        for message, reason in linked:
            if message.id in known:
                selection.reasons[message.id].insert(0, reason)
            else:
                selection.reasons[message.id] = [reason]
                selection.messages.append(message)
                known.add(message.id)
        selection.messages.sort(key=lambda m: m.id)
        selection.problems[:0] = left_out
        if reader.restriction_note is not None:  # the asker may not read the history: say so
            selection.problems = _restricted(selection.problems, trigger, reader.restriction_note)
        selection.rest_calls = reader.rest_calls - calls_before
        selection.work_log = reader.log[log_start:]
        return selection

    # ------------------------------------------------------------------ message links

    async def _linked(
        self, trigger: MessageLike, reader: ChannelReader
    ) -> tuple[list[tuple[MessageLike, Reason]], list[str]]:
        """Messages the trigger links to, and a line for each link left out (and why)."""
        linked: list[tuple[MessageLike, Reason]] = []
        left_out: list[str] = []
        for link in message_links(trigger.content or ""):
            outcome = await self._follow_link(link, trigger, reader)
            reader.log.append(
                WorkEntry(
                    action="link_followed",
                    detail=f"{trigger.id} links to {link.url}"
                    + (f": {outcome.left_out}" if outcome.left_out else ""),
                    status="success" if outcome.message is not None else "failure",
                )
            )
            if outcome.message is not None and outcome.message.id != trigger.id:
                linked.append((outcome.message, Reason(kind="link", via=trigger.id)))
            elif outcome.left_out:
                left_out.append(f"linked message {link.url} left out: {outcome.left_out}")
        return linked, left_out

    async def _follow_link(
        self, link: MessageLink, trigger: MessageLike, reader: ChannelReader
    ) -> LinkOutcome:
        if link.guild_id != guild_id_of(trigger):
            return LinkOutcome(left_out="it is in another server")
        if link.message_id >= trigger.id:
            return LinkOutcome(left_out="it is newer than the question")
        if link.channel_id == reader.source.channel_id:
            message = await reader.get(link.message_id)
            if message is None:
                return LinkOutcome(left_out=reader.unreadable or "it no longer exists")
            return LinkOutcome(message=message)
        if self.links is None:
            return LinkOutcome(left_out="only this channel can be read here")
        return await self.links.resolve(link, trigger)

    # ------------------------------------------------------------------ learned score

    async def _build_scored(
        self, trigger: MessageLike, reader: ChannelReader, model: RelevanceModel, max_total: int
    ) -> ContextSelection:
        """Tik/tok proposes, the score decides: the steps below, in the order they run.

        The candidates are the temporal neighbourhood before the trigger (under sealing, at
        most ``candidate_window`` messages, the history page the recent messages cost anyway,
        or ``cached_candidate_window`` when the cache holds them) and the trigger's reply
        chain, whatever its age. The ``min_linear`` most recent
        messages are always in; the other candidates enter by score, highest first, when it
        reaches the threshold, until ``max_total``.
        """
        limit = min(self.settings.min_linear, max_total)
        recent = await reader.recent(trigger, limit, keep=is_conversational)
        fetchable = self.settings.candidate_window
        last_round: tuple[dict[int, list[Reason]], CandidatePool] | None = None
        while True:
            problems: list[str] = []
            log_start = len(reader.log)
            candidates = CandidatePool()
            walk = Walk(current=trigger, newer_ms=created_ms(trigger))
            await self._walk_back_to_silence(walk, reader, candidates, fetchable)
            candidates.add_recent(recent, sealed_off=self._sealed_off(trigger, recent))
            await self._follow_reply_chain(trigger, reader, candidates, max_total, problems)
            await self._add_parent_neighbourhood(trigger, reader, candidates)
            self._add_free_parents(trigger, reader, candidates)
            scored = self._score(trigger, candidates, model, keep={m.id for m in recent})
            reasons = self._choose(trigger, recent, scored, max_total)
            if last_round is not None:  # the new page adds to what the last round chose
                kept, read_before = last_round
                reasons = with_older(kept, read_before.by_id, scored, reasons, max_total)
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
            reader.log[log_start:] = [e for e in reader.log[log_start:] if _paid(e)]
        show_replies_among(reasons, candidates.by_id)
        for error in reader.errors:
            if error.user_message not in problems:
                problems.append(error.user_message)
        return ContextSelection(
            trigger=trigger,
            messages=sorted((candidates.by_id[i] for i in reasons), key=lambda m: m.id),
            reasons=reasons,
            problems=problems,
        )

    async def _walk_back_to_silence(
        self, walk: Walk, reader: ChannelReader, candidates: CandidatePool, fetchable: int
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
        reach = self.settings.walk_reach
        threshold = self.threshold_ms
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

    def _sealed_off(self, trigger: MessageLike, recent: list[MessageLike]) -> set[int]:
        """The recent messages past a silence: scored, but nothing is explored from them."""
        return {m.id for m in recent} - self._unbroken(trigger, recent)

    async def _follow_reply_chain(
        self,
        trigger: MessageLike,
        reader: ChannelReader,
        candidates: CandidatePool,
        max_total: int,
        problems: list[str],
    ) -> None:
        """Step 2: what the trigger replies to, and what that replies to, whatever its age."""
        chain = candidates.chain
        child = trigger
        while len(chain) < max_total:
            parent_id = reference_id(child)
            if parent_id is None or parent_id >= trigger.id or parent_id in chain:
                return
            parent = await self._referenced(child, parent_id, reader)
            reader.log.append(
                WorkEntry(
                    action="reference_followed",
                    detail=f"{child.id} replies to {parent_id}",
                    status="success" if parent is not None else "failure",
                )
            )
            if parent is None:
                problems.append(f"message {child.id} replies to {parent_id}, which is gone")
                return
            chain[parent.id] = child.id
            candidates.add(parent)
            child = parent

    async def _add_parent_neighbourhood(
        self, trigger: MessageLike, reader: ChannelReader, candidates: CandidatePool
    ) -> None:
        """Step 3: the replied-to message's own neighbourhood, when the walk did not reach it
        (a reply across a silence): the page read around it already holds these neighbours."""
        parent_id = reference_id(trigger)
        if parent_id not in candidates.chain or parent_id in candidates.walked:
            return
        for step in (reader.previous, reader.next):
            current = candidates.by_id[parent_id]
            for _ in range(PARENT_NEIGHBOURS):
                found = await step(current)
                if found is None or found.id >= trigger.id:
                    break
                if abs(created_ms(found) - created_ms(current)) > self.threshold_ms:
                    break
                current = found
                if is_conversational(found):
                    candidates.add(found)

    def _add_free_parents(
        self, trigger: MessageLike, reader: ChannelReader, candidates: CandidatePool
    ) -> None:
        """Step 4: what the candidates reply to, when it costs nothing (the payload carries it
        or the cache holds it): a thread starter's question in the parent channel, an old
        message someone answered just now."""
        for message in list(candidates.messages):
            parent_id = reference_id(message)
            if parent_id is None or parent_id in candidates.by_id or parent_id >= trigger.id:
                continue
            if message.id in candidates.sealed_off and message.id not in candidates.chain:
                continue  # what an old conversation answered is that conversation
            parent = self._free_parent(message, parent_id, reader)
            if parent is not None:
                candidates.add(parent)

    def _score(
        self,
        trigger: MessageLike,
        candidates: CandidatePool,
        model: RelevanceModel,
        keep: set[int],
    ) -> Scoring:
        """Step 5: every candidate scored against the trigger and its reply thread (``keep``:
        those looked at twice whatever their first look, the recent ones, whose reasons are
        told)."""
        trigger_clue = self._clues.clue(trigger)
        clues = [self._clues.clue(m) for m in candidates.messages]
        threshold = self.threshold_of(model)
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
            trigger=trigger,
            trigger_clue=trigger_clue,
            model=model,
            chain=candidates.chain,
            threshold=threshold,
            results={clue.id: result for clue, result in zip(clues, results, strict=True)},
            clues={clue.id: clue for clue in clues},
        )

    def _choose(
        self, trigger: MessageLike, recent: list[MessageLike], scored: Scoring, max_total: int
    ) -> dict[int, list[Reason]]:
        """Step 6: what enters, and why: the recent messages, the message replied to, the best
        few whatever the threshold (unless plainly elsewhere), then the rest that reach it."""
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
        parent_id = reference_id(trigger)
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

    @staticmethod
    def _free_parent(
        message: MessageLike, parent_id: int, reader: ChannelReader
    ) -> MessageLike | None:
        reference = message.reference
        resolved = reference.resolved if reference is not None else None
        if resolved is None or getattr(resolved, "content", None) is None:
            resolved = reader.cache.get(parent_id)
        if resolved is UNKNOWN or resolved is None or not reader.allows(resolved):  # type: ignore[arg-type]
            return None
        return resolved  # type: ignore[return-value]

    # ------------------------------------------------------------------ participation rules

    async def _build_by_rules(
        self, trigger: MessageLike, reader: ChannelReader, max_total: int
    ) -> ContextSelection:
        settings = self.settings
        state = Exploration(trigger=trigger, max_total=max_total)
        state.join(trigger)

        recent = await reader.recent(
            trigger, min(settings.min_linear, max_total), keep=is_conversational
        )
        state.take([Candidate(m, Reason(kind="linear")) for m in recent])
        # A small group talking together is one conversation even without mentions or replies.
        speakers = {
            m.author.id for m in recent if created_ms(trigger) - created_ms(m) <= self.threshold_ms
        }
        if len(speakers | {trigger.author.id}) <= settings.small_group_size:
            state.participants.update(speakers)
        # Linear messages are context but only seed exploration when they take part: in a busy
        # channel they mostly belong to other conversations. Those past a silence seed nothing:
        # they are in because they are recent, their conversation is over.
        unbroken = self._unbroken(trigger, recent)
        frontier = [
            trigger,
            *(m for m in recent if m.id in unbroken and state.involves_participant(m)),
        ]
        to_reference = list(frontier)
        to_neighbour = list(frontier)
        while not state.full:
            added_by_tik = state.take(await self._tik(to_reference, state, reader))
            if state.full:
                break
            added_by_tok = state.take(await self._tok(to_neighbour, state, reader))
            if not added_by_tik and not added_by_tok:
                break
            newest = sorted(added_by_tik + added_by_tok, key=lambda m: -m.id)
            to_reference = newest
            to_neighbour = newest

        for error in reader.errors:
            if error.user_message not in state.problems:
                state.problems.append(error.user_message)
        chosen = sorted(state.selected.values(), key=lambda m: m.id)
        return ContextSelection(
            trigger=trigger,
            messages=chosen,
            reasons=state.reasons,
            problems=state.problems,
        )

    def _unbroken(self, trigger: MessageLike, recent: list[MessageLike]) -> set[int]:
        """The recent messages no silence longer than the threshold separates from the trigger."""
        unbroken: set[int] = set()
        newer = trigger
        for message in sorted(recent, key=lambda m: -m.id):
            if created_ms(newer) - created_ms(message) > self.threshold_ms:
                break
            unbroken.add(message.id)
            newer = message
        return unbroken

    # ------------------------------------------------------------------ TIK

    async def _tik(
        self, frontier: list[MessageLike], state: Exploration, reader: ChannelReader
    ) -> list[Candidate]:
        candidates: list[Candidate] = []
        for message in frontier:
            referenced = reference_id(message)
            if referenced is not None and referenced < state.trigger.id:
                reason = Reason(kind="reference", via=message.id)
                if state.knows(referenced):
                    state.note(referenced, reason)
                else:
                    parent = await self._referenced(message, referenced, reader)
                    reader.log.append(
                        WorkEntry(
                            action="reference_followed",
                            detail=f"{message.id} replies to {referenced}",
                            status="success" if parent is not None else "failure",
                        )
                    )
                    if parent is not None:
                        candidates.append(Candidate(parent, reason))
                    else:
                        state.problems.append(
                            f"message {message.id} replies to {referenced}, which is gone"
                        )
            # Only the trigger's mentions are followed: later in the walk, mentions already
            # steer the temporal step through the participants, and following them again
            # pulled in other conversations (lower F1 on the IRC logs).
            if self.settings.follow_mentions and message is state.trigger:
                for user in message.mentions:
                    answered = await self._latest_by(user.id, message, reader)
                    if answered is not None:
                        reason = Reason(kind="mention", via=message.id)
                        candidates.append(Candidate(answered, reason))
        return candidates

    @staticmethod
    async def _referenced(
        message: MessageLike, referenced: int, reader: ChannelReader
    ) -> MessageLike | None:
        """The replied-to message: from the payload first, then the channel (cache, REST).

        The payload's copy is used whatever channel it is in (a thread's starter message points
        into the parent channel); only this channel's history can be asked for the rest.
        """
        reference = message.reference
        resolved = reference.resolved if reference is not None else None
        if resolved is not None and getattr(resolved, "content", None) is not None:
            return resolved if reader.allows(resolved) else None  # type: ignore[arg-type,return-value]
        channel_id = getattr(reference, "channel_id", None)
        if channel_id is not None and channel_id != reader.source.channel_id:
            return None
        return await reader.get(referenced)

    async def _latest_by(
        self, author_id: int, message: MessageLike, reader: ChannelReader
    ) -> MessageLike | None:
        """The mentioned person's latest message before ``message``, within the threshold."""
        current = message
        for _ in range(self.settings.mention_scan_limit):
            previous = await reader.previous(current)
            if previous is None or created_ms(message) - created_ms(previous) > self.threshold_ms:
                return None
            if previous.author.id == author_id:
                return previous
            current = previous
        return None

    # ------------------------------------------------------------------ TOK

    async def _tok(
        self, frontier: list[MessageLike], state: Exploration, reader: ChannelReader
    ) -> list[Candidate]:
        candidates: list[Candidate] = []
        here = reader.source.channel_id
        for message in frontier:
            if getattr(getattr(message, "channel", None), "id", here) != here:
                continue  # a reply's parent in another channel: its neighbours are not ours
            for direction in ("before", "after"):
                if direction == "after" and message is state.trigger:
                    continue  # never past the trigger
                neighbour = await self._neighbour(message, direction, state, reader)
                if neighbour is None:
                    continue
                same_author = neighbour.author.id == message.author.id
                kind: ReasonKind = "author" if same_author else "temporal"
                if direction == "after" and reference_id(neighbour) == message.id:
                    kind = "reply"
                candidates.append(Candidate(neighbour, Reason(kind=kind, via=message.id)))
        return candidates

    async def _neighbour(
        self, message: MessageLike, direction: str, state: Exploration, reader: ChannelReader
    ) -> MessageLike | None:
        """The nearest message in ``direction`` that takes part, or None once sealed.

        The walk skips messages of other conversations (authors who do not take part) and
        stops at the first one past the threshold: that silence seals the direction.
        """
        current = message
        for _ in range(self.settings.neighbour_scan_limit):
            if direction == "before":
                found = await reader.previous(current)
            else:
                found = await reader.next(current)
            if found is None or found.id >= state.trigger.id:
                return None
            if abs(created_ms(found) - created_ms(current)) > self.threshold_ms:
                return None
            if abs(created_ms(found) - created_ms(message)) > self.threshold_ms:
                return None
            if not is_conversational(found):
                current = found
                continue
            if not self.settings.participants_only or state.involves_participant(found):
                return None if state.knows(found.id) else found
            current = found
        return None
