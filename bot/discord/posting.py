"""Posting an answer: a reply to the trigger, streamed by editing, split past 2000 characters.

Every message goes out with the operator's ``allowed_mentions`` (by default nobody is pinged, so
an answer containing ``@everyone`` pings no one) and with mass mentions defused in the text as a
second line of defence. Edits are throttled to one per ``edit_interval`` so a fast model does not
run into Discord's rate limits.

An answer takes at most ``max_messages`` messages: a runaway answer (a model repeating itself
for 200k characters) is cut with a note instead of flooding the channel. Deltas are only
collected as they arrive; the text is split when it is shown, by a splitter whose work depends
on what is new, not on the length of the answer so far.

Posting is not allowed to lose the answer: while streaming, a failed post or edit is logged and
tried again at the next one; the final post retries Discord's transient errors, and when the
trigger cannot be replied to any more (deleted, or history not readable) it posts to the channel
without the reference. Only then does it give up, and the caller records the whole answer.

While the answer is prepared, the channel shows "typing..." (``typing_indicator``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import nextcord

from bot.discord.chunking import StreamingSplitter, split_message
from bot.discord.limits import DISCORD_MESSAGE_LIMIT
from bot.discord.mentions import MentionSettings, allowed_mentions, make_safe
from bot.discord.triggers import TriggerMessage

log = logging.getLogger(__name__)

# Room for the zero-width spaces that defusing may add to a chunk.
CHUNK_LIMIT = 1950
CUT_NOTE = "*(Cut here: too long for {count} messages.)*"
EMPTY_ANSWER = "(The model gave an empty answer.)"
SEND_ATTEMPTS = 3  # a post that meets Discord's 5xx is tried this often
SEND_RETRY_SECONDS = 0.5  # first wait between attempts, doubled each time
# A reply refused for its reference (target deleted, no history permission): post it plainly.
REFERENCE_REFUSED = (400, 403, 404)


@contextlib.asynccontextmanager
async def typing_indicator(channel: Any) -> AsyncIterator[None]:
    """Show "typing..." while the answer is prepared, without waiting for Discord to ack it.

    nextcord's ``channel.typing()`` awaits the first request before the body runs, which put a
    REST round trip on every answer's critical path; here it runs beside the work instead.
    """

    async def keep_typing() -> None:
        while True:
            try:
                await channel.trigger_typing()
            except Exception as error:  # typing is cosmetic: never fail an answer for it
                log.debug("typing indicator failed: %s", error)
                return
            await asyncio.sleep(8)  # Discord shows it for about 10 seconds

    task = asyncio.create_task(keep_typing())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class ReplyStreamer:
    """Owns the Discord messages of one answer, from the first token to the last chunk."""

    def __init__(
        self,
        trigger: TriggerMessage,
        mentions: MentionSettings,
        *,
        edit_interval: float = 1.0,
        reply: bool = True,
        max_messages: int = 5,
    ) -> None:
        self.trigger = trigger
        self.channel = trigger.channel
        self.mentions = mentions
        self.allowed = allowed_mentions(mentions)
        self.edit_interval = edit_interval
        self.reply = reply
        self.max_messages = max_messages
        self.sent: list[nextcord.Message] = []
        self._shown: list[str] = []  # text currently displayed in each sent message
        self._splitter = StreamingSplitter(limit=CHUNK_LIMIT)
        self._text = ""
        self._pending: list[str] = []  # deltas not yet joined to ``_text``
        self._full = False  # every message the answer may take is final: stop splitting
        self._last_flush = 0.0
        self.edits = 0

    @property
    def message_ids(self) -> list[int]:
        return [message.id for message in self.sent]

    @property
    def text(self) -> str:
        """Everything received so far."""
        if self._pending:
            self._text += "".join(self._pending)
            self._pending.clear()
        return self._text

    async def add(self, delta: str) -> None:
        """One more piece of the answer; shown at most once per interval."""
        self._pending.append(delta)
        now = time.monotonic()
        if self._full or now - self._last_flush < self.edit_interval:
            return
        self._last_flush = now
        view = self._splitter.update(self.text)
        chunks = [*view.final, view.tail] if view.tail else list(view.final)
        if len(view.final) >= self.max_messages:
            self._full = True
        try:
            await self._show(chunks[: self.max_messages])
        except nextcord.HTTPException as error:
            # Streaming is a preview: the final post tries again, the answer goes on.
            log.warning("showing the answer so far failed (%s); trying again later", error)

    async def status(self, line: str) -> None:
        """Say under the text so far what the bot is doing (tools running: "reading
        wiki.example.org …"); the next text or the final answer replaces it."""
        note = f"-# {line}"
        chunks = self._final(self.text)[: self.max_messages]
        if chunks and len(chunks[-1]) + len(note) + 1 <= DISCORD_MESSAGE_LIMIT:
            chunks[-1] = f"{chunks[-1]}\n{make_safe(note, self.mentions)}"
        elif len(chunks) < self.max_messages:
            chunks.append(make_safe(note, self.mentions))
        try:
            await self._show(chunks, final=True)
        except nextcord.HTTPException as error:
            log.warning("showing what the tools do failed (%s)", error)
        self._last_flush = time.monotonic()

    async def finish(self, text: str) -> list[nextcord.Message]:
        """The final messages: the whole answer defused first, then split (see ``_final``)."""
        chunks = self._final(text) or [EMPTY_ANSWER]
        await self._show(self._capped(chunks), final=True)
        return self.sent

    async def attach(self, files: Sequence[tuple[str, bytes]]) -> int:
        """Attach ``(name, bytes)`` files to the answer's last message; how many were attached
        (none where the bot lacks Attach Files, or when Discord refuses them: the answer
        stands as posted, and the operator's log says why)."""
        if not files or not self.sent:
            return 0
        message = self.sent[-1]
        channel, guild = self.channel, getattr(self.channel, "guild", None)
        me = getattr(guild, "me", None)
        if guild is not None and (me is None or not channel.permissions_for(me).attach_files):
            log.info(
                "not attaching %d file(s) to %s: no Attach Files there", len(files), message.id
            )
            return 0
        uploads = [nextcord.File(io.BytesIO(data), filename=name) for name, data in files]
        try:
            await message.edit(files=uploads, allowed_mentions=self.allowed)
        except nextcord.HTTPException as error:
            log.warning("attaching %d file(s) to %s failed: %s", len(files), message.id, error)
            return 0
        return len(files)

    async def fail(self, line: str, partial_text: str = "") -> list[nextcord.Message]:
        """Show what arrived, then one short line saying what went wrong."""
        note = f"*{line}*"
        chunks = self._capped(self._final(partial_text))
        if chunks and len(chunks[-1]) + len(note) + 1 <= DISCORD_MESSAGE_LIMIT:
            chunks[-1] = f"{chunks[-1]}\n{note}"
        elif len(chunks) < self.max_messages:
            chunks.append(note)
        else:
            chunks[-1] = note
        await self._show(chunks, final=True)
        return self.sent

    def _final(self, text: str) -> list[str]:
        # Defusing before splitting: the zero-width spaces it adds count against the limit, so
        # no text is cut however many mass mentions the answer holds.
        return split_message(make_safe(text, self.mentions), CHUNK_LIMIT)

    def _capped(self, chunks: list[str]) -> list[str]:
        """At most ``max_messages`` chunks, the last one saying that the rest was cut."""
        if len(chunks) <= self.max_messages:
            return chunks
        kept = chunks[: self.max_messages]
        note = CUT_NOTE.format(count=self.max_messages)
        # Chunks leave DISCORD_MESSAGE_LIMIT - CHUNK_LIMIT characters free; the note fits in them.
        kept[-1] = f"{kept[-1]}\n{note}"
        return kept

    async def _show(self, chunks: list[str], *, final: bool = False) -> None:
        for index, chunk in enumerate(chunks):
            # While streaming, chunks are split before defusing; a pathological one may be cut
            # for a second, until the final messages replace it.
            text = chunk if final else make_safe(chunk, self.mentions)[:DISCORD_MESSAGE_LIMIT]
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
            try:
                return await self._post(text, reference=reference)
            except nextcord.HTTPException as error:
                if error.status not in REFERENCE_REFUSED:
                    raise
                log.warning(
                    "cannot reply to message %s (%s %s); posting without the reference",
                    self.trigger.id,
                    error.status,
                    error.text,
                )
                self.reply = False
        return await self._post(text)

    async def _post(self, text: str, *, reference: Any = None) -> nextcord.Message:
        """``channel.send``, tried again on Discord's transient server errors."""
        for attempt in range(SEND_ATTEMPTS):
            try:
                return await self.channel.send(
                    text, reference=reference, allowed_mentions=self.allowed
                )
            except nextcord.DiscordServerError as error:
                if attempt == SEND_ATTEMPTS - 1:
                    raise
                log.warning("posting failed (%s); trying again", error.status)
                await asyncio.sleep(SEND_RETRY_SECONDS * 2**attempt)
        raise AssertionError("unreachable")
