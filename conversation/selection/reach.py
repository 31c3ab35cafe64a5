"""How far a candidate reaches into the conversation the first look found, by its links.

The first look scores each candidate against the trigger alone. A message three replies or two
addressings away from the trigger shares little with it, but much with its neighbours in the
conversation: who wrote it and what else that person said, what it replies to or who it
addresses, and how likely the first look found those. These measures carry the first look's
scores one link further, so the second look decides about a message with its conversation in
view rather than alone. They also say where a long silence inside a conversation lies (people
come back after a break; a silence right before a message usually starts another topic).

Pure Python over the candidates' clues, like the rest of the score.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Protocol


class Clue(Protocol):
    """What these measures read of a message (``conversation.selection.relevance.Clue`` has it)."""

    @property
    def id(self) -> int: ...
    @property
    def at_ms(self) -> int: ...
    @property
    def author(self) -> int: ...
    @property
    def mentions(self) -> frozenset[int]: ...
    @property
    def reference(self) -> int | None: ...


REACH_FEATURES: tuple[str, ...] = (
    "first-look score",
    "first-look rank",
    "its author's other messages",
    "linked to a likely message",
    "silence before it",
    "its author's next message",
)

_NONE = 5.0  # log-minutes standing for "no such message" (past any gap seen in a window)


def reach_rows(
    trigger: Clue,
    candidates: Sequence[Clue],
    first: Sequence[float],
    only: Sequence[int] | None = None,
) -> list[list[float]]:
    """One row of ``REACH_FEATURES`` per candidate (newest first), given first-look scores;
    per index in ``only`` when given (the links are still found among them all)."""
    score = {clue.id: p for clue, p in zip(candidates, first, strict=True)}
    score[trigger.id] = 1.0
    everyone = [trigger, *candidates]
    # Best first, on a tie the earlier (a stable sort: reversed, it keeps their order).
    order = sorted(range(len(candidates)), key=first.__getitem__, reverse=True)
    rank = [0] * len(candidates)
    for position, i in enumerate(order):
        rank[i] = position
    totals: dict[int, float] = {}
    counts: dict[int, int] = {}
    for clue, p in zip(candidates, first, strict=True):
        totals[clue.author] = totals.get(clue.author, 0.0) + p
        counts[clue.author] = counts.get(clue.author, 0) + 1
    chronological = sorted(everyone, key=operator.attrgetter("id"))
    linked = _linked(chronological, score)
    before: dict[int, int] = {}  # the silence before each message
    next_by: dict[int, int] = {}  # the time until its author's next message
    following: dict[int, int] = {}
    later = None
    for clue in reversed(chronological):
        if later is not None:
            before[later.id] = later.at_ms - clue.at_ms
        if clue.author in following:
            next_by[clue.id] = following[clue.author] - clue.at_ms
        following[clue.author] = clue.at_ms
        later = clue

    rows = []
    log1p = math.log1p
    for i in range(len(candidates)) if only is None else only:
        clue, p = candidates[i], first[i]
        others = counts[clue.author] - 1
        mean_others = (totals[clue.author] - p) / others if others else 0.0
        if clue.author == trigger.author:
            mean_others = 1.0
        gap = before.get(clue.id)
        after = next_by.get(clue.id)
        rows.append(
            [
                p,
                log1p(rank[i]),
                mean_others,
                linked.get(clue.id, 0.0),
                log1p(max(0, gap) / 60_000) if gap is not None else _NONE,
                log1p(max(0, after) / 60_000) if after is not None else _NONE,
            ]
        )
    return rows


def _linked(chronological: Sequence[Clue], score: dict[int, float]) -> dict[int, float]:
    """The likeliest first-look score among each message's links: a reply reference either
    way, an addressing either way (to or from the addressed person's nearest message)."""
    linked: dict[int, float] = {}
    latest_by: dict[int, int] = {}
    likeliest = linked.get
    for clue in chronological:
        here, reference = clue.id, clue.reference
        # Each link written out twice rather than through a helper: it runs for every link.
        if reference is not None and reference in score:
            linked[here] = max(likeliest(here, 0.0), score[reference])
            linked[reference] = max(likeliest(reference, 0.0), score[here])
        for user in clue.mentions:
            addressed = latest_by.get(user)
            if addressed is not None:
                linked[here] = max(likeliest(here, 0.0), score[addressed])
                linked[addressed] = max(likeliest(addressed, 0.0), score[here])
        latest_by[clue.author] = here
    return linked
