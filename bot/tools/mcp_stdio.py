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

The spawn and stop helpers are private names of the SDK (its version is pinned in
``constraints.txt``): an SDK that renames them fails this import, and the tests with it; one
that bounds its own reader makes this module unneeded.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
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


def over_limit(max_bytes: int) -> str:
    """Why the connection was dropped, in the log and in the failed call's result."""
    return f"sent a message over the {max_bytes}-byte limit: connection dropped, it restarts"


async def read_messages(
    stdout: ByteReceiveStream,
    deliver: MemoryObjectSendStream[SessionMessage | Exception],
    max_bytes: int,
) -> bool:
    """Deliver each line of ``stdout`` as a message until it ends or the session is gone
    (True), or until a line is over ``max_bytes`` (False): at most ``max_bytes`` plus one read
    are held at any time."""
    line = bytearray()
    async for chunk in stdout:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if len(line) + end - start > max_bytes:
                return False
            line += chunk[start:end]
            try:
                await deliver.send(parse(bytes(line)))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return True  # the session is gone (it closes its end first): nothing to say
            line.clear()
            start = end + 1
        if len(line) + len(chunk) - start > max_bytes:
            return False
        line += chunk[start:]
    return True


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
    on_overflow: Callable[[], None],
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
                if not await read_messages(process.stdout, read_writer, max_bytes):
                    on_overflow()
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
