"""A burst of messages gets one answer: each trigger waits out its channel's burst window, and
only the person's latest in it goes on (``BurstWindow``).

A person who writes a question in three quick messages wants one answer to all three; the
answer to the last reads the channel's recent history, where the first two are. The trigger
that goes on is the latest whole: its kind and follow line are its own, never an earlier one's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bot.intake.trigger import Trigger


class BurstWindow:
    """Per channel and person, the latest trigger waiting out its window."""

    def __init__(self, seconds: Callable[[Any], float], then: Callable[[Trigger], None]) -> None:
        """``seconds``: a channel's window (read per trigger, so a reloaded config applies);
        ``then``: where the latest trigger of a burst goes (the line)."""
        self._seconds = seconds
        self._then = then
        self._latest: dict[tuple[int, int], Trigger] = {}

    async def wait_out(self, trigger: Trigger) -> None:
        """Hand ``trigger`` on after the window, unless a newer one of its author's came."""
        message = trigger.message
        key = (message.channel.id, message.author.id)
        waiting = self._latest.get(key)
        if waiting is not None and waiting.message.id > message.id:
            return  # a newer message of the burst got here first (its DM role check was quicker)
        self._latest[key] = trigger
        await asyncio.sleep(self._seconds(message.channel))
        if self._latest.get(key) is not trigger:
            return
        del self._latest[key]
        self._then(trigger)
