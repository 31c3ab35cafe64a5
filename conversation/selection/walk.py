"""How far back a build reads: the walk's state, and when one more history page is worth it.

A cold build (the first in a channel after a start, the cache empty) reads one history page of
100 messages. In a busy channel a conversation often began before that page, and a bot that
saw the channel (warm) scores those earlier messages too. A second page always closes the gap
but doubles the cold build's REST calls, though most conversations are whole in the first page.
The evidence that one is not: a message among the page's oldest entered the context by its score
(the conversation still runs at the page's edge). Only then is the second page read, and so
on at each new edge as far as ``cached_candidate_window`` (199 by default: one more page). What
the new page brings is added to the choice already made (``with_older``), not chosen again with
it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from conversation.selection.result import Reason
from conversation.selection.scoring import LIKELY_ANSWERED, Scoring
from conversation.sources.source import MessageLike

EDGE_MESSAGES = 20
"""How many of the oldest messages the walk read count as the page's edge. Measured on a third
of irc-train (every third log, shipped weights; ``lab.context_quality --only "threadwise
builder"``): one page F1 0.630 at 1.01 REST calls per cold trigger, two pages always 0.642 at
2.00, a second page when one of the oldest 20 entered 0.642 at 1.22, the oldest 40 0.642 at
1.35 (by a first form that added the second page's messages after the other candidates; the
figures of the form shipped are in docs/experiments.md)."""

OLDER_MARGIN = 0.1
"""How far over the threshold a message of the second page must score to be added. Measured on
four folds of irc-train scored from each log's first annotated message (``--labelled-only``),
F1 on folds 1-2 and 3-4 and the logs losing more than 0.02 against one page: the whole choice
made again (the first form) 0.661 and 0.658, five logs; added with no margin, 0.660 and 0.657,
one log (-0.032); 0.05, the same F1, that log at -0.024; 0.1, 0.659 and 0.656, none."""


@dataclass
class Walk:
    """Where the walk back from the trigger stands, so that it can go on from there."""

    current: MessageLike  # the oldest message passed (the trigger before the first step)
    newer_ms: int  # the time of the last conversational message passed
    step: int = 0  # messages passed
    stopped_at_edge: bool = False  # stopped where only another history page could go on


def reaches_edge(walked: set[int], reasons: dict[int, list[Reason]]) -> bool:
    """Whether the conversation runs at the edge of what the walk read: one of the oldest
    ``EDGE_MESSAGES`` walked messages entered by its score (not as one of the recent ones)."""
    edge = sorted(walked)[:EDGE_MESSAGES]
    return any(i in reasons and reasons[i][0].kind != "linear" for i in edge)


def with_older(
    kept: dict[int, list[Reason]],
    read_before: Collection[int],
    scored: Scoring,
    chosen: dict[int, list[Reason]],
    max_total: int,
) -> dict[int, list[Reason]]:
    """``kept`` (what the last round chose) and, best first until ``max_total``, the messages of
    the new page (not among ``read_before``) that this round's choice (``chosen``) let in with a
    score at least ``OLDER_MARGIN`` over the threshold, or as what the trigger likely answers.

    The new page adds; it does not choose again among what was read. Chosen again, the whole
    context moved with the new candidates' ranks, and on some logs it lost more than it found
    (the rule of issue 45: no log of irc-train may lose more than 0.02 F1 against one page).
    Among older candidates the score errs more (a warm build, which weighs them all, loses on
    the same logs), so an older message must clear the threshold by a margin; the message the
    trigger likely answers is what an answer needs most (without it, parent recall on irc-dev
    fell from 0.980 to 0.979)."""
    merged = dict(kept)
    floor = scored.threshold + OLDER_MARGIN
    for message_id, score in scored.ranked():
        if len(merged) >= max_total:
            break
        reasons = chosen.get(message_id)
        if reasons is None or message_id in read_before:
            continue
        if score >= floor or reasons[0].evidence[:1] == (LIKELY_ANSWERED,):
            merged[message_id] = reasons
    return merged
