"""Discord's permission bits, and what a member may do in a channel, computed as Discord does.

The stand-in refuses what Discord refuses (403, code 50013 Missing Permissions) when the bot
reacts, starts a thread or attaches a file without the permission; so a test can take one away
from the bot in one channel with a member overwrite and see the bot do without, as it would on a
server whose admins did the same (https://discord.com/developers/docs/topics/permissions).
"""

from __future__ import annotations

from typing import Any

Payload = dict[str, Any]

ADMINISTRATOR = 1 << 3
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
MENTION_EVERYONE = 1 << 17
USE_APPLICATION_COMMANDS = 1 << 31
MANAGE_THREADS = 1 << 34
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
ALL_PERMISSIONS = (1 << 51) - 1

# The bot's role in every guild of the stand-in: what an invite URL asking for the bot's needs
# grants.
DEFAULT_BOT_PERMISSIONS = (
    ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)
# In a DM nothing is granted or refused by roles: anything but moderating the other's messages.
DM_PERMISSIONS = ALL_PERMISSIONS & ~(ADMINISTRATOR | MANAGE_MESSAGES | MANAGE_THREADS)


def channel_permissions(
    guild_id: str, roles: dict[str, Payload], member: Payload, overwrites: list[Payload]
) -> int:
    """A member's permissions in a guild channel with these overwrites (a thread: its parent's).

    Discord's order: @everyone's role and the member's roles give the base (Administrator gives
    everything), then the channel's @everyone overwrite, its overwrites of the member's roles
    (denials before grants) and the member's own overwrite apply; without View Channel nothing
    else counts.
    """
    member_roles = [str(role_id) for role_id in member.get("roles", [])]
    base = _bits(roles.get(guild_id, {}).get("permissions"))
    for role_id in member_roles:
        base |= _bits(roles.get(role_id, {}).get("permissions"))
    if base & ADMINISTRATOR:
        return ALL_PERMISSIONS
    by_target = {(str(o["id"]), int(o.get("type", 0))): o for o in overwrites}
    permissions = _overwrite(base, by_target.get((guild_id, 0)))
    role_allow = role_deny = 0
    for role_id in member_roles:
        overwrite = by_target.get((role_id, 0))
        if overwrite is not None:
            role_allow |= _bits(overwrite.get("allow"))
            role_deny |= _bits(overwrite.get("deny"))
    permissions = (permissions & ~role_deny) | role_allow
    user_id = str(member.get("user", {}).get("id", ""))
    permissions = _overwrite(permissions, by_target.get((user_id, 1)))
    return permissions if permissions & VIEW_CHANNEL else 0


def _overwrite(permissions: int, overwrite: Payload | None) -> int:
    if overwrite is None:
        return permissions
    return (permissions & ~_bits(overwrite.get("deny"))) | _bits(overwrite.get("allow"))


def _bits(value: Any) -> int:
    return int(value or 0)
