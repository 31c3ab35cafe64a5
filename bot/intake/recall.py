"""The bot's latest answer per channel, read back from the store at start: the follow-ups right
after a restart are recognized as they were before it (the channel caches start empty).

The answers are read within the longest follow window of the config (the top level's or a
``[[channels]]`` table's): which table a channel takes is only known once the gateway shows the
channel (its category, a thread's parent), and each follow-up is then held to its own channel's
``follow_minutes`` when it is admitted (``bot.intake.admission``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.config.channels import effective_configs, top_level
from bot.config.schema import Config
from bot.storage import Store, StoreError
from bot.storage.models import InteractionSummary
from conversation.selection import Follower
from conversation.sources import snowflake_time

log = logging.getLogger(__name__)

RECALLED_INTERACTIONS = 200
"""The latest interactions read at start for the bot's recent answers (one per channel kept)."""


def longest_follow_minutes(config: Config) -> float:
    """The longest ``follow_minutes`` any channel follows with (the top level or a table)."""
    configs = [top_level(config), *effective_configs(config)]
    return max(c.triggers.follow_minutes for c in configs)


async def recall_recent_answers(
    store: Store,
    follower: Follower,
    bot_id: int,
    follow_minutes: float,
    *,
    forgotten: Mapping[int, datetime] | None = None,
) -> None:
    """Hand ``follower`` the bot's latest answer per channel within ``follow_minutes`` (the
    longest window: ``longest_follow_minutes``); none to what a person ``forgotten`` (by id:
    when, forget-user) asked before the forget (what they ask after it is new)."""
    forgotten = forgotten or {}
    since = datetime.now(UTC) - timedelta(minutes=follow_minutes)

    def recent() -> list[Any]:
        latest: dict[int, Any] = {}
        for summary in store.recent_interactions(limit=RECALLED_INTERACTIONS):
            if summary.ended_at < since or summary.outcome != "success":
                continue
            if summary.removed or _asked_before_forget(summary, forgotten):
                continue
            if summary.channel_id not in latest:
                latest[summary.channel_id] = store.get_interaction(summary.interaction_id)
        # An answer before the channel's latest /fresh seal is over: nothing to follow.
        return [
            record
            for channel_id, record in latest.items()
            if (seal := store.latest_seal(channel_id)) is None
            or seal < max(record.answer_message_ids, default=record.trigger_message_id)
        ]

    try:
        records = await asyncio.to_thread(recent)
    except StoreError as error:
        log.warning("could not read the recent answers from the store: %s", error)
        return
    for record in records:
        if not record.answer_message_ids:
            continue
        sent = record.request_messages[-1].get("content") if record.request_messages else ""
        follower.recall_answer(
            record.channel_id,
            bot_id,
            (record.trigger_message_id, record.trigger_author_id, str(sent or "")),
            record.answer_message_ids,
            record.answer,
        )
    if records:
        log.info("recalled the latest answer in %d channel(s) from the store", len(records))


def _asked_before_forget(summary: InteractionSummary, forgotten: Mapping[int, datetime]) -> bool:
    """Whether the answered message was its author's before forget-user removed them."""
    at = forgotten.get(summary.trigger_author_id)
    return at is not None and snowflake_time(summary.trigger_message_id) < at
