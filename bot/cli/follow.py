"""``python -m bot follow LOG --bot-id USER_ID``: which messages of a log the bot would answer.

The log is replayed as if USER_ID were the bot: for every message written by anyone else after
its first message, one JSON line ``{"message", "answer", "score", "why"}``. Explicit triggers
(a mention of USER_ID, a reply to its message) are answered without a score; a message that
calls no one is scored by the follow decision (``conversation.follow``) with the ``[triggers]``
follow settings of the config. Each decision reads only the messages before it, as the live bot
does: cutting the log anywhere leaves the decisions before the cut as they were. Operators use
it to see where the bot would step in and to tune ``follow_threshold``; tests, to check the
decision on bundled logs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.config.schema import Config, TriggerSettings
from bot.config.validators import snowflake
from bot.discord.follow import Follower, follow_enabled
from bot.errors import CommandError
from conversation.follow import FollowDecision, decide, explicit
from conversation.log_source import LogSource
from conversation.relevance import Clue


def add_parser(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    follow = commands.add_parser(
        "follow",
        parents=[common],
        help="which messages of a log the bot would answer, with USER_ID as the bot",
        description="Replay a DiscordChatExporter JSON log as if USER_ID were the bot and print "
        "one JSON line per message written by anyone else after its first message: "
        '{"message", "answer", "score", "why"}. Mentions of USER_ID and replies to it are '
        "answered; a message that calls no one is answered when it continues the bot's "
        "conversation ([triggers] follow, follow_minutes, follow_threshold).",
    )
    follow.add_argument("log", type=Path, help="DiscordChatExporter JSON export")
    follow.add_argument(
        "--bot-id", type=snowflake, required=True, metavar="USER_ID", help="who plays the bot"
    )
    follow.set_defaults(handler=follow_command)


def follow_command(args: argparse.Namespace, config: Config) -> int:
    source = LogSource.from_file(args.log)
    if not any(message.author.id == args.bot_id for message in source.messages):
        raise CommandError(f"{args.log}: user {args.bot_id} wrote no message in the log")
    follower = Follower()
    settings = config.triggers
    names: dict[int, str] = {}
    earlier: list[Clue] = []
    authors: dict[int, int] = {}
    started = False
    for message in source.messages:
        clue = follower.clue(message)
        if message.author.id == args.bot_id:
            started = True
        elif started:
            decision = _decision(follower, settings, message, clue, earlier, authors, args.bot_id)
            why = decision.describe(lambda user_id: names.get(user_id, f"user {user_id}"))
            line = {
                "message": str(message.id),
                "answer": decision.answer,
                "score": None if decision.score is None else round(decision.score, 4),
                "why": why,
            }
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        names[message.author.id] = message.author.display_name
        earlier.append(clue)
        authors[message.id] = message.author.id
    return 0


def _decision(
    follower: Follower,
    settings: TriggerSettings,
    message: Any,
    clue: Clue,
    earlier: list[Clue],
    authors: dict[int, int],
    bot_id: int,
) -> FollowDecision:
    """What the live bot would do, from the messages before ``message`` only."""
    from_bot = bool(getattr(message.author, "bot", False))
    if from_bot and not settings.answer_bots:
        return FollowDecision(False, None, "written by a bot", "no")
    ruled = explicit(clue, bot_id, authors.get)
    if ruled is not None and ruled.answer:
        return ruled
    channel = message.channel
    always_on = set(settings.always_on_channels)
    if channel.id in always_on or getattr(channel, "parent_id", None) in always_on:
        return FollowDecision(True, None, "an always-on channel", "always_on")
    if ruled is not None:
        return ruled
    if from_bot or not follow_enabled(settings, channel):
        return FollowDecision(False, None, "following is off here", "no")
    return decide(
        follower.model,
        bot_id,
        earlier,
        clue,
        minutes=settings.follow_minutes,
        threshold=settings.follow_threshold,
        relevance=follower.relevance,
    )
