"""The settings in effect where a DiscordChatExporter export was: its ``[[channels]]`` table's.

``replay``, ``contexts``, ``follow`` and the studio answer a log as the bot would in its channel.
An export is a file, not Discord: where its channel was is read from what the exporter wrote.
"""

from __future__ import annotations

from bot.config.channels import ChannelSettings, Place
from bot.config.schema import Config
from conversation.replay import ChannelExport


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
