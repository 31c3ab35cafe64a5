"""What the scored build and the rules build do the same way, written once.

Both start from the ``min_linear`` most recent messages, which are in whatever their age. A
silence longer than the threshold between them and the trigger seals them off all the same:
nothing is explored from those past it (neither their neighbours nor, under the learned score,
what they reply to), so a question after days of quiet does not bring the old thread back.
Both step through the channel from a message one neighbour at a time, never to the trigger or
past it, and stop at such a silence. Both end alike: the messages in time order, with the
problems the reader met told once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from conversation.common.settings import ContextSettings
from conversation.selection.result import ContextSelection, Reason
from conversation.sources.reader import ChannelReader
from conversation.sources.source import MessageLike, created_ms, is_conversational

Step = Callable[[MessageLike], Awaitable[MessageLike | None]]
"""One step through the channel: the reader's ``previous`` or ``next``."""


@dataclass
class BuildSteps:
    """One build's inputs, and the steps both modes take on them."""

    settings: ContextSettings
    trigger: MessageLike
    reader: ChannelReader
    max_total: int  # the room left once the trigger's links are in
    threshold_ms: int = field(init=False)

    def __post_init__(self) -> None:
        self.threshold_ms = int(self.settings.time_threshold_minutes * 60_000)

    async def recent(self) -> list[MessageLike]:
        """The ``min_linear`` most recent conversational messages before the trigger."""
        limit = min(self.settings.min_linear, self.max_total)
        return await self.reader.recent(self.trigger, limit, keep=is_conversational)

    def unbroken(self, recent: list[MessageLike]) -> set[int]:
        """The recent messages no silence longer than the threshold separates from the trigger."""
        unbroken: set[int] = set()
        newer = self.trigger
        for message in sorted(recent, key=lambda m: -m.id):
            if created_ms(newer) - created_ms(message) > self.threshold_ms:
                break
            unbroken.add(message.id)
            newer = message
        return unbroken

    async def step_from(self, current: MessageLike, step: Step) -> MessageLike | None:
        """The message next to ``current`` in ``step``'s direction; None at the trigger or past
        it, or past a silence longer than the threshold (it seals that direction)."""
        found = await step(current)
        if found is None or found.id >= self.trigger.id:
            return None
        if abs(created_ms(found) - created_ms(current)) > self.threshold_ms:
            return None
        return found

    def selection(
        self,
        messages: Iterable[MessageLike],
        reasons: dict[int, list[Reason]],
        problems: list[str],
    ) -> ContextSelection:
        """The build's outcome: the messages in time order, and the reader's problems told once."""
        for error in self.reader.errors:
            if error.user_message not in problems:
                problems.append(error.user_message)
        return ContextSelection(
            trigger=self.trigger,
            messages=sorted(messages, key=lambda m: m.id),
            reasons=reasons,
            problems=problems,
        )
