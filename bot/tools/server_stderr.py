"""An MCP program's stderr, into the bot's log, one line per line, named after its server.

A stdio server writes its own log and its tracebacks to stderr. Left on the bot's stderr they
interleave with the bot's log lines without a time, a level or the server's name, and a bot
with several servers cannot tell whose traceback it is. Here each line becomes a log record
``MCP server NAME: LINE`` at INFO (the servers' own levels are not known), cut to
``MAX_LINE_CHARS``, its control characters (a terminal's escapes, a carriage return that
would show a forged line over it) replaced, under the logger ``bot.tools.server_stderr`` so an
operator can quiet it alone. A server that writes without end cannot flood the bot's log: at
most ``MAX_LINES`` lines per ``WINDOW_SECONDS`` are logged, and one line then says how many
were not. The last lines are kept (``tail``): when the program fails to start, the warning
that says so quotes them, since its traceback is usually the reason, and a command like
``check-config`` shows only warnings.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import time
from collections import deque
from typing import TextIO

log = logging.getLogger(__name__)

MAX_LINE_CHARS = 1000
TAIL_LINES = 3
READ_BYTES = 4096
DRAIN_SECONDS = 1.0  # after the program ended: time to log what it wrote last
MAX_LINES = 50
WINDOW_SECONDS = 10.0
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # all but the tab


class StderrToLog:
    """A pipe whose write end the program gets as stderr, and a task logging what arrives.

    Use as ``async with StderrToLog(name) as errlog``; pass ``errlog`` to ``stdio_client``.
    On Windows (its event loop reads only overlapped pipes), or an event loop that reads no
    pipes, ``errlog`` is the bot's own stderr, as before.
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self._task: asyncio.Task[None] | None = None
        self._writer: TextIO | None = None
        self._transport: asyncio.ReadTransport | None = None
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)  # its last lines, for a failed start
        self._window = (0.0, 0)  # when the current window began, lines logged in it
        self._dropped = 0  # lines not logged in it

    async def __aenter__(self) -> TextIO:
        if sys.platform == "win32":
            return sys.stderr
        read_fd, write_fd = os.pipe()
        reader, pipe = asyncio.StreamReader(), os.fdopen(read_fd, "rb", buffering=0)
        try:
            self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe
            )
        except NotImplementedError:  # an event loop that reads no pipes: as before
            pipe.close()
            os.close(write_fd)
            return sys.stderr
        except BaseException:  # cancelled: the transport closed the read end, ours is the write
            os.close(write_fd)
            raise
        self._writer = os.fdopen(write_fd, "w")
        self._task = asyncio.create_task(self._log_lines(reader), name=f"mcp {self.server} stderr")
        return self._writer

    async def __aexit__(self, *exc_info: object) -> None:
        # The program has been stopped: with our write end closed too, the pipe ends once its
        # last lines are read.
        if self._writer is not None:
            self._writer.close()
        if self._task is None:
            return
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                await asyncio.shield(self._task)
        except TimeoutError:  # a child of the program still holds the pipe open
            self._task.cancel()
            await asyncio.wait([self._task])  # a cancel of our own caller still reaches it
        finally:
            if self._transport is not None:
                self._transport.close()

    async def _log_lines(self, reader: asyncio.StreamReader) -> None:
        try:
            await self._read_lines(reader)
        except OSError as error:  # the pipe failed: what the program says is lost, not the bot
            log.debug("MCP server %s: its stderr cannot be read: %s", self.server, error)

    async def _read_lines(self, reader: asyncio.StreamReader) -> None:
        pending, skipping = b"", False
        while chunk := await reader.read(READ_BYTES):
            *lines, rest = (pending + chunk).split(b"\n")
            for line in lines:
                if not skipping:
                    self._log(line)
                skipping = False
            pending = rest
            if len(pending) > MAX_LINE_CHARS * 4:  # a line that does not end: logged cut, once
                if not skipping:
                    self._log(pending)
                pending, skipping = b"", True
        if pending and not skipping:
            self._log(pending)
        self._report_dropped()

    def _log(self, raw: bytes) -> None:
        line = _CONTROLS.sub("\ufffd", raw.decode("utf-8", errors="replace").rstrip())
        if not line.strip():
            return
        if len(line) > MAX_LINE_CHARS:
            line = line[: MAX_LINE_CHARS - 1] + "…"
        self.tail.append(line)
        began, logged = self._window
        now = time.monotonic()
        if now - began >= WINDOW_SECONDS:
            self._report_dropped()
            began, logged = now, 0
        if logged >= MAX_LINES:
            self._dropped += 1
        else:
            log.info("MCP server %s: %s", self.server, line)
            logged += 1
        self._window = (began, logged)

    def _report_dropped(self) -> None:
        if self._dropped:
            log.warning(
                "MCP server %s: %d more stderr line(s) not logged (at most %d per %g s)",
                self.server, self._dropped, MAX_LINES, WINDOW_SECONDS,
            )  # fmt: skip
            self._dropped = 0
