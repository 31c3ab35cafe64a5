"""DiscordChatExporter (DCE) JSON exports, and their translation into Discord API payloads.

Channel logs are our test data and the operators' replay input, so the export is parsed once into
pydantic models (tolerant of what real exports contain) and then turned into exactly the payloads
Discord's REST API and gateway would send. Both the channel-log source and the test suite's fake
Discord server build their nextcord objects from these payloads, so replayed messages go through
the same nextcord code as live ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from conversation.common.text import clean_json

# DCE writes message types by name; unknown ones appear as the numeric value, as a string.
MESSAGE_TYPES: dict[str, int] = {
    "Default": 0,
    "RecipientAdd": 1,
    "RecipientRemove": 2,
    "Call": 3,
    "ChannelNameChange": 4,
    "ChannelIconChange": 5,
    "ChannelPinnedMessage": 6,
    "GuildMemberJoin": 7,
    "ThreadCreated": 18,
    "Reply": 19,
    "ApplicationCommand": 20,
    "ChatInputCommand": 20,
    "ThreadStarterMessage": 21,
    "ContextMenuCommand": 23,
}

CHANNEL_TYPES: dict[str, int] = {
    "GuildTextChat": 0,
    "DirectTextChat": 1,
    "GuildVoiceChat": 2,
    "DirectGroupTextChat": 3,
    "GuildCategory": 4,
    "GuildNews": 5,
    "GuildAnnouncement": 5,
    "GuildNewsThread": 10,
    "GuildPublicThread": 11,
    "GuildPrivateThread": 12,
    "GuildStageVoice": 13,
    "GuildForum": 15,
}
THREAD_CHANNEL_TYPES = {10, 11, 12}
PRIVATE_CHANNEL_TYPES = {1, 3}
# What @everyone may do in an exported server: view channels and read their history, as in a
# new Discord server (an export does not record permissions).
EVERYONE_PERMISSIONS = (1 << 10) | (1 << 16)  # VIEW_CHANNEL, READ_MESSAGE_HISTORY


class ExportError(ValueError):
    """A channel log that cannot be replayed; the message names the file and the message."""


class _Lenient(BaseModel):
    """DCE adds fields between versions: unknown ones are ignored, not errors."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


MAX_SNOWFLAKE = 2**63  # Discord ids are signed 64-bit integers


def _id_text(value: str, *, zero: bool = True) -> str:
    """An id as DCE writes it: decimal digits, a signed 64-bit integer (0: "none", DMs' guild)."""
    if not (value.isascii() and value.isdigit()) or not (0 if zero else 1) <= int(value) < (
        MAX_SNOWFLAKE
    ):
        raise ValueError(f"not a Discord id: {value[:40]!r}")
    return value


SnowflakeText = Annotated[str, AfterValidator(_id_text)]
OptionalSnowflakeText = Annotated[str | None, AfterValidator(lambda v: v and _id_text(v))]


class DceRole(_Lenient):
    id: SnowflakeText
    name: str = ""
    color: str | None = None
    position: int = 0


class DceUser(_Lenient):
    id: SnowflakeText
    name: str
    discriminator: str = "0000"
    nickname: str | None = None
    # Not in exports (whose ``nickname`` already is the name shown in the server); set by the
    # fake Discord for a user with a global display name apart from any server nickname.
    global_name: str | None = Field(None, alias="globalName")
    is_bot: bool = Field(False, alias="isBot")
    roles: list[DceRole] = Field(default_factory=list)
    avatar_url: str | None = Field(None, alias="avatarUrl")

    @property
    def display_name(self) -> str:
        return self.nickname or self.name


class DceAttachment(_Lenient):
    id: str
    url: str
    file_name: str = Field("file", alias="fileName")
    file_size_bytes: int = Field(0, alias="fileSizeBytes")


class DceEmbed(_Lenient):
    title: str | None = None
    url: str | None = None
    description: str | None = None
    timestamp: str | None = None


class DceReference(_Lenient):
    message_id: OptionalSnowflakeText = Field(None, alias="messageId")
    channel_id: OptionalSnowflakeText = Field(None, alias="channelId")
    guild_id: OptionalSnowflakeText = Field(None, alias="guildId")


class DceMessage(_Lenient):
    id: str
    type: str = "Default"
    timestamp: datetime
    timestamp_edited: datetime | None = Field(None, alias="timestampEdited")
    is_pinned: bool = Field(False, alias="isPinned")
    content: str = ""
    author: DceUser
    attachments: list[DceAttachment] = Field(default_factory=list)
    embeds: list[DceEmbed] = Field(default_factory=list)
    mentions: list[DceUser] = Field(default_factory=list)
    reference: DceReference | None = None

    @field_validator("id")
    @classmethod
    def _snowflake(cls, value: str) -> str:
        if not (value.isascii() and value.isdigit()) or not 0 < int(value) < MAX_SNOWFLAKE:
            raise ValueError("message id must be a numeric snowflake below 2**63")
        return value

    @field_validator("timestamp", "timestamp_edited")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @property
    def type_value(self) -> int:
        if self.type in MESSAGE_TYPES:
            return MESSAGE_TYPES[self.type]
        if self.type.isdigit():
            return int(self.type)
        return 0


