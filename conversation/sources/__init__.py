"""Where messages come from: the builder's view of a channel, live or cached, a page at a time.

Modules: ``source`` (the protocols a channel and a message must satisfy: a nextcord ``Message``
does, and so does a replayed one), ``snowflakes`` (Discord ids and the times they encode),
``discord_source`` (the live channel: one REST request per call), ``slim`` (cached messages with
only what a context needs), ``cache`` (the per-channel cache fed by gateway events, with the
stretches of history it holds completely), ``reader`` (cache first, the payload next, REST last),
``read_access`` (what a context may hold when its asker cannot read the channel's history).

May import ``conversation.common`` only. A change goes here when the bot should read a channel
differently (fewer REST calls, a new kind of source, what is kept in memory).
"""

from conversation.sources.cache import LIVE, CacheRegistry, ChannelCache
from conversation.sources.discord_source import (
    DISCORD_TROUBLE,
    HISTORY_UNREADABLE,
    DiscordChannelSource,
)
from conversation.sources.read_access import HistoryRestriction, RestrictedReader
from conversation.sources.reader import ChannelReader
from conversation.sources.slim import Slimmer
from conversation.sources.snowflakes import snowflake_time, time_snowflake
from conversation.sources.source import PAGE_LIMIT, MessageLike, created_ms, reference_id

__all__ = [
    "DISCORD_TROUBLE",
    "HISTORY_UNREADABLE",
    "LIVE",
    "PAGE_LIMIT",
    "CacheRegistry",
    "ChannelCache",
    "ChannelReader",
    "DiscordChannelSource",
    "HistoryRestriction",
    "MessageLike",
    "RestrictedReader",
    "Slimmer",
    "created_ms",
    "reference_id",
    "snowflake_time",
    "time_snowflake",
]
