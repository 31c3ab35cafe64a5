"""The conversations of a stretch of channel, for ``/catchup``: each message joined to the earlier
one it most likely continues, by the builder's own links and score.

A member coming back to a busy channel wants each conversation apart, not the last N messages
mixed. The builder already decides which earlier messages a trigger is about; here every message
of the stretch is a trigger in turn, and it joins the conversation of the one earlier message
that says most clearly it belongs with it:

1. the message it replies to, when that one is in the stretch (however far back: a reply
   crosses a silence in a build too);
2. else the best-scored of the ``window`` messages before it (``RelevanceModel.score_threads``,
   the score the scored build chooses with), when it reaches the builder's threshold;
3. else, with the score off (``learned_relevance = false``), the latest message of someone it
   mentions or addresses by name;
4. else it starts a conversation.

A silence longer than ``time_threshold_minutes`` seals, as in a build: past it, only a reply
joins a message before it. Each join keeps its reason, so the grouping explains itself (``Join``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conversation.selection.builder import ContextBuilder
from conversation.selection.clues import Clue, ClueCache
from conversation.selection.features import with_addresses
from conversation.sources.source import MessageLike

WINDOW = 30
"""How many earlier messages a message is scored against: the recent messages a member reading
the channel sees on one screen, and far more than most replies reach back on irc-train."""


@dataclass(frozen=True, slots=True)
class Join:
    """Why a message is in its conversation: the earlier message it continues (None: it starts
    one) and how that was found."""

    message_id: int
    parent_id: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """The messages of one conversation, oldest first, with how each joined."""

    joins: tuple[Join, ...]

    @property
    def message_ids(self) -> tuple[int, ...]:
        return tuple(join.message_id for join in self.joins)


def group_conversations(
    messages: Sequence[MessageLike], builder: ContextBuilder, *, window: int = WINDOW
) -> list[Conversation]:
    """The conversations of ``messages`` (oldest first), in the order each started."""
    clues = ClueCache()
    seen: list[Clue] = []
    group_of: dict[int, int] = {}
    groups: list[list[Join]] = []
    silence_ms = builder.settings.time_threshold_minutes * 60_000
    for message in messages:
        clue = clues.clue(message)
        if seen and clue.at_ms - seen[-1].at_ms > silence_ms:
            seen = []  # sealed: only a reply joins what came before the silence
        if clue.reference is not None and clue.reference in group_of:
            join = Join(clue.id, clue.reference, "replies to it")
        else:
            join = _join(clue, seen[-window:], builder)
        if join.parent_id is None:
            group_of[clue.id] = len(groups)
            groups.append([join])
        else:
            group_of[clue.id] = group_of[join.parent_id]
            groups[group_of[clue.id]].append(join)
        seen.append(clue)
    return [Conversation(tuple(joins)) for joins in groups]


def _join(clue: Clue, earlier: Sequence[Clue], builder: ContextBuilder) -> Join:
    if not earlier:
        return Join(clue.id, None, "starts a conversation")
    model = builder.model
    threshold = builder.conversation_threshold
    if model is not None and threshold is not None:
        scored = model.score_threads(clue, earlier, set())
        best = max(range(len(earlier)), key=lambda i: (scored[i].score, i))
        if scored[best].score >= threshold:
            evidence = ", ".join(model.evidence(scored[best], 2))
            detail = f"score {scored[best].score:.2f}" + (f": {evidence}" if evidence else "")
            return Join(clue.id, earlier[best].id, detail)
        return Join(clue.id, None, "starts a conversation (no earlier message scores enough)")
    addressed, candidates = with_addresses(clue, earlier)
    for other in reversed(candidates):
        if other.author in addressed.mentions and other.author != clue.author:
            return Join(clue.id, other.id, "mentions its author")
    return Join(clue.id, None, "starts a conversation")


def worth_summarising(
    conversations: Sequence[Conversation], most: int, *, least_messages: int = 2
) -> list[Conversation]:
    """The ``most`` conversations with the most messages (on a tie the later), each of at least
    ``least_messages``, in the order they started: a lone message left unanswered is no
    conversation to catch up on, and a busy hour has more than a member will read."""
    kept = [c for c in conversations if len(c.joins) >= least_messages]
    chosen = sorted(range(len(kept)), key=lambda i: (len(kept[i].joins), i), reverse=True)[:most]
    return [kept[i] for i in sorted(chosen)]
