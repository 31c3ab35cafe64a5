"""Who may see stored content in Discord: whoever can view its channel now.

The store keeps answers from every channel and DM. Anything that shows a stored interaction in
Discord (``/context``) must not become a window into a private channel or someone else's DM, so
an interaction is shown only to a person who can view its channel at the time of asking (guild
permissions as Discord computes them, channel overwrites and roles included; for a DM, only the
person the bot talked with there). Everyone else is told it does not exist, in the same words as
for an id that was never answered, so asking does not reveal that it exists.
"""

from __future__ import annotations

from typing import Any

import nextcord


def may_view_channel(
    client: nextcord.Client,
    asker: nextcord.abc.User,
    *,
    guild_id: int | None,
    channel_id: int,
    dm_participant_id: int,
) -> bool:
    """Whether ``asker`` can view the channel an interaction happened in, right now.

    ``dm_participant_id`` is the person a DM interaction answered (its trigger's author); it is
    only consulted when ``guild_id`` is None. Unknown channels, guilds the bot left, and members
    it cannot resolve are refused: when in doubt, nothing is shown.
    """
    if guild_id is None:
        return asker.id == dm_participant_id
    channel = client.get_channel(channel_id)
    guild = getattr(channel, "guild", None)
    if channel is None or guild is None or guild.id != guild_id:
        return False
    member = _member_in(guild, asker)
    if member is None:
        return False
    permissions = channel.permissions_for(member)  # type: ignore[union-attr]
    if not permissions.view_channel:
        return False
    if isinstance(channel, nextcord.Thread) and channel.is_private():
        # A private thread is visible to its members and to those who manage threads.
        return permissions.manage_threads or channel.get_member(member.id) is not None
    return True


def _member_in(guild: Any, asker: nextcord.abc.User) -> nextcord.Member | None:
    """The asker as a member of ``guild`` (the interaction's own member object when it fits)."""
    if isinstance(asker, nextcord.Member) and asker.guild.id == guild.id:
        return asker
    return guild.get_member(asker.id)
