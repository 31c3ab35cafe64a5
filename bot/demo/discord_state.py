"""What the fake Discord knows: users, guilds, channels, messages, commands, interactions.

Kept apart from the HTTP and websocket code so that REST handlers, gateway dispatches and the
test-facing helpers (``user_says`` …) all change one store and render messages one way: a message
is stored once, and its ``referenced_message`` is resolved when it is served, the way Discord
does, so an edit or deletion of the referenced message shows up in later fetches.
"""

from __future__ import annotations

import asyncio
import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.demo.discord_permissions import (
    DEFAULT_BOT_PERMISSIONS,
    DM_PERMISSIONS,
    channel_permissions,
)
from conversation.replay import (
    PRIVATE_CHANNEL_TYPES,
    ChannelExport,
    DceUser,
    PayloadBuilder,
    member_payload,
    user_payload,
)
from conversation.sources import snowflake_time, time_snowflake

Clock = Callable[[], datetime]
Payload = dict[str, Any]

USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")
EVERYONE_MENTION = re.compile(r"@(everyone|here)\b")

MESSAGE_TYPE_REPLY = 19
MESSAGE_TYPE_THREAD_STARTER = 21
MESSAGE_FLAG_SUPPRESS_EMBEDS = 1 << 2
MESSAGE_FLAG_HAS_THREAD = 1 << 5
MESSAGE_FLAG_EPHEMERAL = 1 << 6
MESSAGE_FLAG_LOADING = 1 << 7


