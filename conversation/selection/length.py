"""How long a channel's conversations run, from the channel's own builds: the cap on a context.

One cap for every channel cuts a project channel's long conversations as short as a help
channel's. Each scored build knows how many messages its score would let in without a cap (the
recent ones, the message replied to, and every candidate over the threshold): what the channel's
conversations ask for. ``ConversationLengths`` keeps the last ``BUILDS`` of those counts per
channel, and a channel where the longer ones (the ``QUANTILE`` of them) pass ``max_total`` gets
a cap that high, up to ``max_total_long``; a channel whose conversations fit keeps
``max_total``. Bounded both ways, and told in the work log with its evidence.

The counts are kept in memory: after a restart a channel starts again at ``max_total`` and
earns its longer cap over its next ``MIN_BUILDS`` builds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# The builds remembered per channel, and how many it takes before the cap moves.
BUILDS = 100
MIN_BUILDS = 10
# Which of the channel's recent builds the cap is made for: the longest tenth may be cut.
QUANTILE = 0.9


@dataclass(frozen=True)
class Cap:
    """The cap of one build, and why (None: the configured ``max_total``, nothing to tell)."""

    total: int
    why: str | None = None


@dataclass
class ConversationLengths:
    """Per channel, how many messages its recent builds' scores asked for."""

    builds: int = BUILDS
    min_builds: int = MIN_BUILDS
    quantile: float = QUANTILE
    _asked: dict[int, deque[int]] = field(default_factory=dict)

    def cap(self, channel_id: int, max_total: int, max_total_long: int) -> Cap:
        """The cap of the next build in the channel: ``max_total``, or up to ``max_total_long``
        where the channel's conversations ask for more."""
        asked = self._asked.get(channel_id)
        if max_total_long <= max_total or asked is None or len(asked) < self.min_builds:
            return Cap(max_total)
        ranked = sorted(asked)
        wanted = ranked[min(len(ranked) - 1, int(self.quantile * len(ranked)))]
        if wanted <= max_total:
            return Cap(max_total)
        total = min(wanted, max_total_long)
        share = sum(count > max_total for count in ranked) / len(ranked)
        return Cap(
            total,
            f"cap {total}: {share:.0%} of this channel's last {len(ranked)} contexts asked for "
            f"more than {max_total} messages",
        )

    def record(self, channel_id: int, asked: int) -> None:
        """What one build's score asked for in the channel."""
        counts = self._asked.get(channel_id)
        if counts is None:
            counts = self._asked[channel_id] = deque(maxlen=self.builds)
        counts.append(asked)
