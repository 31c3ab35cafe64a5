"""Channel logs replayed as the bot would see them: the replay tools' and the tests' ground.

Modules: ``dce`` (DiscordChatExporter JSON exports parsed, and turned into Discord API payloads),
``log_source`` (a source that replays an export as real nextcord ``Message`` objects, paging and
counting REST calls like Discord), ``replay_cache`` (the cache a replayed build starts from: cold,
or as a watching bot holds it), ``log_contexts`` (the builder run over a whole log, for
``contexts`` and the studies), ``gold`` (scoring a context against a hand-labelled
``.gold.json``, one definition for the studies and the studio), ``follow_replay`` (the follow
decisions over a log with one of its authors as the bot, for ``follow`` and the studio).

May import every other package of ``conversation``; ``bot`` uses it for its replay commands and
the studio. A change goes here when a new export shape must be read or a figure scored
differently.
"""

from conversation.replay.dce import (
    PRIVATE_CHANNEL_TYPES,
    ChannelExport,
    DceChannel,
    DceGuild,
    DceUser,
    ExportError,
    PayloadBuilder,
    load_export,
    member_payload,
    parse_export,
    user_payload,
)
from conversation.replay.follow_replay import replay_decisions
from conversation.replay.gold import (
    GoldError,
    GoldTrigger,
    Score,
    gold_path_for,
    labelled_from,
    load_gold,
)
from conversation.replay.log_contexts import select_contexts
from conversation.replay.log_source import LogSource
from conversation.replay.replay_cache import ReplayCaches

__all__ = [
    "PRIVATE_CHANNEL_TYPES",
    "ChannelExport",
    "DceChannel",
    "DceGuild",
    "DceUser",
    "ExportError",
    "GoldError",
    "GoldTrigger",
    "LogSource",
    "PayloadBuilder",
    "ReplayCaches",
    "Score",
    "gold_path_for",
    "labelled_from",
    "load_export",
    "load_gold",
    "member_payload",
    "parse_export",
    "replay_decisions",
    "select_contexts",
    "user_payload",
]
