"""Hot reload applied: the running client handed each valid new config (``bot.config.reload``
decides what changed and what may change live; this module knows which parts of the client read
which settings).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from bot.config.reload import ConfigWatcher
from bot.config.schema import Config
from bot.serve.client import ThreadwiseClient, materialize_settings

log = logging.getLogger(__name__)


def apply_to_client(client: ThreadwiseClient, old: Config, config: Config) -> None:
    """Hand every part of the running bot that reads settings per answer the new ones: each
    owner swaps what it owns. The answerer goes first: it builds the most (every channel's
    parts, ``/model`` choices ending), and a failure there leaves the old settings everywhere.
    """
    client.answerer.reconfigure(config)
    client.reconfigure(config)
    client.answerer.model.apply_settings(config.model)
    client.materializer.reconfigure(**materialize_settings(config))
    if client.materializer.articles is not None:
        client.materializer.articles.apply_limits(config.articles)
    if config.logging.level != old.logging.level:
        logging.getLogger().setLevel(config.logging.level)


@contextlib.asynccontextmanager
async def watching_config(
    client: ThreadwiseClient, config_path: Path | None, *, interval: float | None = None
) -> AsyncIterator[ConfigWatcher | None]:
    """Watch the config file while the block runs (nothing to watch without one)."""
    path = config_path
    if path is None:
        yield None
        return
    watcher = ConfigWatcher(
        path, client.config, lambda old, new: apply_to_client(client, old, new), interval=interval
    )
    task = asyncio.create_task(watcher.run(), name="config-watcher")
    log.debug("watching %s for changes", path)
    try:
        yield watcher
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