class DceGuild(_Lenient):
    id: SnowflakeText = "0"
    name: str = "Direct Messages"


class DceChannel(_Lenient):
    id: SnowflakeText
    type: str = "GuildTextChat"
    category_id: str | None = Field(None, alias="categoryId")
    category: str | None = None
    name: str = "channel"
    topic: str | None = None

    @property
    def type_value(self) -> int:
        return CHANNEL_TYPES.get(self.type, int(self.type) if self.type.isdigit() else 0)


class ChannelExport(BaseModel):
    """A parsed export: messages in channel order (by snowflake), duplicates removed."""

    model_config = ConfigDict(frozen=True)

    path: str
    guild: DceGuild
    channel: DceChannel
    messages: tuple[DceMessage, ...]
    duplicate_ids: tuple[str, ...] = ()

    @property
    def is_private(self) -> bool:
        return self.channel.type_value in PRIVATE_CHANNEL_TYPES

    @property
    def is_thread(self) -> bool:
        return self.channel.type_value in THREAD_CHANNEL_TYPES

    def users(self) -> Iterator[DceUser]:
        """Every user seen as author or mention, first appearance wins (authors carry roles)."""
        seen: set[str] = set()
        for message in self.messages:
            for user in (message.author, *message.mentions):
                if user.id not in seen:
                    seen.add(user.id)
                    yield user


