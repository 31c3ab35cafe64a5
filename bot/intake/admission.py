"""Whether an arriving message calls for an answer, and why: what turns it into a ``Trigger``.

A message is answered when it calls the bot (``bot.discord.triggers``: a mention, a reply to
the bot, a DM, an always-on channel) or continues the bot's conversation without calling it
(``conversation.selection.follower``), when it was not claimed before (``once``: a gateway's second
delivery, an answer before a restart) and when its author may use the bot there (the
permission lists; a DM author's roles are looked up in the servers the bot shares with them,
``bot.discord.dm_roles``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import nextcord

from bot.config.schema import PermissionSettings, TriggerSettings
from bot.discord.dm_roles import DmRoles, RoleLookupFailed
from bot.discord.triggers import has_role_rules, permitted, trigger_kind
from bot.discord.visibility import may_read_history
from bot.intake.once import AnsweredOnce
from bot.intake.trigger import Trigger
from conversation.prompt import shown_name
from conversation.selection import Follower, follow_enabled, is_seal
from conversation.sources import ChannelCache

log = logging.getLogger(__name__)


class Admission:
    """The door every gateway message goes through; the bot's own teach the follower when it
    last spoke in a channel."""

    def __init__(
        self,
        *,
        follower: Follower,
        answered_once: AnsweredOnce,
        dm_roles: DmRoles,
        permissions: Callable[[], PermissionSettings],
        triggers_for: Callable[[Any], TriggerSettings],
    ) -> None:
        """``permissions`` and ``triggers_for`` (a channel's ``[triggers]``) are read per
        message, so a reloaded config applies to the next one."""
        self.follower = follower
        self.answered_once = answered_once
        self.dm_roles = dm_roles
        self._permissions = permissions
        self._triggers_for = triggers_for

    async def admit(
        self, message: nextcord.Message, cache: ChannelCache, bot_id: int
    ) -> Trigger | None:
        """The trigger ``message`` is (``cache``: its channel's, holding it), or None."""
        reference = message.reference
        replies_to_bot = False  # known from the cache when the payload does not carry it
        if reference is not None and reference.message_id is not None:
            known = cache.get(reference.message_id)
            replies_to_bot = getattr(getattr(known, "author", None), "id", None) == bot_id
        settings = self._triggers_for(message.channel)
        kind = trigger_kind(message, bot_id, settings, bot_message=replies_to_bot)
        if message.author.id == bot_id and not is_seal(message, bot_id):
            self.follower.saw_bot_message(message, message.channel.id)
        followed = None if kind is not None else self._follows(message, cache, bot_id, settings)
        if followed is not None:
            kind = "follow"
        if kind is None:
            return None
        if not await self.answered_once.claim(message.id):
            log.info("message %s delivered again or answered before; not answering", message.id)
            return None
        if not await self._permitted(message):
            log.info("ignored message %s from %s: not permitted", message.id, message.author.id)
            return None
        if followed is not None:
            log.info("following message %s: %s", message.id, followed)
        return Trigger(message, kind, followed)

    def _follows(
        self, message: nextcord.Message, cache: ChannelCache, bot_id: int, settings: TriggerSettings
    ) -> str | None:
        """The explanation line of a message that calls no one, answered when it continues the
        bot's conversation (``conversation.selection.follower``); None when it is not. From the
        cache alone, never for a bot or in a DM, and never for a member who may not read the
        channel's history (the conversation it would continue is that history: issue 23's
        rule, ``bot.discord.visibility``)."""
        if (
            message.guild is None
            or message.author.id == bot_id
            or getattr(message.author, "bot", False)
            or not may_read_history(message.channel, message.author)
            or not follow_enabled(settings, message.channel)
            or not self.follower.spoke_lately(message, message.channel.id, settings.follow_minutes)
        ):
            return None
        decision = self.follower.decide(message, cache, bot_id, settings)
        if not decision.answer or decision.kind != "followed":
            return None

        def name_of(user_id: int) -> str:
            """Named as the prompt names them (``shown_name``: not nextcord's display_name)."""
            member = message.guild.get_member(user_id) if message.guild is not None else None
            if member is None:
                member = self.follower.author_in(cache, message, user_id)
            return (shown_name(member) if member is not None else "") or f"user {user_id}"

        return decision.describe(name_of)

    async def _permitted(self, message: nextcord.Message) -> bool:
        """The permission lists, with a DM author's roles looked up in the shared guilds."""
        settings = self._permissions()
        if message.guild is not None or not has_role_rules(settings):
            return permitted(message, settings)
        if message.author.id in settings.blocked_users:
            return False  # no lookup needed to refuse
        try:
            roles = await self.dm_roles.held(
                message.author.id, (*settings.blocked_roles, *settings.allowed_roles)
            )
        except RoleLookupFailed as error:
            # Blocks always win: a person whose roles cannot be checked is not answered.
            log.warning("roles of %s for a DM unknown, not answering: %s", message.author.id, error)
            return False
        return permitted(message, settings, roles=roles)
