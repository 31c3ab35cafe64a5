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

from conversation.common.settings import ContextSettings
from conversation.selection.clues import ClueCache
from conversation.selection.message_links import LinkResolver, linked_messages
from conversation.selection.relevance import RelevanceModel
from conversation.selection.result import ContextSelection, Reason
from conversation.selection.rules_build import RulesBuild
from conversation.selection.scored_build import PARENT_NEIGHBOURS, ScoredBuild
from conversation.selection.weights import load_model
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
    ) -> None:
        self.settings = settings
        self.model = model if model is not None or not settings.learned_relevance else load_model()
        self.links = links
        self.clues = ClueCache()

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
        room = max(1, self.settings.max_total - len(linked))
        mode: ScoredBuild | RulesBuild
        if self.model is not None:
            threshold = self.threshold_of(self.model)
            mode = ScoredBuild(
                self.settings, trigger, reader, room, self.model, threshold, self.clues
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
