"""A reaction on the trigger while the bot works: seen, using a tool, failed (``[status]``).

The reaction is a courtesy, never part of the answer: its requests run beside the answer, one
after another in the order asked (so a later state never lands before an earlier one's
removal), and a Discord error adding or removing one is logged and forgotten. Where the bot may
not react (no Add Reactions, or no Read Message History, which reacting needs too) there is no
reaction at all, and nothing is said.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.config.status_settings import StatusSettings

log = logging.getLogger(__name__)

SETTLE_SECONDS = 5.0
"""How long the end of an answer waits for the last reaction change before letting it go on."""


def may_react(message: Any) -> bool:
    """Whether the bot may add a new reaction to ``message`` (in a DM it always may)."""
    channel = message.channel
    guild = getattr(channel, "guild", None)
    if guild is None:
        return True
    me = getattr(guild, "me", None)
    if me is None:
        return False
    try:
        permissions = channel.permissions_for(me)
    except Exception:  # a channel nextcord cannot place: no status, not an error
        return False
    return bool(permissions.add_reactions and permissions.read_message_history)


class StatusReaction:
    """The trigger's status reaction through one answer; ``StatusReaction.off()`` does nothing."""

    def __init__(self, message: Any, settings: StatusSettings | None) -> None:
        self._message = message
        self._settings = settings
        self._shown: str | None = None
        self._last: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()  # the changes not yet done

    @classmethod
    def for_trigger(cls, message: Any, settings: StatusSettings) -> StatusReaction:
        """The status of an answer to ``message``: off unless ``[status] reactions`` is on and
        the bot may react there."""
        on = settings.reactions and may_react(message)
        return cls(message, settings if on else None)

    def seen(self) -> None:
        if self._settings is not None:
            self._show(self._settings.seen)

    def using_tool(self) -> None:
        if self._settings is not None:
            self._show(self._settings.tool)

    def failed(self) -> None:
        if self._settings is not None:
            self._show(self._settings.failed)

    def answered(self) -> None:
        """The answer is posted: no reaction is left."""
        self._show(None)

    async def settled(self) -> None:
        """Wait (a little, at most) for the changes asked so far to reach Discord."""
        if self._last is not None:
            await asyncio.wait([self._last], timeout=SETTLE_SECONDS)

    def abandon(self) -> None:
        """The bot is stopping: no change asked for and not yet done is sent (each waits for
        the one before it, so every one still pending is cancelled, not only the last)."""
        for change in list(self._pending):
            change.cancel()

    def _show(self, emoji: str | None) -> None:
        if emoji == self._shown:
            return
        before, self._shown = self._shown, emoji
        previous = self._last
        message = self._message

        async def change() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            if before is not None:
                me = _me(message)
                await _quietly("remove", before, lambda: message.remove_reaction(before, me))
            if emoji is not None:
                await _quietly("add", emoji, lambda: message.add_reaction(emoji))

        self._last = asyncio.create_task(change())
        self._pending.add(self._last)
        self._last.add_done_callback(self._pending.discard)


def _me(message: Any) -> Any:
    guild = getattr(message.channel, "guild", None)
    me = getattr(guild, "me", None)
    return me if me is not None else message.channel.me  # a DM: the bot's own user


async def _quietly(what: str, emoji: str, request: Callable[[], Awaitable[None]]) -> None:
    try:
        await request()
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a status is cosmetic: never fail an answer for it
        log.info("could not %s the status reaction %s: %s", what, emoji, error)
