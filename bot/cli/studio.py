"""``python -m bot studio``: serve the studio page until Ctrl-C, printing its address first."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from aiohttp import web

from bot.config.schema import Config
from bot.errors import CommandError
from bot.studio.channel import ChannelStudio
from bot.studio.server import is_loopback, make_app
from conversation.replay import GoldError
from conversation.selection import load_model


def studio_command(args: argparse.Namespace, config: Config) -> int:
    if args.log is None and not args.store:
        raise CommandError(
            "studio: give a channel log (python -m bot studio LOG.json), --store, or both"
        )
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port: must be 0..65535, got {args.port}")
    channel = None
    if args.log is not None:
        try:
            channel = ChannelStudio.for_config(args.log, config)
        except GoldError as error:
            raise CommandError(str(error)) from error
        load_model()  # a broken weights file is one line now, not a failed build later
    store = None
    if args.store:
        from bot.cli.store import open_existing

        store = open_existing(config)
    try:
        asyncio.run(
            _serve_forever(
                make_app(channel, store, loopback_only=is_loopback(args.host)), args.host, args.port
            )
        )
    except OSError as error:
        raise CommandError(
            f"--host {args.host} --port {args.port}: cannot listen: {error.strerror or error}"
        ) from error
    finally:
        if store is not None:
            store.close()
    return 0


@contextlib.asynccontextmanager
async def running(app: web.Application, host: str, port: int) -> AsyncIterator[str]:
    """Serve ``app`` while the block runs; yields its address (with the port actually bound)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        yield f"http://{shown}:{bound_port}/"
    finally:
        await runner.cleanup()


async def _serve_forever(app: web.Application, host: str, port: int) -> None:
    async with running(app, host, port) as url:
        print(f"studio: {url}  (Ctrl-C to stop)", flush=True)
        if not is_loopback(host):
            print(
                f"note: listening on {host}: anyone who can reach it sees the messages shown",
                file=sys.stderr,
                flush=True,
            )
        await asyncio.Event().wait()
