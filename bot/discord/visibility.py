"""Who may see what in Discord, decided in one place: ``can_view(channel, member)``.

Two things show Discord content through the bot to a person: ``/context`` (a stored answer and the
messages it was built from) and message links (a linked message joins the asker's context, and so
the answer). Either would be a window into a channel the person cannot open if it judged
visibility differently from Discord, so both ask ``can_view``, for the asker and for the bot.

Discord's rule, as the bot applies it: the member must be able to view the channel and read its
history (roles and channel overwrites, as ``permissions_for`` computes them; a thread takes its
parent's permissions); a private thread is, besides, visible only to its members and to those
who may manage threads. Without the privileged members intent the bot does not see who joined a
thread, so membership it has not cached is asked of Discord (one request, only for a private
thread). When in doubt (no parent channel, a failed request) the answer is no.

The context of an answer follows the same rule: an asker without Read Message History in the
channel gets a context of only what they may read (``history_restriction``; what it lets in is
``conversation.sources.read_access``), so the bot is no window into the history either.

For ``/context``, an answer in a DM is shown only to the person the bot talked with there, and
anyone refused is told the answer does not exist, in the same words as for an id that was never
answered, so asking does not reveal that it exists.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import nextcord

from bot.discord.compat import is_thread_member
from conversation.sources import HistoryRestriction

log = logging.getLogger(__name__)
# Every way a request to Discord can fail: its answers, and a connection that drops
# (aiohttp's errors are not OSErrors, and nextcord passes them through).
REQUEST_FAILED = (nextcord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)


async def can_view(channel: Any, member: nextcord.Member, *, history: bool = True) -> bool:
    """Whether ``member`` can open ``channel`` and read its messages, right now; with
    ``history=False``, only what is said there (an answer whose context held only what they
    may read without Read Message History)."""
    try:
        permissions = channel.permissions_for(member)
    except nextcord.ClientException:  # a thread whose parent channel is not cached
        return False
    if not (permissions.view_channel and (permissions.read_message_history or not history)):
        return False
    if isinstance(channel, nextcord.Thread) and channel.is_private():
        return permissions.manage_threads or await _in_thread(channel, member)
    return True


def may_read_history(channel: Any, user: Any) -> bool:
    """Whether ``user`` has Read Message History in ``channel`` (a thread: its parent's), now.

    In a DM the person talking with the bot reads the whole conversation. In a server, a user the
    bot cannot resolve to a member, or a thread whose parent is not cached, is refused: when in
    doubt, only what they wrote and were answered is theirs.
    """
    guild = getattr(channel, "guild", None)
    if guild is None:
        return True
    member = member_in(guild, user)
    if member is None:
        return False
    try:
        permissions = channel.permissions_for(member)
    except nextcord.ClientException:  # a thread whose parent channel is not cached
        return False
    return bool(permissions.read_message_history)


def history_restriction(trigger: Any, bot_id: int) -> HistoryRestriction | None:
    """What the context of ``trigger`` may hold when its author may not read the history of its
    channel; None when they may read all of it.

    The one rule for everything that reads a channel on a member's behalf (the context builder,
    following a conversation, tools that read Discord): call it with the message that asked,
    and keep to ``HistoryRestriction.allows`` (or read through
    ``conversation.sources.read_access.RestrictedReader``) whenever it is not None.
    """
    if may_read_history(trigger.channel, trigger.author):
        return None
    return HistoryRestriction.for_trigger(trigger, bot_id)


async def _in_thread(thread: nextcord.Thread, member: nextcord.Member) -> bool:
    """Whether ``member`` joined the private ``thread``: from the cache when known, else asked."""
    known = [*thread.members, *([thread.me] if thread.me is not None else [])]
    if any(joined.id == member.id for joined in known):
        return True
    try:
        return await is_thread_member(thread, member.id)
    except REQUEST_FAILED as error:
        log.warning("membership of thread %s could not be checked: %s", thread.id, error)
        return False


async def may_view_channel(
    client: nextcord.Client,
    asker: nextcord.abc.User,
    *,
    guild_id: int | None,
    channel_id: int,
    dm_participant_id: int,
    restricted: bool = False,
) -> bool:
    """Whether ``asker`` can view the channel an interaction happened in, right now.

    ``dm_participant_id`` is the person a DM interaction answered (its trigger's author); it is
    only consulted when ``guild_id`` is None. Unknown channels, guilds the bot left, members it
    cannot resolve and failed requests are refused: when in doubt, nothing is shown.
    ``restricted``: the interaction's context held only what its asker may read without Read
    Message History (see ``history_restriction``); then that asker may see it without it.
    """
    if guild_id is None:
        return asker.id == dm_participant_id
    guild = client.get_guild(guild_id)
    if guild is None:
        return False
    try:
        channel = await channel_in(guild, channel_id)
    except REQUEST_FAILED:
        return False
    member = member_in(guild, asker)
    history = not (restricted and asker.id == dm_participant_id)
    return (
        channel is not None
        and member is not None
        and await can_view(channel, member, history=history)
    )


async def channel_in(guild: nextcord.Guild, channel_id: int) -> Any:
    """A channel or thread of ``guild``: from the cache, else fetched (an archived thread is not
    cached after a restart); None when Discord does not know it or will not show it."""
    channel = guild.get_channel_or_thread(channel_id)
    if channel is not None:
        return channel
    try:
        return await guild.fetch_channel(channel_id)
    except (nextcord.NotFound, nextcord.Forbidden, nextcord.InvalidData):
        return None


def member_in(guild: Any, user: Any) -> nextcord.Member | None:
    """``user`` as a member of ``guild`` (the object itself when it already is one there)."""
    if isinstance(user, nextcord.Member) and user.guild.id == guild.id:
        return user
    return guild.get_member(user.id)
