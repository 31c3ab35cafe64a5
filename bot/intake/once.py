"""Each message is answered at most once, however often the gateway delivers it.

Discord may deliver a MESSAGE_CREATE twice (a RESUME replays the events after the last one the
client acknowledged, and a flaky connection can have it replay one already handled), and a
bot restarted mid-answer may see the trigger again. A second answer to the same message is
noise for the channel and a second model bill, so a trigger is claimed before it waits in line:
in memory for the copies this process sees, and in the store (any shard, any earlier run) for
the ones already recorded as interactions.

The store is asked for a bounded time only (``[storage] claim_wait_seconds``): a stalled
PostgreSQL (accepting connections but not answering) must not hold every mention for its
connect timeout; and until the question that outlived its wait comes back, the next messages
do not ask at all. Not knowing costs what a failing store costs: the message is answered, and a
rare second answer to a replayed event is the price of never leaving a member unanswered.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from bot.intake.store_wait import BoundedQuestions

log = logging.getLogger(__name__)

CLAIMS_KEPT = 4096
"""Trigger ids remembered in memory: far more than can be in line or in a burst at once, and
the store remembers the rest."""

CLAIM_WAIT_SECONDS = 1.5
"""How long a claim waits for the store unless told otherwise (``[storage]
claim_wait_seconds``): a healthy store answers in milliseconds."""

AnsweredInStore = Callable[[int], Awaitable[bool]]


class AnsweredOnce:
    """The triggers claimed: by this process (bounded), and by every interaction recorded."""

    def __init__(
        self,
        in_store: AnsweredInStore | None = None,
        *,
        kept: int = CLAIMS_KEPT,
        wait: Callable[[], float] = lambda: CLAIM_WAIT_SECONDS,
        questions: BoundedQuestions | None = None,
    ) -> None:
        self._in_store = in_store
        self._kept = kept
        self._claimed: OrderedDict[int, None] = OrderedDict()
        # wait() read at each claim (a reload applies); ``questions``: shared with the other
        # questions to the same store, so a stall one of them met stops them all.
        self._store = questions or BoundedQuestions(wait)

    async def claim(self, message_id: int) -> bool:
        """True when the message is this call's to answer; False when a copy of it was claimed
        already or it was answered before (a restart, another shard).

        The memory claim is taken before the store is asked, so a copy arriving while the store
        answers is refused too. A store that cannot be read does not cost the member an answer:
        the message is answered (and the trouble logged), as is one the store does not answer
        within the wait.
        """
        if message_id in self._claimed:
            return False
        self._claimed[message_id] = None
        while len(self._claimed) > self._kept:
            self._claimed.popitem(last=False)
        if self._in_store is None:
            return True
        if self._store.stalled:
            return True  # the store is known stalled: no second question queued behind it
        asking = await self._store.ask(
            self._in_store(message_id),
            f"whether {message_id} was answered (answering it)",
        )
        if asking is None:
            return True
        try:
            return not asking.result()
        except Exception as error:
            log.warning("could not ask the store whether %s was answered: %s", message_id, error)
            return True
