"""A channel log replayed through the follow decision: what the bot would do with each message.

The ``follow`` command and the studio's follow marks replay a log as if one of its authors were
the bot, with the ``Follower`` the live bot decides with and, before it, the explicit triggers
the live bot applies first (``bot.discord.triggers``: mentions and replies, another bot's
message, an always-on channel): each decision reads only the messages before it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from conversation.common.settings import FollowSettings
from conversation.prompt.names import shown_name
from conversation.selection.clues import Clue
from conversation.selection.follow_model import FollowDecision, explicit
from conversation.selection.follower import Follower, follow_enabled


@dataclass(frozen=True)
class Decided:
    """One message of a replayed log and what the bot would do with it."""

    message: Any
    decision: FollowDecision
    why: str  # the decision's reason, a follow-up's naming whom the bot talks with

    def as_line(self) -> dict[str, Any]:
        """The ``follow`` command's JSON line."""
        score = self.decision.score
        return {
            "message": str(self.message.id),
            "answer": self.decision.answer,
            "score": None if score is None else round(score, 4),
            "why": self.why,
        }


def replay_decisions(
    messages: Iterable[Any],
    bot_id: int,
    settings: FollowSettings,
    follower: Follower,
    *,
    answer_bots: bool,
    always_on_channels: Collection[int],
) -> Iterator[Decided]:
    """A channel log (oldest first) replayed as if ``bot_id`` were the bot: every message of
    anyone else after its first one, decided from the messages before it only (as the live bot
    decides), with the explicit triggers and the follow settings applied. ``answer_bots`` and
    ``always_on_channels`` are the ``[triggers]`` keys of the explicit triggers (which
    ``FollowSettings`` does not hold: the live bot applies them before it follows)."""
    called = _Called(answer_bots, frozenset(always_on_channels))
    names: dict[int, str] = {}
    earlier: list[Clue] = []
    authors: dict[int, int] = {}
    started = False
    for message in messages:
        clue = follower.clue(message)
        if message.author.id == bot_id:
            started = True
        elif started:
            decision = _replayed(
                follower, settings, called, message, clue, earlier, authors, bot_id
            )
            why = decision.describe(lambda user_id: names.get(user_id, f"user {user_id}"))
            yield Decided(message, decision, why)
        names[message.author.id] = shown_name(message.author) or str(message.author.id)
        earlier.append(clue)
        authors[message.id] = message.author.id


@dataclass(frozen=True)
class _Called:
    """The explicit triggers' keys a replay applies before following."""

    answer_bots: bool
    always_on: frozenset[int]


def _replayed(
    follower: Follower,
    settings: FollowSettings,
    called: _Called,
    message: Any,
    clue: Clue,
    earlier: list[Clue],
    authors: dict[int, int],
    bot_id: int,
) -> FollowDecision:
    """What the live bot would do, from the messages before ``message`` only."""
    from_bot = bool(getattr(message.author, "bot", False))
    if from_bot and not called.answer_bots:
        return FollowDecision(False, None, "written by a bot", "no")
    ruled = explicit(clue, bot_id, authors.get)
    if ruled is not None and ruled.answer:
        return ruled
    channel = message.channel
    if channel.id in called.always_on or getattr(channel, "parent_id", None) in called.always_on:
        return FollowDecision(True, None, "an always-on channel", "always_on")
    if ruled is not None:
        return ruled
    if from_bot or not follow_enabled(settings, channel):
        return FollowDecision(False, None, "following is off here", "no")
    return follower.decide_after(earlier, clue, bot_id, settings)
