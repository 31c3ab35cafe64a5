"""A TCP proxy to a local server's socket that can be paused: a database that stalls.

While paused it still accepts connections (the kernel does the handshake, as for a server
stopped with SIGSTOP or one behind a frozen network path) but forwards no byte either way, so
a client waits on a connection that looks alive. Resumed, everything held goes through.
It runs its own event loop in a thread of its own: the store reads synchronously too (on the
caller's thread, at times the test's loop), and a proxy in that loop could not answer them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path


class StallingProxy:
    """``with StallingProxy(unix_socket) as proxy``: ``proxy.port`` on 127.0.0.1."""

    def __init__(self, unix_socket: Path) -> None:
        self.unix_socket = unix_socket
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def pause(self) -> None:
        self._loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        self._loop.call_soon_threadsafe(self._flowing.set)

    def __enter__(self) -> StallingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.resume()
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        self._flowing.set()
        self._server = await asyncio.start_server(self._connected, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    async def _connected(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        await self._flowing.wait()  # a paused database does not even greet
        server_in, server_out = await asyncio.open_unix_connection(str(self.unix_socket))
        pumps = [
            asyncio.ensure_future(self._pump(client_in, server_out)),
            asyncio.ensure_future(self._pump(server_in, client_out)),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
                self._pumps.discard(pump)
            for writer in (client_out, server_out):
                writer.close()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(65536):
            await self._flowing.wait()
            sink.write(data)
            await sink.drain()