class ApiError(Exception):
    """A Discord error response: status plus the JSON body Discord would send."""

    def __init__(
        self, status: int, code: int, message: str, *, errors: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {message} (code {code})")
        self.status = status
        self.body: Payload = {"message": message, "code": code}
        if errors is not None:
            self.body["errors"] = errors


def missing_permissions() -> ApiError:
    return ApiError(403, 50013, "Missing Permissions")


def unknown_message() -> ApiError:
    return ApiError(404, 10008, "Unknown Message")


def unknown_channel() -> ApiError:
    return ApiError(404, 10003, "Unknown Channel")


def invalid_form(field_name: str, code: str, message: str) -> ApiError:
    errors = {field_name: {"_errors": [{"code": code, "message": message}]}}
    return ApiError(400, 50035, "Invalid Form Body", errors=errors)


class SnowflakeMint:
    """Mints strictly increasing snowflakes whose timestamp part is the clock's time.

    When the clock lags behind ids already seen (a replayed log from the future, or many ids in
    one millisecond), the next id is the last one plus one: order wins over the clock.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last = 0

    def saw(self, snowflake: int) -> None:
        self._last = max(self._last, snowflake)

    def mint(self) -> int:
        self._last = max(time_snowflake(self._clock()), self._last + 1)
        return self._last


@dataclass
class GuildRecord:
    id: str
    name: str
    roles: dict[str, Payload] = field(default_factory=dict)
    members: dict[str, Payload] = field(default_factory=dict)
    channel_ids: list[str] = field(default_factory=list)
    thread_ids: list[str] = field(default_factory=list)


class ChannelMessages:
    """One channel's messages ordered by snowflake; pages are served newest first."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.by_id: dict[int, Payload] = {}

    def put(self, payload: Payload) -> None:
        message_id = int(payload["id"])
        if message_id not in self.by_id:
            if not self.ids or message_id > self.ids[-1]:
                self.ids.append(message_id)
            else:
                bisect.insort(self.ids, message_id)
        self.by_id[message_id] = payload

    def remove(self, message_id: int) -> Payload | None:
        payload = self.by_id.pop(message_id, None)
        if payload is not None:
            del self.ids[bisect.bisect_left(self.ids, message_id)]
        return payload

    def page(
        self,
        limit: int,
        *,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
    ) -> list[int]:
        """Ids Discord would return. Precedence: around, then after, then before.

        ``around`` returns ``limit`` messages centred on the id: the message itself when it
        exists, ``(limit - 1) // 2`` newer ones and the rest older ones (a short side is not
        filled from the other). ``after`` returns the ``limit`` oldest messages after the id.
        """
        ids = self.ids
        if around is not None:
            newer_count = (limit - 1) // 2
            start = bisect.bisect_left(ids, around)
            anchored = start < len(ids) and ids[start] == around
            older_count = limit - newer_count - (1 if anchored else 0)
            older = ids[max(0, start - older_count) : start]
            newer_start = start + 1 if anchored else start
            newer = ids[newer_start : newer_start + newer_count]
            chosen = [*older, *([around] if anchored else []), *newer]
        elif after is not None:
            start = bisect.bisect_right(ids, after)
            chosen = ids[start : start + limit]
        elif before is not None:
            end = bisect.bisect_left(ids, before)
            chosen = ids[max(0, end - limit) : end]
        else:
            chosen = ids[-limit:]
        return chosen[::-1]


@dataclass
class InteractionRecord:
    """An interaction the fake dispatched, and everything the bot answered to it."""

    id: str
    token: str
    payload: Payload
    callbacks: list[Payload] = field(default_factory=list)
    original_message_id: str | None = None
    followup_message_ids: list[str] = field(default_factory=list)
    ephemeral_messages: list[Payload] = field(default_factory=list)


class DiscordState:
    """The fake's world. Every mutation returns the payloads the gateway should dispatch."""

    def __init__(
        self,
        *,
        bot_id: int,
        bot_name: str,
        bot_global_name: str | None = None,
        bot_nick: str | None = None,
        application_id: int,
        clock: Clock,
        bot_permissions: int = DEFAULT_BOT_PERMISSIONS,
    ) -> None:
        self.clock = clock
        self.mint = SnowflakeMint(clock)
        # ``bot_nick`` is the bot's server nickname in every guild; ``bot_global_name`` its
        # global display name.
        self.bot = DceUser(
            id=str(bot_id),
            name=bot_name,
            nickname=bot_nick,
            global_name=bot_global_name,
            discriminator="0000",
            is_bot=True,
        )
        self.application_id = str(application_id)
        self.bot_permissions = bot_permissions
        self.users: dict[str, DceUser] = {self.bot.id: self.bot}
        self.guilds: dict[str, GuildRecord] = {}
        self.channels: dict[str, Payload] = {}
        self.messages: dict[str, ChannelMessages] = {}
        self.message_channel: dict[int, str] = {}
        self.deleted: set[int] = set()
        self.global_commands: dict[str, Payload] = {}
        self.guild_commands: dict[str, dict[str, Payload]] = {}
        self.interactions: dict[str, InteractionRecord] = {}
        self.exports: list[ChannelExport] = []
        # thread id -> user id -> when they joined (ISO 8601), in the order they joined
        self.thread_members: dict[str, dict[str, str]] = {}

    def now_iso(self) -> str:
        return self.clock().astimezone(UTC).isoformat()

    # ------------------------------------------------------------------ users, guilds, channels

    def add_user(self, user: DceUser) -> DceUser:
        """Register a user (first registration wins, so log authors keep their roles)."""
        return self.users.setdefault(user.id, user)

    def user(self, user: int | str | DceUser) -> DceUser:
        if isinstance(user, DceUser):
            return self.add_user(user)
        found = self.users.get(str(user))
        if found is None:
            raise KeyError(f"unknown user id {user}: load a log with them or call add_user first")
        return found

    def channel(self, channel_id: int | str) -> Payload:
        found = self.channels.get(str(channel_id))
        if found is None:
            raise unknown_channel()
        return found

    def is_private(self, channel_id: int | str) -> bool:
        return self.channel(channel_id)["type"] in PRIVATE_CHANNEL_TYPES

    def guild_of(self, channel_id: int | str) -> str | None:
        return self.channel(channel_id).get("guild_id")

    def load_export(self, export: ChannelExport) -> tuple[str | None, list[str]]:
        """Store an export; returns (guild id if the guild is new, ids of new channels)."""
        builder = PayloadBuilder(export)
        channel_id = export.channel.id
        if channel_id in self.messages:
            raise ValueError(f"{export.path}: channel {channel_id} is already loaded")
        self.exports.append(export)
        for user in export.users():
            self.add_user(user)
        new_guild: str | None = None
        new_channels: list[str] = []
        if export.is_private:
            recipients = [
                user_payload(user) for user in export.users() if user.id != self.bot.id
            ] or [user_payload(self.bot)]
            self.channels[channel_id] = {
                "id": channel_id,
                "type": export.channel.type_value,
                "recipients": recipients,
                "last_message_id": export.messages[-1].id if export.messages else None,
            }
            new_channels.append(channel_id)
        else:
            guild_payload = builder.guild()
            guild = self.guilds.get(export.guild.id)
            if guild is None:
                guild = self._new_guild(export.guild.id, export.guild.name)
                new_guild = guild.id
            for role in guild_payload["roles"]:
                guild.roles.setdefault(role["id"], role)
            for member in guild_payload["members"]:
                guild.members.setdefault(member["user"]["id"], member)
            for channel in guild_payload["channels"]:
                if channel["id"] not in self.channels:
                    self.channels[channel["id"]] = channel
                    guild.channel_ids.append(channel["id"])
                    new_channels.append(channel["id"])
            for thread in guild_payload["threads"]:
                if thread["id"] not in self.channels:
                    self.channels[thread["id"]] = thread
                    guild.thread_ids.append(thread["id"])
                    new_channels.append(thread["id"])
        store = self.messages.setdefault(channel_id, ChannelMessages())
        for message in export.messages:
            payload = builder.message(message)
            store.put(payload)
            self.message_channel[int(message.id)] = channel_id
            self.mint.saw(int(message.id))
        return new_guild, new_channels

    def _new_guild(self, guild_id: str, name: str) -> GuildRecord:
        guild = GuildRecord(id=guild_id, name=name)
        self.guilds[guild_id] = guild
        bot_role_id = str(self.mint.mint())
        guild.roles[bot_role_id] = {
            "id": bot_role_id,
            "name": self.bot.name,
            "permissions": str(self.bot_permissions),
            "position": 1,
            "color": 0,
            "hoist": False,
            "managed": True,
            "mentionable": False,
            "tags": {"bot_id": self.bot.id},
        }
        guild.members[self.bot.id] = member_payload(self.bot) | {
            "user": user_payload(self.bot),
            "roles": [bot_role_id],
        }
        return guild

    def guild_create(self, guild_id: str) -> Payload:
        guild = self.guilds[guild_id]
        return {
            "id": guild.id,
            "name": guild.name,
            "owner_id": "0",
            "unavailable": False,
            "large": False,
            "joined_at": datetime(2015, 1, 1, tzinfo=UTC).isoformat(),
            "features": [],
            "emojis": [],
            "stickers": [],
            "member_count": len(guild.members),
            "roles": list(guild.roles.values()),
            "members": list(guild.members.values()),
            "channels": [self.channels[cid] for cid in guild.channel_ids],
            # As Discord does: only active threads; an archived one must be fetched.
            "threads": [
                self.as_bot_sees(self.channels[tid])
                for tid in guild.thread_ids
                if not self.channels[tid].get("thread_metadata", {}).get("archived")
            ],
            "voice_states": [],
            "presences": [],
        }

    def add_thread(
        self,
        thread_id: str,
        parent_id: str,
        name: str,
        *,
        private: bool,
        archived: bool,
        members: list[str],
        owner_id: str | None = None,
        auto_archive_duration: int = 1440,
        rate_limit_per_user: int = 0,
    ) -> Payload:
        """A thread under a guild channel, with the users who joined it (its starter first,
        unless ``owner_id`` names them)."""
        parent = self.channel(parent_id)
        guild_id = parent.get("guild_id")
        if guild_id is None:
            raise ValueError(f"channel {parent_id} is not in a guild")
        now = self.now_iso()
        thread_type = 12 if private else 10 if parent["type"] == 5 else 11
        thread = {
            "id": thread_id,
            "type": thread_type,
            "name": name,
            "guild_id": guild_id,
            "parent_id": parent_id,
            "owner_id": owner_id or (members[0] if members else self.bot.id),
            "last_message_id": None,
            "rate_limit_per_user": rate_limit_per_user,
            "flags": 0,
            "message_count": 0,
            "total_message_sent": 0,
            "member_count": len(members),
            "thread_metadata": {
                "archived": archived,
                "auto_archive_duration": auto_archive_duration,
                "archive_timestamp": now,
                "locked": False,
                "create_timestamp": now,
                **({"invitable": False} if private else {}),
            },
        }
        self.channels[thread_id] = thread
        self.guilds[guild_id].thread_ids.append(thread_id)
        self.messages.setdefault(thread_id, ChannelMessages())
        joined = datetime(2020, 1, 1, tzinfo=UTC).isoformat()
        self.thread_members[thread_id] = dict.fromkeys(members, joined)
        return thread

    def add_text_channel(
        self, channel_id: str, guild_id: str, name: str, *, category_id: str | None
    ) -> list[Payload]:
        """A text channel of a loaded guild, under a category (created if new); returns the
        new channel payloads, the category's first."""
        guild = self.guilds[guild_id]
        created = []
        if category_id is not None and category_id not in self.channels:
            category = {"id": category_id, "type": 4, "name": f"category {category_id}",
                        "position": 0, "guild_id": guild_id, "permission_overwrites": [],
                        "nsfw": False}  # fmt: skip
            self.channels[category_id] = category
            guild.channel_ids.append(category_id)
            created.append(category)
        channel = {"id": channel_id, "type": 0, "name": name, "topic": None, "position": 1,
                   "guild_id": guild_id, "permission_overwrites": [], "nsfw": False,
                   "last_message_id": None}  # fmt: skip
        if category_id is not None:
            channel["parent_id"] = category_id
        self.channels[channel_id] = channel
        guild.channel_ids.append(channel_id)
        self.messages.setdefault(channel_id, ChannelMessages())
        created.append(channel)
        return created

    def thread_member(self, thread_id: str, user_id: str) -> Payload:
        """The thread member object, as ``GET /channels/{id}/thread-members/{user}`` serves it."""
        channel = self.channel(thread_id)
        if "thread_metadata" not in channel:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        joined = self.thread_members.get(thread_id, {}).get(user_id)
        if joined is None:
            raise ApiError(404, 10007, "Unknown Member")
        return {"id": thread_id, "user_id": user_id, "join_timestamp": joined, "flags": 0}

    def join_thread(self, thread_id: str, user: DceUser) -> Payload | None:
        """Add a user to a thread's members; the THREAD_MEMBERS_UPDATE payload, or None when
        they had joined already."""
        members = self.thread_members.setdefault(thread_id, {})
        if user.id in members:
            return None
        members[user.id] = self.now_iso()
        thread = self.channel(thread_id)
        thread["member_count"] = min(len(members), 50)  # Discord stops counting at 50
        guild_id = thread["guild_id"]
        added = self.thread_member(thread_id, user.id) | {
            "member": self.ensure_member(guild_id, user),
            "presence": None,
        }
        return {
            "id": thread_id,
            "guild_id": guild_id,
            "member_count": thread["member_count"],
            "added_members": [added],
        }

    def as_bot_sees(self, channel: Payload) -> Payload:
        """A channel as served to the bot: a thread it joined carries its thread member."""
        if self.bot.id not in self.thread_members.get(channel["id"], {}):
            return channel
        return channel | {"member": self.thread_member(channel["id"], self.bot.id)}

    def bot_permissions_in(self, channel_id: int | str) -> int:
        """What the bot may do in a channel: its roles and the channel's overwrites (a thread
        takes its parent's)."""
        channel = self.channel(channel_id)
        if channel["type"] in PRIVATE_CHANNEL_TYPES:
            return DM_PERMISSIONS
        if "thread_metadata" in channel:
            channel = self.channel(channel["parent_id"])
        guild = self.guilds[channel["guild_id"]]
        member = guild.members[self.bot.id]
        overwrites = channel.get("permission_overwrites") or []
        return channel_permissions(guild.id, guild.roles, member, overwrites)

    def ensure_member(self, guild_id: str, user: DceUser) -> Payload:
        guild = self.guilds[guild_id]
        member = guild.members.get(user.id)
        if member is None:
            member = member_payload(user) | {"user": user_payload(user)}
            guild.members[user.id] = member
        return member

    def open_dm(self, recipient: DceUser) -> Payload:
        """The DM channel with a user, created on first use as Discord does."""
        for channel in self.channels.values():
            if channel["type"] == 1 and any(r["id"] == recipient.id for r in channel["recipients"]):
                return channel
        channel_id = str(self.mint.mint())
        channel = {
            "id": channel_id,
            "type": 1,
            "recipients": [user_payload(recipient)],
            "last_message_id": None,
        }
        self.channels[channel_id] = channel
        self.messages[channel_id] = ChannelMessages()
        return channel

    # ------------------------------------------------------------------ messages

    def store(self, channel_id: int | str) -> ChannelMessages:
        self.channel(channel_id)
        return self.messages.setdefault(str(channel_id), ChannelMessages())

    def raw_message(self, channel_id: int | str, message_id: int | str) -> Payload:
        payload = self.store(channel_id).by_id.get(int(message_id))
        if payload is None:
            raise unknown_message()
        return payload

    def render(self, payload: Payload, *, nested: bool = False) -> Payload:
        """A stored message as Discord serves it, ``referenced_message`` resolved now."""
        rendered = dict(payload)
        reference = payload.get("message_reference")
        if nested:
            rendered.pop("referenced_message", None)
        elif reference and (
            payload.get("type") in (MESSAGE_TYPE_REPLY, MESSAGE_TYPE_THREAD_STARTER)
            or "referenced_message" in payload
        ):
            referenced_id = int(reference["message_id"])
            where = self.message_channel.get(referenced_id)
            if where is not None:
                target = self.messages[where].by_id[referenced_id]
                # Partial, as Discord nests it even in gateway events: no member fields, no
                # guild_id (discord-api-docs#5095).
                nested_message = without_members(self.render(target, nested=True))
                nested_message.pop("guild_id", None)
                rendered["referenced_message"] = nested_message
            elif referenced_id in self.deleted:
                rendered["referenced_message"] = None
        return rendered

    def page(
        self,
        channel_id: int | str,
        limit: int,
        *,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
    ) -> list[Payload]:
        store = self.store(channel_id)
        ids = store.page(limit, before=before, after=after, around=around)
        return [self.render(store.by_id[message_id]) for message_id in ids]

    def create_message(
        self,
        channel_id: int | str,
        author: DceUser,
        content: str,
        *,
        reply_to: int | str | None = None,
        mentions: list[DceUser] | None = None,
        mention_roles: list[str] | None = None,
        mention_everyone: bool = False,
        message_type: int | None = None,
        extra: Payload | None = None,
        stored: bool = True,
    ) -> Payload:
        """Mint a new message and return it rendered; ``stored=False`` keeps it out of the
        channel (an ephemeral interaction reply)."""
        channel = self.channel(channel_id)
        channel_id = channel["id"]
        reference: Payload | None = None
        if reply_to is not None:
            where = self.message_channel.get(int(reply_to))
            if where is None:
                raise unknown_message()
            reference = {"message_id": str(reply_to), "channel_id": where}
            if self.channels[where].get("guild_id"):
                reference["guild_id"] = self.channels[where]["guild_id"]
        message_id = self.mint.mint()
        payload: Payload = {
            "id": str(message_id),
            "channel_id": channel_id,
            "author": user_payload(author),
            "content": content,
            "timestamp": snowflake_time(message_id).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": mention_everyone,
            "mentions": [self.mention(channel_id, user) for user in mentions or []],
            "mention_roles": list(mention_roles or []),
            "attachments": [],
            "embeds": [],
            "components": [],
            "pinned": False,
            "flags": 0,
            "type": message_type
            if message_type is not None
            else (MESSAGE_TYPE_REPLY if reference else 0),
        }
        guild_id = channel.get("guild_id")
        if guild_id is not None:
            payload["guild_id"] = guild_id
            payload["member"] = {
                k: v for k, v in self.ensure_member(guild_id, author).items() if k != "user"
            }
        if reference is not None:
            payload["message_reference"] = reference
        if extra:
            payload.update(extra)
        if not stored:
            return self.render(payload)
        self.messages.setdefault(channel_id, ChannelMessages()).put(payload)
        self.message_channel[message_id] = channel_id
        if "last_message_id" in channel:
            channel["last_message_id"] = str(message_id)
        if "thread_metadata" in channel and payload["type"] != MESSAGE_TYPE_THREAD_STARTER:
            # As Discord counts: the starter message is not one of the thread's messages.
            channel["message_count"] = channel.get("message_count", 0) + 1
            channel["total_message_sent"] = channel.get("total_message_sent", 0) + 1
        return self.render(payload)

    def mention(self, channel_id: str, user: DceUser) -> Payload:
        mention = user_payload(user)
        guild_id = self.channels[channel_id].get("guild_id")
        if guild_id is not None:
            mention["member"] = {
                k: v for k, v in self.ensure_member(guild_id, user).items() if k != "user"
            }
        return mention

    def mentioned_users(self, content: str) -> list[DceUser]:
        """Users of ``<@id>`` mentions in order, unknown ids skipped as Discord does."""
        seen: dict[str, DceUser] = {}
        for user_id in USER_MENTION.findall(content):
            if user_id in self.users and user_id not in seen:
                seen[user_id] = self.users[user_id]
        return list(seen.values())

    def edit_message(
        self, channel_id: int | str, message_id: int | str, changes: Payload
    ) -> Payload:
        payload = self.raw_message(channel_id, message_id)
        payload.update(changes)
        payload["edited_timestamp"] = self.now_iso()
        return self.render(payload)

    def delete_message(self, channel_id: int | str, message_id: int | str) -> Payload:
        """Remove a message; returns the MESSAGE_DELETE payload."""
        channel = self.channel(channel_id)
        payload = self.store(channel_id).remove(int(message_id))
        if payload is None:
            raise unknown_message()
        self.message_channel.pop(int(message_id), None)
        self.deleted.add(int(message_id))
        if "thread_metadata" in channel and payload["type"] != MESSAGE_TYPE_THREAD_STARTER:
            channel["message_count"] = max(0, channel.get("message_count", 0) - 1)
        event: Payload = {"id": str(message_id), "channel_id": channel["id"]}
        if channel.get("guild_id"):
            event["guild_id"] = channel["guild_id"]
        return event

    # ------------------------------------------------------------------ application commands

    def commands(self, guild_id: str | None) -> dict[str, Payload]:
        if guild_id is None:
            return self.global_commands
        if guild_id not in self.guilds:
            raise ApiError(403, 50001, "Missing Access")
        return self.guild_commands.setdefault(guild_id, {})

    def upsert_command(self, guild_id: str | None, body: Payload) -> tuple[Payload, bool]:
        """Create or replace a command by (type, name); returns it and whether it is new."""
        commands = self.commands(guild_id)
        if not isinstance(body, dict) or not body.get("name"):
            raise invalid_form("name", "BASE_TYPE_REQUIRED", "This field is required")
        command_type = body.get("type", 1)
        for existing in commands.values():
            if existing["name"] == body["name"] and existing.get("type", 1) == command_type:
                existing.update(body)
                existing["version"] = str(self.mint.mint())
                return existing, False
        command_id = str(self.mint.mint())
        command = {
            "id": command_id,
            "application_id": self.application_id,
            "type": command_type,
            "description": "",
            "options": [],
            "default_member_permissions": None,
            "dm_permission": True,
            "nsfw": False,
            "version": command_id,
        } | body
        command["id"] = command_id
        if guild_id is not None:
            command["guild_id"] = guild_id
        commands[command_id] = command
        return command, True

    def overwrite_commands(self, guild_id: str | None, bodies: Any) -> list[Payload]:
        if not isinstance(bodies, list):
            raise ApiError(400, 50035, "Invalid Form Body")
        commands = self.commands(guild_id)
        kept = {(c["name"], c.get("type", 1)): c for c in commands.values()}
        commands.clear()
        result = []
        for body in bodies:
            previous = kept.get((body.get("name"), body.get("type", 1)))
            if previous is not None:
                commands[previous["id"]] = previous
            command, _ = self.upsert_command(guild_id, body)
            result.append(command)
        return result

    def find_command(self, name: str, guild_id: str | None) -> Payload:
        scopes = [self.guild_commands.get(guild_id, {})] if guild_id else []
        for scope in [*scopes, self.global_commands]:
            for command in scope.values():
                if command["name"] == name:
                    return command
        raise KeyError(f"no application command named {name!r} is registered")


def hide_content(payload: Payload, bot_id: str) -> Payload:
    """A message as an app without the MESSAGE_CONTENT privilege sees it.

    Discord blanks content, embeds, attachments and components except in DMs, in messages that
    mention the app and in the app's own messages; a nested ``referenced_message`` follows the
    same rule.
    """
    if payload.get("guild_id") is None or payload.get("author", {}).get("id") == bot_id:
        return payload
    if any(user["id"] == bot_id for user in payload.get("mentions", [])):
        return payload
    hidden = payload | {"content": "", "embeds": [], "attachments": [], "components": []}
    referenced = payload.get("referenced_message")
    if referenced:
        hidden["referenced_message"] = hide_content(referenced, bot_id)
    return hidden


class Signal:
    """Lets tests wait for a condition on the fake's records without polling with sleeps."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()

    async def wait_for(
        self,
        predicate: Callable[[], Any],
        timeout: float,  # noqa: ASYNC109 - the deadline is part of the error message
        what: str,
    ) -> Any:
        """Return ``predicate()``'s first truthy value; TimeoutError naming ``what`` if none.

        Waiting helpers of the fake take a ``timeout`` (rather than leaving it to
        ``asyncio.timeout``) so that a hung end-to-end test says what it was waiting for.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = predicate()
            if result:
                return result
            self._event.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"fake Discord: timed out after {timeout}s waiting for {what}")
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except TimeoutError:
                continue


def without_members(payload: Payload) -> Payload:
    """``payload`` as REST and a nested ``referenced_message`` serve it: the member fields of
    its author and mentions come only with a gateway event's own message, so nextcord builds
    users from it, not members."""
    stripped = {key: value for key, value in payload.items() if key != "member"}
    if "mentions" in payload:
        stripped["mentions"] = [
            {key: value for key, value in user.items() if key != "member"}
            for user in payload["mentions"]
        ]
    if payload.get("referenced_message"):
        stripped["referenced_message"] = without_members(payload["referenced_message"])
    return stripped
