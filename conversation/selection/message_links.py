"""Links to Discord messages in a trigger: the message they point at joins the context.

A person who pastes ``https://discord.com/channels/GUILD/CHANNEL/MESSAGE`` is asking about that
message as surely as one who replies to it, so the builder brings it in like a reference, in
both modes, before the build chooses the rest (``linked_messages``). A message in this channel
is read through the channel reader; one in another channel needs a ``LinkResolver`` that knows
the server and checks that both the bot and the asker may read it (a link must never let
someone read, through the bot, a channel they cannot open themselves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from conversation.selection.result import Reason
from conversation.sources.reader import ChannelReader, WorkEntry
from conversation.sources.source import MessageLike

_LINK = re.compile(
    r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/channels/(@me|\d+)/(\d+)/(\d+)",
    re.IGNORECASE,
)
MAX_LINKS = 3  # a trigger pasting more links than this is not pointing at a conversation


@dataclass(frozen=True, slots=True)
class MessageLink:
    guild_id: int | None  # None for a direct-message link (``@me``)
    channel_id: int
    message_id: int

    @property
    def url(self) -> str:
        guild = "@me" if self.guild_id is None else str(self.guild_id)
        return f"https://discord.com/channels/{guild}/{self.channel_id}/{self.message_id}"


def message_links(content: str) -> list[MessageLink]:
    """The distinct message links in ``content``, in order, at most ``MAX_LINKS``."""
    links: list[MessageLink] = []
    for guild, channel, message in _LINK.findall(content or ""):
        link = MessageLink(
            guild_id=None if guild == "@me" else int(guild),
            channel_id=int(channel),
            message_id=int(message),
        )
        if link not in links:
            links.append(link)
        if len(links) >= MAX_LINKS:
            break
    return links


@dataclass(frozen=True, slots=True)
class LinkOutcome:
    """The linked message, or why it was left out (a line fit for the asker)."""

    message: MessageLike | None = None
    left_out: str | None = None


class LinkResolver(Protocol):
    """Reads a linked message in another channel of the trigger's server, if allowed."""

    async def resolve(self, link: MessageLink, trigger: MessageLike) -> LinkOutcome: ...


def guild_id_of(message: MessageLike) -> int | None:
    guild = getattr(message, "guild", None)
    return getattr(guild, "id", None)


async def linked_messages(
    trigger: MessageLike, reader: ChannelReader, resolver: LinkResolver | None
) -> tuple[list[tuple[MessageLike, Reason]], list[str]]:
    """The messages the trigger links to, and a line for each link left out (and why)."""
    linked: list[tuple[MessageLike, Reason]] = []
    left_out: list[str] = []
    for link in message_links(trigger.content or ""):
        outcome = await _follow_link(link, trigger, reader, resolver)
        reader.log.append(
            WorkEntry(
                action="link_followed",
                detail=f"{trigger.id} links to {link.url}"
                + (f": {outcome.left_out}" if outcome.left_out else ""),
                status="success" if outcome.message is not None else "failure",
            )
        )
        if outcome.message is not None and outcome.message.id != trigger.id:
            linked.append((outcome.message, Reason(kind="link", via=trigger.id)))
        elif outcome.left_out:
            left_out.append(f"linked message {link.url} left out: {outcome.left_out}")
    return linked, left_out


async def _follow_link(
    link: MessageLink, trigger: MessageLike, reader: ChannelReader, resolver: LinkResolver | None
) -> LinkOutcome:
    if link.guild_id != guild_id_of(trigger):
        return LinkOutcome(left_out="it is in another server")
    if link.message_id >= trigger.id:
        return LinkOutcome(left_out="it is newer than the question")
    if link.channel_id == reader.source.channel_id:
        message = await reader.get(link.message_id)
        if message is None:
            return LinkOutcome(left_out=reader.unreadable or "it no longer exists")
        return LinkOutcome(message=message)
    if resolver is None:
        return LinkOutcome(left_out="only this channel can be read here")
    return await resolver.resolve(link, trigger)
