"""The channel cache a replayed build starts from: empty (cold) or as a watching bot holds it.

A bot that has been connected holds every message the gateway delivered, so its build walks
back as far as ``cached_candidate_window`` without a REST call; after a restart it holds
nothing and reads one history page. A replay says which of the two it shows.
"""

from __future__ import annotations

from conversation.replay.log_source import LogSource
from conversation.sources.cache import ChannelCache


class ReplayCaches:
    """Cold: a fresh cache per trigger, so ``rest_calls`` is what a trigger the bot knows
    nothing about costs. Warm: the log up to each trigger delivered as gateway messages, one
    cache shared while the triggers go forward (a trigger earlier than the last one starts a
    new cache: it must not see later messages)."""

    def __init__(self, source: LogSource, *, warm: bool) -> None:
        self.source = source
        self.warm = warm
        self._shared: ChannelCache | None = None
        self._fed = 0

    def for_trigger(self, trigger_id: int) -> ChannelCache:
        """The cache a build of ``trigger_id`` starts from (the trigger itself in it, warm, as
        the gateway delivered it before the bot answered)."""
        if not self.warm:
            return ChannelCache(self.source.channel_id)
        messages = self.source.messages
        if self._shared is None or (self._fed and messages[self._fed - 1].id > trigger_id):
            self._shared, self._fed = ChannelCache(self.source.channel_id), 0
        while self._fed < len(messages) and messages[self._fed].id <= trigger_id:
            self._shared.on_gateway_message(messages[self._fed])
            self._fed += 1
        return self._shared
