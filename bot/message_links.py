"""Reading a linked message in another channel of the trigger's server, when allowed.

The asker must be able to open the linked channel and read its history, and so must the bot:
otherwise a link would let anyone read, through the bot, a channel they cannot see. Permissions
come from the guild cache (roles and channel overwrites), so the check costs no request; only
reading the message itself costs one.
"""

from __future__ import annotations

import logging
from typing import Any

import nextcord

from conversation.message_links import LinkOutcome, MessageLink
from conversation.source import MessageLike

log = logging.getLogger(__name__)

ASKER_CANNOT_VIEW = "you cannot view that channel"
BOT_CANNOT_VIEW = "I cannot read that channel"
UNKNOWN_CHANNEL = "I cannot see that channel"
GONE = "it no longer exists"
TROUBLE = "Discord did not let me read it just now"


def _can_read(channel: Any, member: Any) -> bool:
    permissions = channel.permissions_for(member)
    return bool(permissions.view_channel and permissions.read_message_history)


class DiscordLinkResolver:
    """Resolves links to messages in other channels of the trigger's guild."""

    async def resolve(self, link: MessageLink, trigger: MessageLike) -> LinkOutcome:
        guild = getattr(trigger, "guild", None)
        if guild is None or link.guild_id != guild.id:
            return LinkOutcome(left_out="it is in another server")
        channel = guild.get_channel_or_thread(link.channel_id)
        if channel is None or not hasattr(channel, "fetch_message"):
            return LinkOutcome(left_out=UNKNOWN_CHANNEL)
        asker = trigger.author
        if not isinstance(asker, nextcord.Member):
            asker = guild.get_member(asker.id)
        if asker is None or not _can_read(channel, asker):
            return LinkOutcome(left_out=ASKER_CANNOT_VIEW)
        if guild.me is None or not _can_read(channel, guild.me):
            return LinkOutcome(left_out=BOT_CANNOT_VIEW)
        try:
            message = await channel.fetch_message(link.message_id)
        except nextcord.NotFound:
            return LinkOutcome(left_out=GONE)
        except nextcord.Forbidden:
            return LinkOutcome(left_out=BOT_CANNOT_VIEW)
        except (nextcord.HTTPException, OSError, TimeoutError) as error:
            log.warning("linked message %s could not be read: %s", link.url, error)
            return LinkOutcome(left_out=TROUBLE)
        return LinkOutcome(message=message)
