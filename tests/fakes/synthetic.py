"""A seeded generator of busy channel logs in DiscordChatExporter JSON form.

Several conversations interleave, each among a few of the channel's members; people reply
(sometimes to old messages), address each other by mention, and the channel falls silent for
hours now and then. The same seed always gives the same log, so benchmarks and property tests
are repeatable without vendoring anyone's real export.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from conversation.sources.snowflakes import time_snowflake

WORDS = (
    "build", "deploy", "kernel", "proxy", "cache", "token", "release", "branch", "merge",
    "config", "server", "client", "docs", "test", "patch", "crash", "log", "disk", "network",
    "update", "version", "install", "error", "fix", "works", "thanks", "why", "how",
)  # fmt: skip


def _user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "name": name,
        "discriminator": "0000",
        "nickname": name.capitalize(),
        "color": None,
        "isBot": bot,
        "roles": [],
        "avatarUrl": "",
    }


def busy_channel(
    *,
    seed: int = 1,
    messages: int = 2000,
    members: int = 24,
    parallel: int = 4,
    reply_rate: float = 0.3,
    old_reply_rate: float = 0.03,
    silence_rate: float = 0.01,
    channel_id: int = 700_000_000_000_000_001,
    start: datetime | None = None,
) -> dict[str, Any]:
    """A DCE export of one busy channel; ``conversation`` of each message is in ``_gold``."""
    rng = random.Random(seed)
    users = [_user(800_000_000_000_000_000 + i, f"user{i}") for i in range(members)]
    moment = start or datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    conversations: list[dict[str, Any]] = []
    next_conversation = 0
    out: list[dict[str, Any]] = []
    last_id = 0
    for _ in range(messages):
        if rng.random() < silence_rate:
            moment += timedelta(hours=rng.uniform(1, 12))
            conversations.clear()
        moment += timedelta(seconds=rng.expovariate(1 / 20))
        while len(conversations) < parallel:
            people = rng.sample(users, rng.randint(2, 4))
            conversations.append({"id": next_conversation, "people": people, "messages": []})
            next_conversation += 1
        conversation = rng.choice(conversations)
        author = rng.choice(conversation["people"])
        message_id = max(time_snowflake(moment), last_id + 1)
        last_id = message_id
        message: dict[str, Any] = {
            "id": str(message_id),
            "type": "Default",
            "timestamp": moment.isoformat(),
            "timestampEdited": None,
            "callEndedTimestamp": None,
            "isPinned": False,
            "content": " ".join(rng.choices(WORDS, k=rng.randint(3, 12))),
            "author": author,
            "attachments": [],
            "embeds": [],
            "stickers": [],
            "reactions": [],
            "mentions": [],
            "_gold": conversation["id"],
        }
        history = conversation["messages"]
        if history:
            if rng.random() < old_reply_rate and out:
                target = rng.choice(out[: max(1, len(out) // 2)])
            elif rng.random() < reply_rate:
                target = rng.choice(history[-5:])
            else:
                target = None
            if target is not None:
                message["type"] = "Reply"
                message["reference"] = {
                    "messageId": target["id"],
                    "channelId": str(channel_id),
                    "guildId": "700000000000000000",
                }
            addressee = rng.choice(conversation["people"])
            if addressee is not author and rng.random() < 0.5:
                message["mentions"] = [addressee]
        history.append(message)
        out.append(message)
        if len(history) > rng.randint(8, 40):
            conversations.remove(conversation)
    return {
        "guild": {"id": "700000000000000000", "name": "Synthetic", "iconUrl": ""},
        "channel": {
            "id": str(channel_id),
            "type": "GuildTextChat",
            "categoryId": None,
            "category": None,
            "name": f"busy-{seed}",
            "topic": None,
        },
        "dateRange": {"after": None, "before": None},
        "exportedAt": "2026-11-21T00:00:00+00:00",
        "messages": out,
        "messageCount": len(out),
    }