def load_export(path: str | Path) -> ChannelExport:
    """Parse a DCE JSON export, naming the file and the offending message on any error."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM from Windows tools
    except OSError as error:
        raise ExportError(f"{path}: cannot read the channel log ({error.strerror})") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ExportError(f"{path}: not a JSON file ({error})") from error
    except RecursionError as error:
        raise ExportError(f"{path}: not a channel log (JSON nested too deeply)") from error
    return parse_export(raw, source=str(path))


def parse_export(raw: Any, *, source: str = "<export>") -> ChannelExport:
    try:
        raw = clean_json(raw)  # a log's text enters here: nothing unencodable gets past
    except RecursionError as error:
        raise ExportError(f"{source}: not a channel log (JSON nested too deeply)") from error
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
        raise ExportError(f"{source}: not a DiscordChatExporter JSON export (no 'messages' list)")
    try:
        channel = DceChannel.model_validate(raw.get("channel") or {})
        guild = DceGuild.model_validate(raw.get("guild") or {})
    except ValidationError as error:
        raise ExportError(
            f"{source}: bad channel or guild header: {_first_error(error)}"
        ) from error
    by_id: dict[str, DceMessage] = {}
    duplicates: list[str] = []
    for index, item in enumerate(raw["messages"]):
        try:
            message = DceMessage.model_validate(item)
        except ValidationError as error:
            label = item.get("id", f"#{index}") if isinstance(item, dict) else f"#{index}"
            raise ExportError(f"{source}: message {label}: {_first_error(error)}") from error
        if message.id in by_id:
            # Re-exports merged by hand repeat messages; the later copy is the fresher one.
            duplicates.append(message.id)
        by_id[message.id] = message
    ordered = tuple(sorted(by_id.values(), key=lambda m: int(m.id)))
    return ChannelExport(
        path=source,
        guild=guild,
        channel=channel,
        messages=ordered,
        duplicate_ids=tuple(duplicates),
    )


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


# ----------------------------------------------------------------------------- API payloads


def user_payload(user: DceUser) -> dict[str, Any]:
    return {
        "id": user.id,
        "username": user.name,
        "discriminator": user.discriminator if user.discriminator != "0000" else "0",
        "global_name": user.global_name,
        "avatar": None,
        "bot": user.is_bot,
    }


def member_payload(user: DceUser, joined_at: datetime | None = None) -> dict[str, Any]:
    nick = user.nickname if user.nickname and user.nickname != user.name else None
    return {
        "nick": nick,
        "roles": [role.id for role in user.roles],
        "joined_at": (joined_at or datetime(2015, 1, 1, tzinfo=UTC)).isoformat(),
        "deaf": False,
        "mute": False,
    }


class PayloadBuilder:
    """Turns an export's messages into Discord API message payloads.

    Reply references are resolved the way Discord sends them: ``referenced_message`` holds the
    referenced message (without its own nested reference) when it exists, ``null`` when it was
    deleted (a gap inside the export's range), and is absent when the export cannot tell (the
    message is older or newer than the export), in which case a client has to fetch it.
    """

    def __init__(self, export: ChannelExport) -> None:
        self.export = export
        self._by_id = {message.id: message for message in export.messages}
        self._first = int(export.messages[0].id) if export.messages else 0
        self._last = int(export.messages[-1].id) if export.messages else 0
        self._guild_id = None if export.is_private else export.guild.id

    def message(self, message: DceMessage, *, resolve_reference: bool = True) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": message.id,
            "channel_id": self.export.channel.id,
            "author": user_payload(message.author),
            "content": message.content,
            "timestamp": message.timestamp.isoformat(),
            "edited_timestamp": message.timestamp_edited.isoformat()
            if message.timestamp_edited
            else None,
            "tts": False,
            "mention_everyone": "@everyone" in message.content or "@here" in message.content,
            "mentions": [self._mention(user) for user in message.mentions],
            "mention_roles": [],
            "attachments": [
                {
                    "id": attachment.id,
                    "filename": attachment.file_name,
                    "size": attachment.file_size_bytes,
                    "url": attachment.url,
                    "proxy_url": attachment.url,
                }
                for attachment in message.attachments
            ],
            "embeds": [
                {key: value for key, value in embed.model_dump().items() if value is not None}
                | {"type": "link" if embed.url else "rich"}
                for embed in message.embeds
            ],
            "pinned": message.is_pinned,
            "type": message.type_value,
        }
        if self._guild_id is not None:
            payload["guild_id"] = self._guild_id
            payload["member"] = member_payload(message.author)
        reference = message.reference
        if reference is not None and reference.message_id:
            payload["message_reference"] = {
                "message_id": reference.message_id,
                "channel_id": reference.channel_id or self.export.channel.id,
                **({"guild_id": reference.guild_id} if reference.guild_id else {}),
            }
            if resolve_reference:
                self._resolve(payload, reference.message_id)
        return payload

    def _resolve(self, payload: dict[str, Any], referenced_id: str) -> None:
        target = self._by_id.get(referenced_id)
        if target is not None:
            payload["referenced_message"] = self.message(target, resolve_reference=False)
        elif self._first <= int(referenced_id) <= self._last:
            payload["referenced_message"] = None

    def _mention(self, user: DceUser) -> dict[str, Any]:
        mention = user_payload(user)
        if self._guild_id is not None:
            mention["member"] = member_payload(user)
        return mention

    def messages(self) -> Iterable[dict[str, Any]]:
        return (self.message(message) for message in self.export.messages)

    def guild(self, *, channels: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """A GUILD_CREATE-shaped payload holding the export's channel, roles and members."""
        export = self.export
        roles: dict[str, DceRole] = {}
        members: dict[str, dict[str, Any]] = {}
        for user in export.users():
            for role in user.roles:
                roles.setdefault(role.id, role)
            members[user.id] = member_payload(user) | {"user": user_payload(user)}
        everyone = {
            "id": export.guild.id,
            "name": "@everyone",
            "permissions": str(EVERYONE_PERMISSIONS),
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
        }
        return {
            "id": export.guild.id,
            "name": export.guild.name,
            "owner_id": "0",
            "features": [],
            "emojis": [],
            "stickers": [],
            "member_count": len(members),
            "roles": [everyone]
            + [
                {
                    "id": role.id,
                    "name": role.name,
                    "permissions": "0",
                    "position": role.position,
                    "color": int(role.color.lstrip("#"), 16) if role.color else 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": True,
                }
                for role in roles.values()
                if role.id != export.guild.id
            ],
            "members": list(members.values()),
            "channels": channels if channels is not None else self.channels(),
            "threads": [self.thread()] if export.is_thread else [],
        }

    def channels(self) -> list[dict[str, Any]]:
        """The text channel of the export (for a thread, its parent)."""
        channel = self.export.channel
        if self.export.is_thread:
            return [self._text_channel(channel.category_id or "1", channel.category or "parent")]
        return [self._text_channel(channel.id, channel.name, topic=channel.topic)]

    def _text_channel(self, channel_id: str, name: str, *, topic: str | None = None) -> dict:
        return {
            "id": channel_id,
            "type": 0,
            "name": name,
            "topic": topic,
            "position": 0,
            "guild_id": self.export.guild.id,
            "permission_overwrites": [],
            "nsfw": False,
        }

    def thread(self) -> dict[str, Any]:
        channel = self.export.channel
        return {
            "id": channel.id,
            "type": channel.type_value,
            "name": channel.name,
            "guild_id": self.export.guild.id,
            "parent_id": channel.category_id or "1",
            "owner_id": "0",
            "message_count": len(self.export.messages),
            "member_count": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": datetime(2015, 1, 1, tzinfo=UTC).isoformat(),
                "locked": False,
            },
        }
