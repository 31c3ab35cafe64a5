"""``python -m bot follow LOG --bot-id USER_ID``: which messages of a log the bot would answer.

The log is replayed as if USER_ID were the bot: for every message written by anyone else after its
first message, one JSON line ``{"message", "answer", "score", "why"}``. Explicit triggers (a mention
of USER_ID, a reply to its message) are answered without a score; a message that calls no one is
scored by the follow decision (``conversation.selection.follow_model``) with the ``[triggers]``
follow settings the live bot has in the log's channel (its ``[[channels]]`` table's, if one
matches).
Each decision reads only the messages before it, as the live bot does: cutting the log anywhere
leaves the decisions before the cut as they were. Operators use it to see where the bot would step
in and to tune ``follow_threshold``; tests, to check the decision on bundled logs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bot.config.export_settings import settings_for_export
from bot.config.schema import Config
from bot.config.validators import snowflake
from bot.errors import CommandError
from conversation.replay import LogSource, replay_decisions
from conversation.selection import Follower


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
    triggers = settings_for_export(config, source.export).triggers  # as the live bot there
    decisions = replay_decisions(
        source.messages,
        args.bot_id,
        triggers,
        Follower(),
        answer_bots=triggers.answer_bots,
        always_on_channels=triggers.always_on_channels,
    )
    for decided in decisions:
        sys.stdout.write(json.dumps(decided.as_line(), ensure_ascii=False) + "\n")
    return 0
