"""A message that calls for an answer, as one value: the message, why it is answered, and for a
follow-up the line that says why (``Trigger``).

The value travels whole from the client's ``on_message`` through the burst window and the line
to the answer and its record, so nothing about a trigger is kept beside it, looked up by its id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.discord.triggers import TriggerKind, TriggerMessage

Kind = TriggerKind | Literal["follow"]
"""Why a message is answered: it calls the bot (``TriggerKind``: a mention, a reply to the bot,
a DM, an always-on channel) or continues the bot's conversation without calling it."""


@dataclass(frozen=True)
class Trigger:
    """A message the bot will answer, and why (the metrics count answers by ``kind``)."""

    message: TriggerMessage  # a nextcord Message
    kind: Kind
    # For a follow-up: why a message that calls no one is answered
    # (``conversation.selection.follower``), kept in the record for ``/context`` and ``explain``.
    followed: str | None = None
