"""The live channel source: one nextcord channel, one REST request per call.

Each history call asks for exactly one page (at most 100 messages) and always names its anchor
(``before``, ``after`` or ``around``). nextcord 3.x's ``history()`` repeats its first page when a
request for more than 100 messages has no ``before=`` (nextcord issue 1238); asking for a single
anchored page at a time never takes that path, and it is also what keeps the cost of a context
countable. Pages are returned newest first whatever order nextcord yields them in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import aiohttp
import nextcord

from conversation.sources.source import PAGE_LIMIT, MessageLike, SourceError

HISTORY_UNREADABLE = "I can't read this channel's history, so I only saw your message."
DISCORD_TROUBLE = "Discord did not let me read the conversation just now."


class DiscordChannelSource:
    """A ``ChannelSource`` over a nextcord ``Messageable`` channel."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    @property
    def channel_id(self) -> int:
        return int(self.channel.id)

    async def fetch_message(self, message_id: int) -> MessageLike | None:
        try:
            with _as_source_errors():
                return await self.channel.fetch_message(message_id)
        except SourceError as error:
            if error.status == 404:
                return None
            raise

    async def history(
        self,
        *,
        before: int | None = None,
        after: int | None = None,
        around: int | None = None,
        limit: int = PAGE_LIMIT,
    ) -> list[MessageLike]:
        anchors = {
            name: nextcord.Object(id=value)
            for name, value in (("before", before), ("after", after), ("around", around))
            if value is not None
        }
        if len(anchors) != 1:
            raise ValueError("exactly one of before, after and around is needed")
        with _as_source_errors():
            page = [
                message
                async for message in self.channel.history(
                    limit=max(1, min(limit, PAGE_LIMIT)), **anchors
                )
            ]
        page.sort(key=lambda message: message.id, reverse=True)
        return page


@contextlib.contextmanager
def _as_source_errors() -> Iterator[None]:
    """Discord and network failures as ``SourceError``s with a line fit for the user."""
    try:
        yield
    except nextcord.HTTPException as error:
        user_message = HISTORY_UNREADABLE if error.status == 403 else DISCORD_TROUBLE
        raise SourceError(
            f"Discord {error.status}: {error.text or error}",
            user_message=user_message,
            status=error.status,
        ) from error
    except (aiohttp.ClientError, TimeoutError) as error:  # the network, not Discord
        raise SourceError(
            f"network error: {type(error).__name__}: {error}", user_message=DISCORD_TROUBLE
        ) from error
