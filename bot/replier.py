"""Posting an answer: a reply to the trigger, streamed by editing, split past 2000 characters.

Every message goes out with the operator's ``allowed_mentions`` (by default nobody is pinged, so
an answer containing ``@everyone`` pings no one) and with mass mentions defused in the text as a
second line of defence. Edits are throttled to one per ``edit_interval`` so a fast model does not
run into Discord's rate limits.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import nextcord

from bot.chunking import StreamingSplitter, split_message
from bot.mentions import MentionSettings, allowed_mentions, make_safe

log = logging.getLogger(__name__)

# Room for the zero-width spaces that defusing may add to a chunk.
CHUNK_LIMIT = 1950
DISCORD_LIMIT = 2000


class ReplyStreamer:
    """Owns the Discord messages of one answer, from the first token to the last chunk."""

    def __init__(
        self,
        trigger: Any,
        mentions: MentionSettings,
        *,
        edit_interval: float = 1.0,
        reply: bool = True,
    ) -> None:
        self.trigger = trigger
        self.channel = trigger.channel
        self.mentions = mentions
        self.allowed = allowed_mentions(mentions)
        self.edit_interval = edit_interval
        self.reply = reply
        self.sent: list[nextcord.Message] = []
        self._shown: list[str] = []  # text currently displayed in each sent message
        self._splitter = StreamingSplitter(limit=CHUNK_LIMIT)
        self._last_flush = 0.0
        self.edits = 0

    @property
    def message_ids(self) -> list[int]:
        return [message.id for message in self.sent]

    async def update(self, text: str) -> None:
        """The answer so far; shown at most once per interval."""
        view = self._splitter.update(text)
        now = time.monotonic()
        if now - self._last_flush < self.edit_interval:
            return
        self._last_flush = now
        chunks = [*view.final, view.tail] if view.tail else list(view.final)
        await self._show(chunks)

    async def finish(self, text: str) -> list[nextcord.Message]:
        """The final messages: the whole answer defused first, then split (see ``_final``)."""
        chunks = self._final(text) or ["(The model gave an empty answer.)"]
        await self._show(chunks, final=True)
        return self.sent

    async def fail(self, line: str, partial_text: str = "") -> list[nextcord.Message]:
        """Show what arrived, then one short line saying what went wrong."""
        note = f"*{line}*"
        chunks = self._final(partial_text)
        if chunks and len(chunks[-1]) + len(note) + 1 <= DISCORD_LIMIT:
            chunks[-1] = f"{chunks[-1]}\n{note}"
        else:
            chunks.append(note)
        await self._show(chunks, final=True)
        return self.sent

    def _final(self, text: str) -> list[str]:
        # Defusing before splitting: the zero-width spaces it adds count against the limit, so
        # no text is cut however many mass mentions the answer holds.
        return split_message(make_safe(text, self.mentions), CHUNK_LIMIT)

    async def _show(self, chunks: list[str], *, final: bool = False) -> None:
        for index, chunk in enumerate(chunks):
            # While streaming, chunks are split before defusing; a pathological one may be cut
            # for a second, until the final messages replace it.
            text = chunk if final else make_safe(chunk, self.mentions)[:DISCORD_LIMIT]
            if index < len(self.sent):
                if self._shown[index] != text:
                    await self.sent[index].edit(content=text, allowed_mentions=self.allowed)
                    self._shown[index] = text
                    self.edits += 1
            else:
                self.sent.append(await self._send(text, first=index == 0))
                self._shown.append(text)
        if final:
            while len(self.sent) > len(chunks):  # the final split needed fewer messages
                await self.sent.pop().delete()
                self._shown.pop()

    async def _send(self, text: str, *, first: bool) -> nextcord.Message:
        if first and self.reply:
            reference = self.trigger.to_reference(fail_if_not_exists=False)
            return await self.channel.send(text, reference=reference, allowed_mentions=self.allowed)
        return await self.channel.send(text, allowed_mentions=self.allowed)
