"""What each answer came to, recorded after the channel's turn is over: in line, retried, and
drained when the bot stops.

Recording an answer waits on the store. Awaited inside the answer, a stalled PostgreSQL (one
that accepts connections and never answers) held the channel's turn, and the next mention in
that channel got no answer until the store came back. Here the answer hands its result to a
bounded line and is done; one worker writes the line in order, each record tried again after
a failure (a store that is down, a dropped connection) a few times (the same record: a store
that took it before failing to answer, or before taking back what was forgotten or deleted
meanwhile, keeps one copy and only takes back again), and a record the store
keeps refusing, or one that finds the line full, costs one log line, never an answer. A store
that stalls holds the worker, not the answers: what waits is written once it is back. A clean
stop (``drain``) still writes what was answered, for a bounded time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from bot.answering.result import AnswerResult, Recorder

log = logging.getLogger(__name__)

RECORDS_WAITING = 256
"""Records waiting for a stalled store at most: hours of a busy channel's answers, and a bound
on what they hold in memory (each keeps its prompt until written)."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds before each new attempt at a record the store refused: about 15 s in all, enough
for a restarted database or a failover, not so long that the line grows behind one record."""
DRAIN_SECONDS = 5.0
"""How long a stopping bot waits for the store to take what is in line (``docker stop`` and
systemd allow 10 s before they kill)."""


class RecordLine:
    """The answers' records in order, written by one worker that runs while the line is not
    empty. ``written(seconds)`` hears how long each successful write took (the metrics)."""

    def __init__(
        self,
        recorder: Recorder,
        *,
        written: Callable[[float], None] | None = None,
        limit: int = RECORDS_WAITING,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
    ) -> None:
        self._recorder = recorder
        self._written = written
        self._limit = limit
        self._retry_delays = retry_delays
        self._line: deque[AnswerResult] = deque()
        self._worker: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        """Records not yet written (the one being written included)."""
        return len(self._line)

    def put(self, result: AnswerResult) -> None:
        """Put ``result`` in line; it is written once those before it are."""
        if len(self._line) >= self._limit:
            log.error(
                "interaction for message %s not recorded: %d records already wait for the store",
                result.trigger.message.id,
                len(self._line),
            )
            return
        self._line.append(result)
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="records")

    async def drain(self, seconds: float = DRAIN_SECONDS) -> None:
        """Wait at most ``seconds`` for the line to be written; what is left is given up on, in
        one log line (the bot is stopping)."""
        worker = self._worker
        if worker is None:
            return
        await asyncio.wait({worker}, timeout=seconds)
        if worker.done():
            return
        left = len(self._line)
        worker.cancel()
        self._line.clear()
        log.error(
            "stopping with %d interaction(s) not recorded: the store did not take them in %.0f s",
            left,
            seconds,
        )

    async def _work(self) -> None:
        try:
            while self._line:
                await self._write(self._line[0])  # kept in line while written: drain counts it
                self._line.popleft()
        finally:
            self._worker = None

    async def _write(self, result: AnswerResult) -> None:
        for attempt, delay in enumerate((*self._retry_delays, None), start=1):
            began = time.perf_counter()
            try:
                await self._recorder(result)
            except Exception as error:
                if delay is None:
                    log.error(
                        "could not record the interaction for message %s (%d attempts): %s",
                        result.trigger.message.id,
                        attempt,
                        " ".join(str(error).split())[:300] or type(error).__name__,
                    )
                    return
                log.warning(
                    "recording the interaction for message %s failed (attempt %d), retrying: %s",
                    result.trigger.message.id,
                    attempt,
                    type(error).__name__,
                )
                await asyncio.sleep(delay)
            else:
                if self._written is not None:
                    self._written(time.perf_counter() - began)
                return
