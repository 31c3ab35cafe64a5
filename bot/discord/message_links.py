"""Reading a linked message in another channel of the trigger's server, when allowed.

The asker must be able to open the linked channel and read its history, and so must the bot:
otherwise a link would let anyone read, through the bot, a channel they cannot see. Both are
judged by ``bot.visibility.can_view``, the rule ``/context`` uses too (a private thread only for
its members and thread managers). Permissions come from the guild cache; a private thread's
membership may cost a request, an archived thread (not cached) one to fetch it, and reading the
message itself one.
"""

from __future__ import annotations

import logging

import nextcord

from bot.discord.visibility import REQUEST_FAILED, can_view, channel_in, member_in
from conversation.selection import LinkOutcome, MessageLink
from conversation.sources import MessageLike

log = logging.getLogger(__name__)

ASKER_CANNOT_VIEW = "you cannot view that channel"
BOT_CANNOT_VIEW = "I cannot read that channel"
UNKNOWN_CHANNEL = "I cannot see that channel"
GONE = "it no longer exists"
TROUBLE = "Discord did not let me read it just now"


class DiscordLinkResolver:
    """Resolves links to messages in other channels of the trigger's guild."""

    async def resolve(self, link: MessageLink, trigger: MessageLike) -> LinkOutcome:
        guild = getattr(trigger, "guild", None)
        if guild is None or link.guild_id != guild.id:
            return LinkOutcome(left_out="it is in another server")
        try:
            channel = await channel_in(guild, link.channel_id)
            if channel is None or not hasattr(channel, "fetch_message"):
                return LinkOutcome(left_out=UNKNOWN_CHANNEL)
            asker = member_in(guild, trigger.author)
            if asker is None or not await can_view(channel, asker):
                return LinkOutcome(left_out=ASKER_CANNOT_VIEW)
            if guild.me is None or not await can_view(channel, guild.me):
                return LinkOutcome(left_out=BOT_CANNOT_VIEW)
            message = await channel.fetch_message(link.message_id)
        except nextcord.NotFound:
            return LinkOutcome(left_out=GONE)
        except nextcord.Forbidden:
            return LinkOutcome(left_out=BOT_CANNOT_VIEW)
        except REQUEST_FAILED as error:
            log.warning("linked message %s could not be read: %s", link.url, error)
            return LinkOutcome(left_out=TROUBLE)
        return LinkOutcome(message=message)
