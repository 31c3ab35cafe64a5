"""Reactions in the stand-in: who reacted with what, on which message, and every change in order.

Discord's rules as the bot meets them: reacting needs Read Message History, and Add Reactions
unless someone already reacted with that emoji (else 403 Missing Permissions); reacting again
with the same emoji, or taking back a reaction one never made, changes nothing and sends no
event; removing someone else's reaction, or clearing a message's, needs Manage Messages; a
message holds at most 20 different emoji; a custom emoji the guild does not have (the stand-in's
guilds have none) is 400 Unknown Emoji, and so is a name that is no emoji at all.

A message carries its reactions as Discord serves them (``reactions``: count, ``me``, the emoji),
and each change is dispatched (MESSAGE_REACTION_ADD / _REMOVE / _REMOVE_ALL / _REMOVE_EMOJI, to
sessions with the guild or direct message reactions intent) and recorded in :attr:`changes`, so a
test can tell that a reaction came and went, and when.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from bot.demo.discord_gateway import (
    INTENT_DIRECT_MESSAGE_REACTIONS,
    INTENT_GUILD_MESSAGE_REACTIONS,
    Gateway,
)
from bot.demo.discord_permissions import ADD_REACTIONS, MANAGE_MESSAGES, READ_MESSAGE_HISTORY
from bot.demo.discord_state import (
    ApiError,
    DiscordState,
    Payload,
    Signal,
    missing_permissions,
)
from conversation.replay import DceUser, user_payload

MAX_EMOJI_PER_MESSAGE = 20
CUSTOM_EMOJI = re.compile(r"^(?:a:)?[\w~]+:\d+$")


class ReactionChange(BaseModel):
    """One reaction added or taken away, as the stand-in saw it."""

    model_config = ConfigDict(frozen=True)

    channel_id: int
    message_id: int
    user_id: int
    emoji: str  # as the route names it: the character(s), or ``name:id`` for a custom emoji
    added: bool
    time: datetime


def unknown_emoji() -> ApiError:
    return ApiError(400, 10014, "Unknown Emoji")


def emoji_payload(emoji: str) -> Payload:
    """The partial emoji object of a reaction named as in the route (``%F0%9F%91%80`` decoded).

    Only Unicode emoji exist here: the stand-in's guilds have no custom ones.
    """
    text = emoji.strip(":")
    if CUSTOM_EMOJI.match(text) or not text or any(c.isspace() for c in text):
        raise unknown_emoji()
    if all(ord(c) < 0x80 for c in text):  # "thumbsup", ":)": names and text, not emoji
        raise unknown_emoji()
    return {"id": None, "name": text}


class Reactions:
    """Every message's reactions; changes dispatch their gateway event and are recorded."""

    def __init__(self, state: DiscordState, gateway: Gateway) -> None:
        self.state = state
        self.gateway = gateway
        self.changes: list[ReactionChange] = []
        self.changed = Signal()
        # message id -> emoji -> ids of the users who reacted with it, in order
        self._users: dict[int, dict[str, list[str]]] = {}

    def on(self, message_id: int | str) -> dict[str, list[str]]:
        """Who reacted with what on a message now (emoji in the order first used)."""
        return {emoji: list(users) for emoji, users in self._users.get(int(message_id), {}).items()}

    async def add(
        self,
        channel_id: int | str,
        message_id: int | str,
        user: DceUser,
        emoji: str,
        *,
        permissions: int | None = None,
    ) -> bool:
        """``user`` reacts; False if they had already. ``permissions``: the reacting bot's in the
        channel, checked as Discord does (None: a test speaking as a user, not checked)."""
        channel, raw = self._message(channel_id, message_id)
        partial = emoji_payload(emoji)
        key = partial["name"]
        by_emoji = self._users.setdefault(int(raw["id"]), {})
        users = by_emoji.get(key, [])
        if permissions is not None and not (
            permissions & READ_MESSAGE_HISTORY and (users or permissions & ADD_REACTIONS)
        ):
            raise missing_permissions()
        if channel.get("thread_metadata", {}).get("archived"):
            raise ApiError(400, 50083, "Thread is archived")
        if user.id in users:
            return False
        if not users and len(by_emoji) >= MAX_EMOJI_PER_MESSAGE:
            raise ApiError(400, 30010, "Maximum number of reactions reached (20)")
        by_emoji.setdefault(key, []).append(user.id)
        event = self._event(raw, user, partial)
        event |= {"message_author_id": raw["author"]["id"], "burst_colors": []}
        if "guild_id" in raw:
            event["member"] = self.state.ensure_member(raw["guild_id"], user)
        await self._changed(raw, "MESSAGE_REACTION_ADD", event, [(user.id, key)], added=True)
        return True

    async def remove(
        self,
        channel_id: int | str,
        message_id: int | str,
        user: DceUser,
        emoji: str,
        *,
        permissions: int | None = None,
    ) -> bool:
        """``user``'s reaction goes; False if there was none. ``permissions``: those of the bot
        taking it away, checked when the reaction is someone else's."""
        channel, raw = self._message(channel_id, message_id)
        partial = emoji_payload(emoji)
        if permissions is not None and user.id != self.state.bot.id:
            self._may_moderate(channel, permissions)
        by_emoji = self._users.get(int(raw["id"]), {})
        users = by_emoji.get(partial["name"], [])
        if user.id not in users:
            return False
        users.remove(user.id)
        if not users:
            del by_emoji[partial["name"]]
        event = self._event(raw, user, partial)
        changed = [(user.id, partial["name"])]
        await self._changed(raw, "MESSAGE_REACTION_REMOVE", event, changed, added=False)
        return True

    async def clear(
        self,
        channel_id: int | str,
        message_id: int | str,
        emoji: str | None = None,
        *,
        permissions: int | None = None,
    ) -> None:
        """Take every reaction (of one emoji, if given) off a message."""
        channel, raw = self._message(channel_id, message_id)
        partial = emoji_payload(emoji) if emoji is not None else None
        if permissions is not None:
            self._may_moderate(channel, permissions)
        by_emoji = self._users.get(int(raw["id"]), {})
        keys = [partial["name"]] if partial is not None else list(by_emoji)
        gone = [(user_id, key) for key in keys for user_id in by_emoji.pop(key, [])]
        event: Payload = {"channel_id": raw["channel_id"], "message_id": raw["id"]}
        if "guild_id" in raw:
            event["guild_id"] = raw["guild_id"]
        if partial is not None:
            await self._changed(
                raw, "MESSAGE_REACTION_REMOVE_EMOJI", event | {"emoji": partial}, gone, added=False
            )
        else:
            await self._changed(raw, "MESSAGE_REACTION_REMOVE_ALL", event, gone, added=False)

    def users(
        self,
        channel_id: int | str,
        message_id: int | str,
        emoji: str,
        *,
        limit: int = 25,
        after: int | None = None,
    ) -> list[Payload]:
        """The users who reacted with an emoji, by id, as ``GET …/reactions/{emoji}`` pages."""
        _, raw = self._message(channel_id, message_id)
        key = emoji_payload(emoji)["name"]
        ids = sorted(int(u) for u in self._users.get(int(raw["id"]), {}).get(key, []))
        chosen = [u for u in ids if after is None or u > after][:limit]
        return [user_payload(self.state.user(user_id)) for user_id in chosen]

    # ------------------------------------------------------------------ inside

    def _message(self, channel_id: int | str, message_id: int | str) -> tuple[Payload, Payload]:
        channel = self.state.channel(channel_id)
        return channel, self.state.raw_message(channel["id"], message_id)

    def _may_moderate(self, channel: Payload, permissions: int) -> None:
        if self.state.is_private(channel["id"]):
            raise ApiError(403, 50003, "Cannot execute action on a DM channel")
        if not permissions & MANAGE_MESSAGES:
            raise missing_permissions()

    def _event(self, raw: Payload, user: DceUser, partial: Payload) -> Payload:
        event: Payload = {
            "user_id": user.id,
            "channel_id": raw["channel_id"],
            "message_id": raw["id"],
            "emoji": partial,
            "burst": False,
            "type": 0,
        }
        if "guild_id" in raw:
            event["guild_id"] = raw["guild_id"]
        return event

    async def _changed(
        self,
        raw: Payload,
        event_name: str,
        event: Payload,
        changed: list[tuple[str, str]],
        *,
        added: bool,
    ) -> None:
        """Show the message's reactions as Discord serves them, record and dispatch the change."""
        by_emoji = self._users.get(int(raw["id"]), {})
        shown = [
            {
                "count": len(users),
                "count_details": {"burst": 0, "normal": len(users)},
                "me": self.state.bot.id in users,
                "me_burst": False,
                "emoji": {"id": None, "name": key},
                "burst_colors": [],
            }
            for key, users in by_emoji.items()
        ]
        if shown:
            raw["reactions"] = shown  # a new list: payloads served before keep what they said
        else:
            raw.pop("reactions", None)
        now = datetime.now(UTC)
        self.changes.extend(
            ReactionChange(
                channel_id=int(raw["channel_id"]),
                message_id=int(raw["id"]),
                user_id=int(user_id),
                emoji=key,
                added=added,
                time=now,
            )
            for user_id, key in changed
        )
        self.changed.notify()
        if not changed:
            return
        guild = "guild_id" in raw
        intent = INTENT_GUILD_MESSAGE_REACTIONS if guild else INTENT_DIRECT_MESSAGE_REACTIONS
        await self.gateway.dispatch(event_name, event, intent=intent)
