"""The ``[catchup]`` section: what ``/catchup`` reads, how many conversations it summarises, and
how its answer is shown (``bot.answering.catchup`` does the work), and whether the model may
run it as its ``catch_up`` tool (``bot.answering.catchup_tool``). Per channel too
(``[channels.catchup]``)."""

from __future__ import annotations

from pydantic import Field

from conversation.common import StrictSection

DEFAULT_CATCHUP_PROMPT = (
    "You catch a member up on one conversation of a Discord channel they missed. The messages "
    "follow, each numbered like [3]. Write at most {lines} short lines, one point each, in "
    "plain words, oldest point first; end every line with the numbers of the messages it draws "
    "on, like [2][5]. Cite only numbers you were given. Write nothing else."
)


class CatchupSettings(StrictSection):
    """``/catchup``: the conversations of a channel since the asker last spoke, summarised."""

    enabled: bool = Field(True, description="Offer the /catchup command.")
    tool: bool = Field(
        True,
        description="Offer it to the model as the catch_up tool too, where tools are on "
        '("@bot what did I miss?"): the answer, public, passes the summaries on.',
    )
    max_conversations: int = Field(
        5,
        ge=1,
        le=20,
        description="Conversations summarised at most (one model call each): the largest.",
    )
    max_hours: float = Field(
        24,
        gt=0,
        le=168,
        description="How far back it reads at most: the span when the asker has not spoken, "
        "and the bound of the hours option.",
        json_schema_extra={"bound_note": "a week"},
    )
    max_messages: int = Field(
        500, ge=10, le=5000, description="Messages read at most (history pages of 100)."
    )
    summary_lines: int = Field(3, ge=1, le=10, description="Lines per conversation at most.")
    summary_tokens: int = Field(
        300, ge=32, le=4000, description="The model's answer for one conversation at most."
    )
    prompt: str = Field(
        DEFAULT_CATCHUP_PROMPT,
        min_length=1,
        description="The summary's instructions; {lines} is summary_lines.",
    )
    ephemeral: bool = Field(True, description="Only the asker sees the answer.")
