"""An MCP program over stdio, each message it writes bounded.

The SDK's ``stdio_client`` (mcp 2.3) reads the program's stdout into a string until the next
newline, however long: a broken or hostile program that writes one endless line (or a huge
JSON-RPC message) grows the bot until the system kills it, every channel with it. This is that
transport with another reader: the program is spawned and stopped by the SDK's own helpers
(its process group, the spec's shutdown sequence), the SDK still speaks the protocol, but a
line is read as bytes and kept only while it is at most ``max_bytes``. A longer line is never
buffered: ``on_overflow`` is told once (the server drops the connection and starts the
program again, as after a crash), the session sees the connection end (a call in flight fails
instead of waiting), and the rest of the program's stdout is read and thrown away until it is
stopped, so a program blocked on a full pipe can still exit.

A message within the bytes can still be costly to parse: 80,000 empty content blocks fit in
2 MB and took 89 MB and 1.9 s of the event loop to become the SDK's objects, for a result that
shows at most ``max_result_chars`` characters (so at most one block more than that). So a line
is first scanned for content blocks (a byte count, then a pattern: no object is built), and one
with more than ``max_blocks`` is refused as an over-long one is; a long line is parsed in a
worker thread, so the loop answers other channels meanwhile.

The spawn and stop helpers are private names of the SDK (its version is pinned in
``constraints.txt``): an SDK that renames them fails this import, and the tests with it; one
that bounds its own reader makes this module unneeded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.client.stdio import (
    StdioServerParameters,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

WRITER_FLUSH_SECONDS = 0.5  # as the SDK: time to send accepted messages before stdin closes


OFF_LOOP_BYTES = 64 * 1024
"""A line longer than this is scanned and parsed in a worker thread (a shorter one costs the
loop less than the hop to a thread would)."""
CONTENT_BLOCK = re.compile(rb'"type"\s*:\s*"(?:text|image|audio|resource|resource_link)"')
"""A content block's type: none of them is a JSON schema type ("string", "object", ...), so a
tool listing's schemas do not count (an escaped quote inside a string does not match either)."""


def over_limit(max_bytes: int) -> str:
    """Why the connection was dropped, in the log and in the failed call's result."""
    return f"sent a message over the {max_bytes}-byte limit: connection dropped, it restarts"


def too_many_blocks(max_blocks: int) -> str:
    """Why the connection was dropped: more content blocks than a result can show."""
    return (
        f"sent a message of more than {max_blocks} content blocks (more than a result can "
        "show): connection dropped, it restarts"
    )


async def read_messages(
    stdout: ByteReceiveStream,
    deliver: MemoryObjectSendStream[SessionMessage | Exception],
    max_bytes: int,
    max_blocks: int,
) -> str | None:
    """Deliver each line of ``stdout`` as a message until it ends or the session is gone
    (None), or until a line is over ``max_bytes`` or holds more than ``max_blocks`` content
    blocks (why, for the log): at most ``max_bytes`` plus one read are held at any time."""
    line = bytearray()
    async for chunk in stdout:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if len(line) + end - start > max_bytes:
                return over_limit(max_bytes)
            line += chunk[start:end]
            message = bytes(line)
            line.clear()
            if len(message) > OFF_LOOP_BYTES:
                parsed = await anyio.to_thread.run_sync(checked, message, max_blocks)
            else:
                parsed = checked(message, max_blocks)
            if parsed is None:
                return too_many_blocks(max_blocks)
            try:
                await deliver.send(parsed)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None  # the session is gone (it closes its end first): nothing to say
            start = end + 1
        if len(line) + len(chunk) - start > max_bytes:
            return over_limit(max_bytes)
        line += chunk[start:]
    return None


def checked(line: bytes, max_blocks: int) -> SessionMessage | Exception | None:
    """``parse(line)``, or None for a line of more than ``max_blocks`` content blocks, told
    before any of them is built."""
    return None if block_count(line, max_blocks) > max_blocks else parse(line)


def block_count(line: bytes, max_blocks: int) -> int:
    """The content blocks in ``line``, counted up to one more than ``max_blocks``."""
    if line.count(b'"type"') <= max_blocks:  # the usual message: one pass in C, no pattern
        return 0
    count = 0
    for _ in CONTENT_BLOCK.finditer(line):
        count += 1
        if count > max_blocks:
            break
    return count


def parse(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message; a line that is not one is handed on as the error,
    for the session to report, as the SDK does."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as error:
        log.debug("an MCP server wrote a line that is not a JSON-RPC message: %s", error)
        return error
    return SessionMessage(message)


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    *,
    errlog: TextIO,
    max_bytes: int,
    max_blocks: int,
    on_overflow: Callable[[str], None],
) -> AsyncGenerator[TransportStreams, None]:
    """The SDK's ``stdio_client``, its reader bounded (see the module docstring)."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # No await between the spawn and the task group: a cancel there would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:  # closed before the drain: a call in flight fails at once
                refused = await read_messages(process.stdout, read_writer, max_bytes, max_blocks)
                if refused is not None:
                    on_overflow(refused)
        except anyio.ClosedResourceError:
            pass  # the session is gone, or our own shutdown closed stdout under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                log.exception("Reading from the MCP server's stdout failed mid-session")
        finally:
            await _drain_stdout(process)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    text = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    data = (text + "\n").encode(server.encoding, server.encoding_error_handler)
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the end, not a request hanging
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()  # the reader moves on to draining: a program stuck writing exits
        write_stream.close()
        with anyio.move_on_after(WRITER_FLUSH_SECONDS):
            await writer_done.wait()
        await _stop_server_process(process)
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # the program must not outlive a cancel
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
