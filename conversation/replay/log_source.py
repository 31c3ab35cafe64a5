"""A channel source that replays a DiscordChatExporter log as real nextcord ``Message`` objects.

Every message is built by nextcord itself from the Discord API payload the export maps to
(``conversation.replay.dce``), inside a detached connection state that holds the export's guild,
channel and members. Replayed messages therefore behave exactly like live ones: same classes,
same ``reference.resolved`` rules, same display names. Paging follows Discord's semantics so
that REST costs counted against a log are the costs the bot would pay.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import Counter
from pathlib import Path
from typing import Any

import nextcord

from conversation.common.compat import add_guild, detached_state
from conversation.prompt.names import bot_name_in
from conversation.replay.dce import ChannelExport, DceMessage, PayloadBuilder, load_export
from conversation.sources.source import PAGE_LIMIT, AttachmentUnreadable, MessageLike

REPLAY_BOT_ID = 1  # Our own user when the log has no bot in it.


class ExportedFiles:
    """Stands in for nextcord's HTTP client where attachments are read (``get_from_cdn``).

    DiscordChatExporter run with ``--media`` saves attachments beside the export and writes their
    relative paths as URLs; those are read from disk. Anything else would need Discord, which a
    replay never contacts, so it is refused with a reason a person can act on.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()

    async def get_from_cdn(self, url: str) -> bytes:
        if "://" in url:
            raise AttachmentUnreadable("not in the log (export with --media to keep the files)")
        path = (self.folder / url).resolve()
        if not path.is_relative_to(self.folder):
            raise AttachmentUnreadable("outside the export's folder, not read")
        try:
            return await asyncio.to_thread(path.read_bytes)
        except OSError as error:
            raise AttachmentUnreadable(
                f"exported file {url} not readable: {error.strerror}"
            ) from error


class LogSource:
    """A replayed channel: history paging and fetches over the export, counted like REST."""

    def __init__(self, export: ChannelExport, *, bot_user_id: int | None = None) -> None:
        self.export = export
        self.payloads = PayloadBuilder(export)
        self.bot_user_id = bot_user_id if bot_user_id is not None else guess_bot_id(export)
        folder = Path(export.path).parent if export.path else Path(".")
        self.state = detached_state(ExportedFiles(folder))
        self.state.user = nextcord.ClientUser(state=self.state, data=self._bot_user_payload())
        self.channel = self._make_channel()
        self.messages: list[nextcord.Message] = [
            nextcord.Message(state=self.state, channel=self.channel, data=payload)  # type: ignore[arg-type]
            for payload in self.payloads.messages()
        ]
        self._ids = [message.id for message in self.messages]
        self._index = {message_id: index for index, message_id in enumerate(self._ids)}
        self.calls: Counter[str] = Counter()

    @classmethod
    def from_file(cls, path: str | Path, *, bot_user_id: int | None = None) -> LogSource:
        return cls(load_export(path), bot_user_id=bot_user_id)

    # ------------------------------------------------------------------ construction

    @property
    def bot_name(self) -> str:
        """The bot's name as members saw it in the log, by the live bot's rule (``bot_name_in``).

        An export keeps one name per author, the one shown in that server (``nickname``: server
        nickname, else global name, else username), so it stands for the nickname and the global
        name alike; a bot that never spoke in the log is "assistant".
        """
        return bot_name_in(self.channel, self.state.user)

    def _bot_user_payload(self) -> dict[str, Any]:
        for user in self.export.users():
            if int(user.id) == self.bot_user_id:
                return {
                    "id": user.id,
                    "username": user.name,
                    "discriminator": "0",
                    "avatar": None,
                    "bot": True,
                    "global_name": user.nickname,
                }
        return {
            "id": str(self.bot_user_id),
            "username": "assistant",
            "discriminator": "0",
            "avatar": None,
            "bot": True,
        }

    def _make_channel(self) -> Any:
        export = self.export
        if export.is_private:
            recipients = [
                {"id": user.id, "username": user.name, "discriminator": "0", "avatar": None}
                for user in export.users()
                if int(user.id) != self.bot_user_id
            ][:1] or [{"id": "2", "username": "someone", "discriminator": "0", "avatar": None}]
            return nextcord.DMChannel(
                me=self.state.user,  # type: ignore[arg-type]
                state=self.state,
                data={"id": export.channel.id, "type": 1, "recipients": recipients},  # type: ignore[typeddict-item]
            )
        guild = add_guild(self.state, self.payloads.guild())  # type: ignore[arg-type]
        channel_id = int(export.channel.id)
        channel = guild.get_channel_or_thread(channel_id)
        if channel is None:
            raise ValueError(f"{export.path}: channel {channel_id} could not be built")
        return channel

    # ------------------------------------------------------------------ lookups for tools

    def message(self, message_id: int) -> nextcord.Message | None:
        index = self._index.get(message_id)
        return self.messages[index] if index is not None else None

    def dce(self, message_id: int) -> DceMessage | None:
        index = self._index.get(message_id)
        return self.export.messages[index] if index is not None else None

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    # ------------------------------------------------------------------ ChannelSource

    @property
    def channel_id(self) -> int:
        return int(self.export.channel.id)

    async def fetch_message(self, message_id: int) -> MessageLike | None:
        self.calls["fetch_message"] += 1
        return self.message(message_id)

    async def history(
        self,
        *,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
        limit: int = PAGE_LIMIT,
    ) -> list[MessageLike]:
        self.calls["history"] += 1
        return list(
            page_of(
                self.messages, self._ids, before=before, after=after, around=around, limit=limit
            )
        )


def page_of(
    messages: list[Any],
    ids: list[int],
    *,
    before: int | None = None,
    after: int | None = None,
    around: int | None = None,
    limit: int = PAGE_LIMIT,
) -> list[Any]:
    """Discord's history paging over messages sorted by id: newest first, at most ``limit``."""
    limit = max(1, min(limit, PAGE_LIMIT))
    if before is not None:
        end = bisect.bisect_left(ids, before)
        chosen = messages[max(0, end - limit) : end]
    elif after is not None:
        start = bisect.bisect_right(ids, after)
        chosen = messages[start : start + limit]
    elif around is not None:
        # Discord centres the page on the id: limit // 2 older, the rest from the id on.
        centre = bisect.bisect_left(ids, around)
        start = max(0, centre - limit // 2)
        chosen = messages[start : start + limit]
    else:
        chosen = messages[-limit:]
    return chosen[::-1]


def guess_bot_id(export: ChannelExport) -> int:
    """The bot whose turns are the assistant's: the most frequent bot author of the log."""
    counts = Counter(message.author.id for message in export.messages if message.author.is_bot)
    if counts:
        return int(counts.most_common(1)[0][0])
    return REPLAY_BOT_ID
