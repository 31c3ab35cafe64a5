"""Where a Discord channel is, as ``[[channels]]`` tables match it (``bot.config.channels``).

A thread is placed as its parent channel, so it takes that channel's settings (and its
``/model`` choice); its category is the parent's. Reads only what nextcord already holds: no
request is made for a parent that is not cached (it then matches by server only). Where an
exported channel was is read from the export instead: ``bot.config.export_settings``.
"""

from __future__ import annotations

from typing import Any

from bot.config.channels import Place


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
