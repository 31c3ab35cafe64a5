"""The ``[status]`` section: a reaction on the trigger while the bot works on its answer.

Off by default: each change is a Discord request (reactions are rate limited per channel, about
four a second), members see the bot touch their message, and an operator who wants it turns it
on, for the server or per ``[[channels]]`` table. Where the bot lacks Add Reactions (or Read
Message History, which reacting needs too) it stays off without a word.
"""

from __future__ import annotations

from pydantic import Field

from conversation.common import StrictSection

EMOJI_LENGTH = 8
"""At most this many characters: one Unicode emoji, with its joiners and variation selector."""


class StatusSettings(StrictSection):
    reactions: bool = Field(
        False, description="React to the trigger while answering (seen, using a tool, failed)."
    )
    seen: str = Field(
        "👀", min_length=1, max_length=EMOJI_LENGTH, description="The answer is being prepared."
    )
    tool: str = Field("🛠️", min_length=1, max_length=EMOJI_LENGTH, description="A tool is running.")
    failed: str = Field(
        "⚠️",
        min_length=1,
        max_length=EMOJI_LENGTH,
        description="The answer failed (it stays on the trigger).",
    )
