"""Who the bot's messages may ping: nobody, unless the operator says otherwise.

A model can be talked into writing ``@everyone`` or ``<@&role>``; what Discord does with that is
decided by the ``allowed_mentions`` sent with each message, so that is the real guard. The
text-level defuse of ``@everyone``/``@here`` is defence in depth: it also covers a message sent
through a code path that forgot to pass ``allowed_mentions``, and text quoted elsewhere.
"""

from __future__ import annotations

import nextcord

from bot.config.schema import MentionSettings
from conversation.common import ZERO_WIDTH_SPACE, defuse_mass_mentions

__all__ = ["ZERO_WIDTH_SPACE", "allowed_mentions", "defuse_mass_mentions", "make_safe"]


def allowed_mentions(settings: MentionSettings) -> nextcord.AllowedMentions:
    """The ``AllowedMentions`` for every message the bot sends (and for the client default)."""
    return nextcord.AllowedMentions(
        everyone=settings.allow_everyone,
        users=settings.allow_user_mentions,
        roles=settings.allow_role_mentions,
        replied_user=settings.mention_replied_user,
    )


def make_safe(text: str, settings: MentionSettings) -> str:
    """Defuse mass mentions unless the operator allowed them. Apply before splitting."""
    return text if settings.allow_everyone else defuse_mass_mentions(text)
