"""``python -m bot run``: the bot served until cancelled or terminated, and its exit codes.

Kept apart from the client (``bot.serve.client``) because it chooses between the plain and the
sharded client (``bot.serve.sharding``), which builds on the plain one: both import the client,
neither the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path

import aiohttp
import nextcord

from bot.answering.result import Recorder
from bot.config.channels import top_level
from bot.config.schema import Config, locate_config, require_token
from bot.model.client import ModelClient
from bot.serve.client import INTENT_HELP
from bot.serve.sharding import client_class
from bot.storage import Store
from conversation.articles import ArticleService
from conversation.selection import load_follow_model, load_model

log = logging.getLogger(__name__)


async def serve(
    config: Config,
    token: str,
    *,
    recorder: Recorder | None = None,
    store: Store | None = None,
    config_path: Path | None = None,
) -> None:
    """Run until cancelled, with one article service and one model session for all answers.

    Edits to the file at ``config_path``, if given, apply while running.
    """
    from bot.serve.live_config import watching_config
    from bot.serve.tools import open_toolbox

    async with (
        ArticleService(config.articles) as articles,
        ModelClient(config.model) as model,
        open_toolbox(config.tools, articles) as tools,
    ):
        client = client_class(config)(
            config, articles=articles, model=model, recorder=recorder, store=store, tools=tools
        )
        from bot.serve.health import start_beating

        health = start_beating(client)
        try:
            async with watching_config(client, config_path):
                await client.start(token)
        finally:
            if not client.is_closed():
                await client.close()
            if health is not None:
                health.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await health


def run_bot(config: Config, *, config_path: Path | None = None) -> int:
    """``python -m bot run``: exit codes 0 (stopped), 2 (config), 3 (Discord refused us)."""
    from bot.serve.startup import configure_logging, log_configuration

    token = require_token(config, config_path)
    load_model()  # read before anything starts: a broken weights file is one line (bot.cli.main)
    load_follow_model()  # the same for the follow decision's weights
    configure_logging(config)
    source = locate_config(config_path)
    log_configuration(config, source)
    watched = source.path if source.exists else None  # edits to it apply while running
    try:
        if asyncio.run(_serve_until_terminated(config, token, watched)):
            log.info("stopped")
    except nextcord.PrivilegedIntentsRequired:
        print(f"error: {INTENT_HELP}", file=sys.stderr)
        return 3
    except nextcord.LoginFailure:
        print(
            "error: Discord rejected the token ([discord] token, DISCORD_TOKEN): copy it again "
            'from the Developer Portal\'s Bot page, the token alone (no "Bot " prefix, no quotes)',
            file=sys.stderr,
        )
        return 3
    except (
        aiohttp.ClientError,
        OSError,
        nextcord.HTTPException,
        nextcord.GatewayNotFound,
    ) as error:
        print(
            f"error: cannot reach Discord at {config.discord.api_base} ([discord] api_base): "
            f"{type(error).__name__}: {str(error)[:200]}",
            file=sys.stderr,
        )
        return 3
    except KeyboardInterrupt:
        pass
    return 0


async def _serve_until_terminated(config: Config, token: str, config_path: Path | None) -> bool:
    from bot.serve.shutdown import run_until_terminated

    return await run_until_terminated(_serve_with_store(config, token, config_path))


async def _serve_with_store(config: Config, token: str, config_path: Path | None) -> None:
    from bot.answering.recording import open_recorder
    from bot.serve.startup import start_model_probe

    probe = start_model_probe(top_level(config).model)  # the endpoint most channels use
    try:
        async with open_recorder(config) as recorder:
            await serve(
                config, token, recorder=recorder, store=recorder.store, config_path=config_path
            )
    finally:
        probe.cancel()
