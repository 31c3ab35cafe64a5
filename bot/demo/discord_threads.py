"""Threads in the stand-in: started from a message, joined by whoever posts in them, unarchived by
a post, with the gateway events Discord sends for each.

Starting a public thread from a message (``POST /channels/{id}/messages/{id}/threads``, what
nextcord's ``Message.create_thread`` calls) does what Discord does: the thread takes the
message's id, the starter joins it, and the gateway carries THREAD_CREATE (``newly_created``),
THREAD_MEMBERS_UPDATE for the starter, MESSAGE_UPDATE of the message (now with its ``thread``
and the Has Thread flag) and MESSAGE_CREATE of the thread's first message, a Thread Starter
Message (type 21: no content, a reference to the message it was started from, authored by the
starter). It needs Create Public Threads, or Discord answers 403 Missing Permissions.

Posting in a thread joins the poster, as ``PUT …/thread-members/@me`` does
(THREAD_MEMBERS_UPDATE: to every session when the bot joined, otherwise only to sessions with
the GUILD_MEMBERS intent), and unarchives an archived, unlocked thread (THREAD_UPDATE), as on
Discord.
"""

from __future__ import annotations

from bot.demo.discord_gateway import INTENT_GUILD_MEMBERS, INTENT_GUILDS, Gateway
from bot.demo.discord_permissions import CREATE_PUBLIC_THREADS, SEND_MESSAGES_IN_THREADS
from bot.demo.discord_state import (
    MESSAGE_FLAG_HAS_THREAD,
    MESSAGE_TYPE_THREAD_STARTER,
    ApiError,
    DiscordState,
    Payload,
    invalid_form,
    missing_permissions,
)
from conversation.replay import DceUser

ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)  # minutes, the only ones Discord takes
THREAD_PARENT_TYPES = (0, 5)  # text and announcement channels


def wrong_channel_type() -> ApiError:
    return ApiError(400, 50024, "Cannot execute action on this channel type")


class Threads:
    """Starts threads and keeps their membership and archive state, dispatching as it goes."""

    def __init__(self, state: DiscordState, gateway: Gateway) -> None:
        self.state = state
        self.gateway = gateway

    async def start_from_message(
        self,
        channel_id: str,
        message_id: str,
        body: Payload,
        *,
        by: DceUser,
        permissions: int | None = None,
    ) -> Payload:
        """Start a public thread from a message; returns the thread as REST serves it.

        ``permissions``: the starter's in the channel, checked as Discord does (None: a test
        speaking as a user, not checked).
        """
        state = self.state
        channel = state.channel(channel_id)
        if channel["type"] not in THREAD_PARENT_TYPES:
            raise wrong_channel_type()
        source = state.raw_message(channel["id"], message_id)
        if permissions is not None and not permissions & CREATE_PUBLIC_THREADS:
            raise missing_permissions()
        if source["id"] in state.channels:
            raise ApiError(400, 160004, "A thread has already been created for this message")
        name = _thread_name(body.get("name"))
        duration = body.get("auto_archive_duration") or channel.get(
            "default_auto_archive_duration", 1440
        )
        if duration not in ARCHIVE_DURATIONS:
            raise invalid_form(
                "auto_archive_duration",
                "BASE_TYPE_CHOICES",
                f"Value must be one of {set(ARCHIVE_DURATIONS)}.",
            )
        thread = state.add_thread(
            source["id"],
            channel["id"],
            name,
            private=False,
            archived=False,
            members=[],
            owner_id=by.id,
            auto_archive_duration=duration,
            rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
        )
        joined = state.join_thread(thread["id"], by)
        source["thread"] = thread
        source["flags"] = int(source.get("flags") or 0) | MESSAGE_FLAG_HAS_THREAD
        await self.gateway.dispatch(
            "THREAD_CREATE", thread | {"newly_created": True}, intent=INTENT_GUILDS
        )
        await self._members_update(joined, by)
        await self.gateway.dispatch_message("MESSAGE_UPDATE", state.render(source))
        starter = state.create_message(
            thread["id"],
            by,
            "",
            reply_to=source["id"],
            message_type=MESSAGE_TYPE_THREAD_STARTER,
        )
        await self.gateway.dispatch_message("MESSAGE_CREATE", starter)
        return thread

    def check_post(self, channel_id: str, *, permissions: int | None = None) -> None:
        """Refuse a post in a thread as Discord does: without Send Messages in Threads (when
        ``permissions`` are given), or in a locked thread that is archived."""
        metadata = self.state.channel(channel_id).get("thread_metadata")
        if metadata is None:
            return
        if permissions is not None and not permissions & SEND_MESSAGES_IN_THREADS:
            raise missing_permissions()
        if metadata.get("archived") and metadata.get("locked"):
            raise ApiError(400, 50083, "Thread is archived")

    async def posted(self, channel_id: str, author: DceUser) -> None:
        """What a post in a thread does besides the message: it unarchives the thread and the
        poster joins it. Nothing for other channels."""
        thread = self.state.channel(channel_id)
        metadata = thread.get("thread_metadata")
        if metadata is None:
            return
        if metadata.get("archived"):
            metadata["archived"] = False
            metadata["archive_timestamp"] = self.state.now_iso()
            await self.gateway.dispatch("THREAD_UPDATE", thread, intent=INTENT_GUILDS)
        await self.joined(thread["id"], author)

    async def joined(self, thread_id: str, user: DceUser) -> None:
        """``user`` joins the thread (nothing if they had)."""
        await self._members_update(self.state.join_thread(thread_id, user), user)

    async def _members_update(self, event: Payload | None, user: DceUser) -> None:
        if event is None:
            return
        # Others joining reach only sessions with the members intent; the bot's own joining
        # reaches every session.
        intent = INTENT_GUILDS if user.id == self.state.bot.id else INTENT_GUILD_MEMBERS
        await self.gateway.dispatch("THREAD_MEMBERS_UPDATE", event, intent=intent)


def _thread_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise invalid_form("name", "BASE_TYPE_REQUIRED", "This field is required")
    if len(name) > 100:
        raise invalid_form("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
    return name
