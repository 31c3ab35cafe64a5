"""A local MCP server written with the SDK, for the tools tests: run it over stdio
(``python tests/fakes/mcp_server.py``) or streamable HTTP (``... http PORT``).

Its tools: ``echo`` says the text back (``@everyone`` included: the bot must defuse it),
``fail`` raises, ``tally`` counts its runs (a tool with an effect), ``hang`` never answers,
``huge`` returns ``size`` characters, ``die`` ends the process (a crash, for the restart tests),
``pid`` names the process (to tell a restart), and ``not.a.valid.name`` has a name the model
APIs refuse. With ``FAKE_MCP_MANY`` in its environment it also offers ``nap`` (says how many of
its calls ran at once), ``bloated`` (an input schema over 8 KB) and ``t0``..``t99`` (``t0``
with a 5,000-character description), for the tool-list limits. ``FAKE_MCP_STDERR`` in its
environment is written to its stderr as it starts, as a server's own log would be; with
``FAKE_MCP_EXIT`` it then exits, as a server that cannot start does. With ``FAKE_MCP_SPILL``
it also offers ``spill``, which writes a line to its stdout (or stderr) that never ends (a
broken or hostile server, for the message limit). With ``FAKE_MCP_IMAGES`` it also offers
``draw``, which returns a line of text and a real PNG image (``width`` x ``height``), or bytes
that only claim to be one (``fake = true``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("threadwise-test-tools", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def fail(reason: str = "boom") -> str:
    """Always fails."""
    raise ValueError(reason)


runs = {"tally": 0}


@server.tool()
async def tally(label: str = "") -> str:
    """Count one more run: a tool with an effect, which running twice would do twice."""
    # On the server's loop, in the order the calls arrive (the SDK runs a plain function in a
    # worker thread, where two calls sent at once could count in either order).
    runs["tally"] += 1
    return f"tally {label}: run {runs['tally']}"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "never"


@server.tool()
def huge(size: int = 100_000) -> str:
    """A very long result."""
    return ("all work and no play " * (size // 21 + 1))[:size]


@server.tool()
def die() -> str:
    """End the process at once, as a crash does."""
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server process's id."""
    return str(os.getpid())


@server.tool(name="not.a.valid.name")
def dotted() -> str:
    """A name OpenAI and Anthropic refuse: the bot must not offer it."""
    return "never offered"


if os.environ.get("FAKE_MCP_MANY"):
    naps = {"now": 0, "most": 0}

    @server.tool()
    async def nap(seconds: float = 0.3) -> str:
        """Sleep, then say how many naps ran at once at most (the bot bounds its calls)."""
        naps["now"] += 1
        naps["most"] = max(naps["most"], naps["now"])
        await asyncio.sleep(seconds)
        naps["now"] -= 1
        return f"at most {naps['most']} at once"

    @server.tool()
    def bloated(text: Annotated[str, Field(description="padding " * 1200)] = "") -> str:
        """An input schema too large to offer."""
        return text

    def numbered() -> str:
        return "a numbered tool"

    for number in range(100):
        about = "A long description. " * 250 if number == 0 else "A numbered tool."
        server.tool(name=f"t{number}", description=about)(numbered)


if os.environ.get("FAKE_MCP_SPILL"):
    wire = os.dup(1)  # the SDK moves stdout aside while it serves: this is the bot's pipe

    @server.tool()
    async def spill(to: str = "stdout") -> str:
        """Write a line that never ends to stdout (past the SDK) or stderr; never answer."""
        fd = wire if to == "stdout" else 2

        def endless() -> None:
            start = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": "'
            with contextlib.suppress(OSError):  # the bot closed the pipe
                os.write(fd, start)
                while True:
                    os.write(fd, b"x" * 65536)

        threading.Thread(target=endless, daemon=True).start()
        await asyncio.sleep(3600)
        return "never"


def png(width: int, height: int) -> bytes:
    """A real PNG of one grey, ``width`` x ``height``."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )  # fmt: skip


if os.environ.get("FAKE_MCP_IMAGES"):
    import base64

    from mcp_types import ImageContent, TextContent

    @server.tool()
    def draw(width: int = 64, height: int = 32, fake: bool = False) -> list:
        """Draw a grey picture."""
        data = b"not an image at all" if fake else png(width, height)
        return [
            TextContent(type="text", text=f"drew {width}x{height}"),
            ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type="image/png"),
        ]


if __name__ == "__main__":
    if os.environ.get("FAKE_MCP_STDERR"):
        print(os.environ["FAKE_MCP_STDERR"], file=sys.stderr, flush=True)
    if os.environ.get("FAKE_MCP_EXIT"):
        sys.exit(2)
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run()
