"""Running the builder over a replayed channel log, as the bot would with a cold cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from conversation.builder import ContextBuilder
from conversation.cache import ChannelCache
from conversation.log_source import LogSource
from conversation.reader import ChannelReader
from conversation.selection import ContextSelection
from conversation.settings import ContextSettings


async def select_contexts(
    source: LogSource,
    settings: ContextSettings,
    triggers: Iterable[int] | None = None,
) -> AsyncIterator[ContextSelection]:
    """The context of each trigger (default: every message), each built from a cold cache.

    A cold cache per trigger is deliberate: ``rest_calls`` then says what the same build would
    cost against Discord for a trigger the bot knows nothing about.
    """
    builder = ContextBuilder(settings)
    wanted = [message.id for message in source.messages] if triggers is None else list(triggers)
    for trigger_id in wanted:
        trigger = source.message(trigger_id)
        if trigger is None:
            raise KeyError(f"{source.export.path}: no message {trigger_id} in the log")
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        yield await builder.build(trigger, reader)
