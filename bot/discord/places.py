"""Where a Discord channel is, as ``[[channels]]`` tables match it (``bot.config.channels``).

A thread is placed as its parent channel, so it takes that channel's settings (and its
``/model`` choice); its category is the parent's. Reads only what nextcord already holds: no
request is made for a parent that is not cached (it then matches by server only).
"""

from __future__ import annotations

from typing import Any

from bot.config.channels import ChannelSettings, Place
from bot.config.schema import Config
from conversation.replay.dce import ChannelExport


def place_of(channel: Any) -> Place:
    """Where ``channel`` (a nextcord channel, thread or DM) is. A thread is placed as its parent
    channel, so it takes that channel's settings (and its /model choice)."""
    guild = getattr(channel, "guild", None)
    parent_id = getattr(channel, "parent_id", None)
    if parent_id is not None:
        parent = guild.get_channel(parent_id) if guild is not None else None
        category = getattr(parent, "category_id", None)
        return Place(parent_id, category, getattr(guild, "id", None))
    category = getattr(channel, "category_id", None)
    return Place(channel.id, category, getattr(guild, "id", None))


def place_of_export(export: ChannelExport) -> Place:
    """Where an exported channel was (``replay`` and the studio answer as the bot would there).
    DiscordChatExporter writes a thread's parent channel as its ``categoryId``."""
    guild_id = None if export.is_private else int(export.guild.id)
    category = export.channel.category_id
    category_id = int(category) if category and category.isdigit() else None
    if export.is_thread and category_id is not None:
        return Place(category_id, None, guild_id)
    return Place(int(export.channel.id), category_id, guild_id)


def settings_for_export(config: Config, export: ChannelExport) -> Config:
    """The effective config of the exported channel: its ``[[channels]]`` table's, if any."""
    if not config.channels and config.model.use is None:
        return config
    return ChannelSettings(config).settings_at(place_of_export(export))
