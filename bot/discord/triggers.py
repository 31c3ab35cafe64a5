"""When the bot answers a message, and who may make it answer.

Kept free of I/O so the rules can be read (and tested) in one place: a message is answered when
it mentions the bot, replies to one of its messages, is a DM (if allowed) or is in an always-on
channel; never when the bot wrote it, and not when another bot did unless configured. Then the
permission lists apply: blocks always win, empty allow-lists allow everyone. In a DM the
author's roles are those they hold in the guilds the bot shares with them
(``bot.discord.dm_roles``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal, Protocol

from bot.config.schema import PermissionSettings, TriggerSettings
from conversation.sources import MessageLike


class TriggerMessage(MessageLike, Protocol):
    """A message the bot may answer: what the context builder reads, plus where it was posted
    (a nextcord ``Message`` satisfies it; tests drive real ones from the fake Discord)."""

    @property
    def channel(self) -> Any: ...  # a text channel, thread or DM (nextcord's union of them)

    @property
    def guild(self) -> Any: ...  # None in a DM

    def to_reference(self, *, fail_if_not_exists: bool = True) -> Any: ...


TriggerKind = Literal["mention", "reply", "dm", "always_on", "bot_thread"]


def trigger_kind(
    message: TriggerMessage,
    bot_user_id: int,
    settings: TriggerSettings,
    *,
    bot_message: bool = False,
) -> TriggerKind | None:
    """Why this message calls for an answer, or None. ``bot_message``: it replies to the bot
    (known from the cache when the payload did not carry the referenced message)."""
    author = message.author
    if author.id == bot_user_id:
        return None
    if getattr(author, "bot", False) and not settings.answer_bots:
        return None
    if getattr(message, "guild", None) is None:
        return "dm" if settings.allow_dms else None
    if any(user.id == bot_user_id for user in message.mentions):
        return "mention"
    reference = message.reference
    if reference is not None:
        resolved = reference.resolved
        if bot_message or getattr(getattr(resolved, "author", None), "id", None) == bot_user_id:
            return "reply"
    if message.channel.id in settings.always_on_channels:
        return "always_on"
    parent = getattr(message.channel, "parent_id", None)
    if parent is not None and parent in settings.always_on_channels:
        return "always_on"
    if parent is not None and getattr(message.channel, "owner_id", None) == bot_user_id:
        return "bot_thread"  # a thread the bot opened for its conversation: all of it is
    return None


def has_role_rules(settings: PermissionSettings) -> bool:
    """Whether permissions depend on roles (which a DM's author does not carry)."""
    return bool(settings.blocked_roles or settings.allowed_roles)


def permitted(
    message: TriggerMessage,
    settings: PermissionSettings,
    *,
    roles: Collection[int] | None = None,
) -> bool:
    """Whether the author may use the bot in this channel.

    ``roles``: the author's role ids when the message does not carry them (a DM: see
    ``bot.discord.dm_roles``); by default, those of the author as a guild member.
    """
    author_id = message.author.id
    channel_ids = {message.channel.id}
    parent = getattr(message.channel, "parent_id", None)
    if parent is not None:
        channel_ids.add(parent)  # a thread follows its channel's rules
    role_ids = (
        set(roles)
        if roles is not None
        else {role.id for role in getattr(message.author, "roles", [])}
    )
    if author_id in settings.blocked_users or channel_ids & set(settings.blocked_channels):
        return False
    if role_ids & set(settings.blocked_roles):
        return False
    # Allow-lists of users and roles add up: being listed in either admits.
    restricted = bool(settings.allowed_users or settings.allowed_roles)
    listed = author_id in settings.allowed_users or bool(role_ids & set(settings.allowed_roles))
    if restricted and not listed:
        return False
    is_dm = getattr(message, "guild", None) is None
    allowed_channels = set(settings.allowed_channels)
    return not allowed_channels or is_dm or bool(channel_ids & allowed_channels)
