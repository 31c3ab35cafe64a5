"""How far back a build reads: the walk's state, and when one more history page is worth it.

A cold build (the first in a channel after a start, the cache empty) reads one history page of
100 messages. In a busy channel a conversation often began before that page, and a bot that
saw the channel (warm) scores those earlier messages too. A second page always closes the gap
but doubles the cold build's REST calls, though most conversations are whole in the first page.
The evidence that one is not: a message among the page's oldest entered the context by its score
(the conversation still runs at the page's edge). Only then is the second page read, and so
on at each new edge as far as ``cached_candidate_window`` (199 by default: one more page).
"""

from __future__ import annotations

from dataclasses import dataclass

from conversation.selection.result import Reason
from conversation.sources.source import MessageLike

EDGE_MESSAGES = 20
"""How many of the oldest messages the walk read count as the page's edge. Measured on a third
of irc-train (every third log, shipped weights; ``lab.context_quality --only "threadwise
builder"``): one page F1 0.630 at 1.01 REST calls per cold trigger, two pages always 0.642 at
2.00, a second page when one of the oldest 20 entered 0.642 at 1.22, the oldest 40 0.642 at
1.35 (by a first form that added the second page's messages after the other candidates; the
figures of the form shipped are in docs/experiments.md)."""


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
