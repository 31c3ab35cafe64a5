"""The build's front door: which earlier messages a trigger is about.

One ``ContextBuilder`` serves a channel table: its settings, the learned score, the resolver of
links to other channels, and the clues it keeps from one build to the next. A build has two
modes, sibling modules that share what they do alike (``build_steps``, ``references``):

* the scored build (``scored_build``, the default): a walk back from the trigger proposes
  candidates and a score learned from public IRC logs decides which enter;
* the rules build (``rules_build``, ``learned_relevance = false``): the tik/tok walk, where
  replies, mentions and who takes part decide.

Around either, the front door does what does not depend on the mode: the messages the trigger
links to come in first (``message_links``) and the build fills the rest of ``max_total``; an
asker who may not read the channel's history is told why the context is short; the REST calls
and the work log of the build are counted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from conversation.common.settings import ContextSettings
from conversation.selection.clues import ClueCache
from conversation.selection.length import Cap, ConversationLengths
from conversation.selection.message_links import LinkResolver, linked_messages
from conversation.selection.relevance import RelevanceModel
from conversation.selection.result import ContextSelection, Reason
from conversation.selection.rules_build import RulesBuild
from conversation.selection.scored_build import PARENT_NEIGHBOURS, ScoredBuild
from conversation.selection.weights import load_meaning_model, load_model
from conversation.sources.reader import ChannelReader, WorkEntry
from conversation.sources.source import MessageLike

__all__ = ["PARENT_NEIGHBOURS", "ContextBuilder"]


class ContextBuilder:
    """Builds the context of a trigger from a channel reader (cache, payloads, then REST)."""

    def __init__(
        self,
        settings: ContextSettings,
        model: RelevanceModel | None = None,
        *,
        links: LinkResolver | None = None,
        meanings: Callable[[MessageLike], Any] | None = None,
        meaning_model: RelevanceModel | None = None,
        lengths: ConversationLengths | None = None,
    ) -> None:
        self.settings = settings
        self.model = model if model is not None or not settings.learned_relevance else load_model()
        # The score that reads meaning, for a trigger whose meaning is known (the plain one
        # otherwise: without the sentence model, or before the trigger is embedded). The
        # shipped one goes with the shipped plain score only: a model given (a fold's weights)
        # is the one that decides, and reads meaning when it was fitted with it.
        if meaning_model is None and model is None and meanings is not None:
            meaning_model = load_meaning_model() if settings.learned_relevance else None
        self.meaning_model = meaning_model
        self.links = links
        # What a message means (``conversation.selection.meaning``), read into its clue when
        # known: None, or None for a message, leaves the score's meaning features missing.
        self.clues = ClueCache(meanings=meanings)
        # How long each channel's conversations run, from its builds: the cap on a context
        # (given: shared with the builders of other channel tables and kept across a reload).
        self.lengths = lengths if lengths is not None else ConversationLengths()

    def forget(self, message_ids: Collection[int] = (), people: Collection[int] = ()) -> set[int]:
        """What this builder keeps of deleted messages, or of people forgotten, goes
        (``ClueCache.forget``); returns the message ids dropped."""
        return self.clues.forget(message_ids, people)

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
        linked, left_out = await linked_messages(trigger, reader, self.links)
        cap = self._cap(reader)
        if cap.why is not None:  # told in explain and the studio, with its evidence
            reader.log.append(WorkEntry(action="context_cap", detail=cap.why))
        room = max(1, cap.total - len(linked))
        mode: ScoredBuild | RulesBuild
        if self.model is not None:
            threshold = self.threshold_of(self.model)
            mode = ScoredBuild(
                self.settings,
                trigger,
                reader,
                room,
                self.model,
                threshold,
                self.clues,
                meaning_model=self.meaning_model,
                meaning_threshold=self.threshold_of(self.meaning_model or self.model),
                lengths=self.lengths,
                plain_room=self._plain_room(cap, len(linked)),
            )
        else:
            mode = RulesBuild(self.settings, trigger, reader, room)
        selection = await mode.run()
        _add_linked(selection, linked)
        selection.problems[:0] = left_out
        if note is not None:  # the asker may not read the history: say so
            selection.problems = _restricted(selection.problems, trigger, note)
        selection.rest_calls = reader.rest_calls - calls_before
        selection.work_log = reader.log[log_start:]
        return selection

    def _plain_room(self, cap: Cap, linked: int) -> int | None:
        """The room when the plain score decides a build the cap grew for (the trigger, or
        too many candidates, not embedded yet): the cap grew for the score that reads meaning
        only, so the plain one keeps ``max_total``. None: the operator set ``max_total_long``
        (their cap, whichever score decides), or the cap did not grow."""
        if self.settings.max_total_long is not None or cap.total <= self.settings.max_total:
            return None
        return max(1, self.settings.max_total - linked)

    def _cap(self, reader: ChannelReader) -> Cap:
        """The cap of this build: ``max_total``, or more in a channel whose conversations run
        long (scored builds only: the rules fill whatever cap they are given). Unless the
        operator set ``max_total_long``, the cap grows only under the score that reads meaning:
        the plain score's threshold, fitted for one cap, let too much of a busy help channel in
        once it grew (irc-dev's Ubuntu logs lost 0.013 to 0.018 F1; docs/experiments.md)."""
        if self.model is None:
            return Cap(self.settings.max_total)
        longest = self.settings.longest_total
        if self.meaning_model is None and self.settings.max_total_long is None:
            longest = self.settings.max_total
        return self.lengths.cap(reader.source.channel_id, self.settings.max_total, longest)


def _add_linked(selection: ContextSelection, linked: list[tuple[MessageLike, Reason]]) -> None:
    """The linked messages in the selection, first among their reasons, all in time order."""
    known = set(selection.reasons)
    for message, reason in linked:
        if message.id in known:
            selection.reasons[message.id].insert(0, reason)
        else:
            selection.reasons[message.id] = [reason]
            selection.messages.append(message)
            known.add(message.id)
    selection.messages.sort(key=lambda m: m.id)


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
