"""Running the builder over a replayed channel log, as the bot would with a cold cache (or,
``warm``, with the cache a bot watching the channel holds)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from conversation.common.settings import ContextSettings
from conversation.replay.log_source import LogSource
from conversation.replay.replay_cache import ReplayCaches
from conversation.selection.builder import ContextBuilder
from conversation.selection.result import ContextSelection
from conversation.sources.reader import ChannelReader


async def select_contexts(
    source: LogSource,
    settings: ContextSettings,
    triggers: Iterable[int] | None = None,
    *,
    warm: bool = False,
) -> AsyncIterator[ContextSelection]:
    """The context of each trigger (default: every message), each built from a cold cache.

    A cold cache per trigger is the default: ``rest_calls`` then says what the same build would
    cost against Discord for a trigger the bot knows nothing about. ``warm`` shows instead what
    a bot that saw the channel's messages arrive builds (its walk reaches
    ``cached_candidate_window``, with no REST call).
    """
    builder = ContextBuilder(settings)
    wanted = [message.id for message in source.messages] if triggers is None else list(triggers)
    caches = ReplayCaches(source, warm=warm)
    for trigger_id in wanted:
        trigger = source.message(trigger_id)
        if trigger is None:
            raise KeyError(f"{source.export.path}: no message {trigger_id} in the log")
        reader = ChannelReader(source, caches.for_trigger(trigger_id))
        yield await builder.build(trigger, reader)
