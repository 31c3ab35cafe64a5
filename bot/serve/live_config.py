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
from typing import TYPE_CHECKING

from bot.answering.recording import InteractionRecorder
from bot.config.reload import ConfigWatcher
from bot.config.schema import Config
from bot.discord.mentions import allowed_mentions
from conversation.selection.builder import ContextBuilder

if TYPE_CHECKING:
    from bot.serve.client import ThreadwiseClient

log = logging.getLogger(__name__)


def apply_to_client(client: ThreadwiseClient, old: Config, config: Config) -> None:
    """Hand every part of the running bot that reads settings per answer the new ones.

    Everything new is built before anything is swapped, so a failure leaves the old settings.
    """
    answerer = client.answerer
    materializer = client.materializer
    builder = ContextBuilder(config.context, links=answerer.builder.links)
    mentions = allowed_mentions(config.mentions)
    options = materializer.options.model_copy(
        update={
            "vision": config.model.vision,
            "max_text_chars": config.attachments.max_text_chars,
            "max_text_attachments": config.attachments.max_text_attachments,
        }
    )
    client.config = answerer.config = config
    client.allowed_mentions = mentions
    answerer.builder = builder
    answerer.model.apply_settings(config.model)
    answerer.reconfigure(config)  # each channel's settings afresh; /model choices end here
    if isinstance(answerer.recorder, InteractionRecorder):
        answerer.recorder.config = config
    materializer.options = options
    if materializer.articles is not None:
        materializer.articles.apply_limits(config.articles)
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
