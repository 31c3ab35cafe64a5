"""Running a slice of the bot's shards in this process.

Discord splits a big bot's guilds over shards by ``(guild_id >> 22) % shard_count`` (direct
messages all go to shard 0); each process runs the shards in ``[discord] shard_ids`` over one
shared store. Without ``shard_count`` the bot stays an ordinary single-connection client, so
small installations keep exactly the behaviour they had.
"""

from __future__ import annotations

from typing import Any

import nextcord

from bot.config.schema import Config, DiscordSettings
from bot.serve.client import ThreadwiseClient


class ShardedThreadwiseClient(ThreadwiseClient, nextcord.AutoShardedClient):
    """The same client, its gateway split over the configured shards."""

    def __init__(self, config: Config, **options: Any) -> None:
        super().__init__(config, **options, **shard_options(config.discord))
        self._ready_shards: set[int] = set()

    async def on_shard_ready(self, shard_id: int) -> None:
        # A shard that identifies again lost the events in between (nextcord sends on_ready
        # only once): live coverage stops everywhere, each channel's next message starts it.
        if shard_id in self._ready_shards:
            for cache in self.caches:
                cache.stop_live()
        self._ready_shards.add(shard_id)


def shard_options(settings: DiscordSettings) -> dict[str, Any]:
    """``shard_count`` and ``shard_ids`` as nextcord's ``AutoShardedClient`` takes them."""
    return {
        "shard_count": settings.shard_count,
        "shard_ids": list(settings.shard_ids) or None,
    }


def client_class(config: Config) -> type[ThreadwiseClient]:
    """The sharded client when ``[discord] shard_count`` is set, else the plain one."""
    return ShardedThreadwiseClient if config.discord.shard_count is not None else ThreadwiseClient
