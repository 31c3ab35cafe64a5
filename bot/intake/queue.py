"""The line of triggers waiting for an answer: one answer at a time per channel, a bounded
number across channels, and one place in line per member and channel.

Without the per-member bound, one member mentioning the bot every few seconds would queue an
answer per message, and everyone else in the channel would wait behind all of them. Here a
member's newer trigger replaces their waiting one and goes to the back of the line, so another
member waits at most for the answer in progress and one per other member ahead of them.

The replaced trigger gets no answer of its own, and nothing is posted to say so: the newer
trigger's answer reads the channel's recent history, where the replaced message is, and a
reaction or a notice per replaced trigger would be a REST call a flooding member could cause
at will, spending the channel's rate limit that everyone's answers need.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bot.intake.trigger import Trigger

log = logging.getLogger(__name__)

Answer = Callable[[Trigger], Awaitable[None]]
Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class AnswerSlots:
    """At most ``limit()`` answers at once across channels (the model endpoint's capacity).

    The limit is read at each acquire, so a reloaded config applies to the next answer (one
    already waiting for a slot sees a raised limit when a running answer ends).
    """

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._busy = 0
        self._freed = asyncio.Condition()

    async def __aenter__(self) -> None:
        async with self._freed:
            await self._freed.wait_for(lambda: self._busy < max(1, self._limit()))
            self._busy += 1

    async def __aexit__(self, *exc_info: object) -> None:
        async with self._freed:
            self._busy -= 1
            self._freed.notify_all()


class AnswerQueue:
    """Per channel: the members' waiting triggers in order, and one worker answering them."""

    def __init__(self, answer: Answer, slots: AnswerSlots, spawn: Spawn) -> None:
        self._answer = answer
        self._slots = slots
        self._spawn = spawn
        # channel id -> member id -> their waiting trigger (dicts keep insertion order).
        self._waiting: dict[int, dict[int, Trigger]] = {}
        self._workers: dict[int, asyncio.Task[None]] = {}

    def waiting(self, channel_id: int) -> list[Trigger]:
        """Triggers in line in the channel, next first (not the one being answered)."""
        return list(self._waiting.get(channel_id, {}).values())

    def waiting_total(self) -> int:
        """Triggers in line across all channels (the metrics' queue length)."""
        return sum(len(line) for line in self._waiting.values())

    def submit(self, trigger: Trigger) -> None:
        """Put the trigger in line, in place of the same member's waiting one, if any."""
        message = trigger.message
        channel_id, member_id = message.channel.id, message.author.id
        line = self._waiting.setdefault(channel_id, {})
        replaced = line.pop(member_id, None)
        line[member_id] = trigger  # at the back: a newer trigger does not keep the old place
        if replaced is not None:
            log.info(
                "message %s replaces %s from %s waiting in channel %s; only the newer is answered",
                message.id,
                replaced.message.id,
                member_id,
                channel_id,
            )
        if channel_id not in self._workers:
            self._workers[channel_id] = self._spawn(self._work(channel_id))

    async def _work(self, channel_id: int) -> None:
        try:
            while line := self._waiting.get(channel_id):
                async with self._slots:
                    # Taken out of line only once a slot is free: while waiting for one, a
                    # newer trigger from the same member still replaces it.
                    member_id = next(iter(line))
                    trigger = line.pop(member_id)
                    try:
                        await self._answer(trigger)
                    except Exception:  # one failed answer must not strand the rest of the line
                        log.exception("answering message %s failed", trigger.message.id)
        finally:
            self._workers.pop(channel_id, None)
            if not self._waiting.get(channel_id):
                self._waiting.pop(channel_id, None)
