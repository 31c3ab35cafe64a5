"""The ``catch_up`` tool: ``/catchup`` for the author of an answer's trigger, in the trigger's
channel, run when the model asks for it ("@bot what did I miss?"); the summaries, with their
jump links, are the tool's result, which the answer passes on.

The catch-up is ``bot.answering.catchup``'s, whole: the asker is the trigger's author (one who
may not read the channel's history gets nothing), the bounds are ``[catchup]``'s, it reads
what came before the question, and each conversation summarised is a model call and a record
of its own, under an id made for the call (``made_id``) that the answer's work log names. The
answer's record says whom the summaries retell (the result's context entry), so forget-user
drops the result and the answer with any of them, as it drops a ``/catchup`` summary.

Unlike ``/catchup``'s, the answer is public: the member asked in public, in the channel the
catch-up reads.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nextcord

from bot.answering.catchup import Catchup, CatchupAsk, CaughtUp
from bot.config.schema import Config
from bot.discord.triggers import TriggerMessage
from bot.storage.models import WorkLogEntry
from bot.tools.read_page import ToolFailed
from bot.tools.spec import AnswerTool, ToolSpec

CATCH_UP = ToolSpec(
    name="catch_up",
    description=(
        "What the member asking missed in this channel: the conversations since they last "
        "spoke here, summarised, each line linking the messages it draws on. Pass the "
        "summaries on with their links."
    ),
    parameters={
        "type": "object",
        "properties": {
            "hours": {
                "type": "number",
                "description": "Over the last hours instead.",
            }
        },
    },
)
STATUS = "catching up on the channel"
WORK_LOG_ACTION = "catchup_tool"  # forget-user reads it: bot/storage/mutations.py


@dataclass(frozen=True)
class CatchupRun:
    """One call of the tool: the id its records are under, and what it found."""

    ask_id: int
    caught: CaughtUp


def made_id() -> int:
    """An id for one call's records: a snowflake of now (the store's ids keep time's order),
    its low bits random, so two calls of one millisecond differ. No interaction of the store
    is triggered by it: a Discord message of the same millisecond would need the same 22 bits
    (one chance in four million) and to be answered in this very channel."""
    return nextcord.utils.time_snowflake(datetime.now(UTC)) | secrets.randbits(22)


def for_the_model(caught: CaughtUp) -> str:
    """The result as the model reads it: times in UTC (not Discord's markup), each block with
    its links."""
    if caught.refused is not None:
        return f"Nothing was read; tell the member why: {caught.refused}"
    assert caught.since is not None
    since = f"{caught.since:%Y-%m-%d %H:%M} UTC"
    span = f"since the member last spoke here ({since})" if caught.since_spoke else f"since {since}"
    if not caught.summaries:
        return f"Nothing to catch up on: no conversation here {span}."
    head = (
        f"Conversations {span}: {len(caught.summaries)} summarised of {caught.found} found. "
        "Each [n] links to a message."
    )
    blocks = [s.shown(f"{s.first_at:%H:%M} UTC") for s in caught.summaries]
    return "\n\n".join([head, *blocks])


class CatchupTool:
    """``catch_up`` bound to one answer's trigger, and what its calls found, for the record."""

    def __init__(self, catchup: Catchup, trigger: TriggerMessage, config: Config) -> None:
        self.catchup = catchup
        self.trigger = trigger
        self.max_hours = config.catchup.max_hours
        self.runs: list[CatchupRun] = []
        # Reading the history, then one model call per conversation: each its own call's time.
        steps = config.catchup.max_conversations + 1
        self.tool = AnswerTool(
            CATCH_UP, self.run, STATUS, timeout_seconds=steps * config.tools.call_timeout_seconds
        )

    async def run(self, arguments: dict[str, Any]) -> str:
        hours = arguments.get("hours")
        if hours is not None:
            if isinstance(hours, bool) or not isinstance(hours, int | float) or not hours > 0:
                raise ToolFailed("hours must be a positive number (or left out: since they spoke)")
            hours = min(float(hours), self.max_hours)
        trigger = self.trigger
        ask = CatchupAsk(trigger.channel, trigger.author, made_id(), hours, question=trigger)
        caught = await self.catchup.catch_up(ask)
        self.runs.append(CatchupRun(ask.ask_id, caught))
        return for_the_model(caught)


def catchup_tool_for(
    catchup: Catchup | None, trigger: TriggerMessage, config: Config
) -> CatchupTool | None:
    """The tool for this answer, when the channel's ``[catchup]`` offers it (``enabled`` and
    ``tool``); whether tools are offered at all is ``[tools]``'s (``bot.answering.tool_use``)."""
    if catchup is None or not (config.catchup.enabled and config.catchup.tool):
        return None
    return CatchupTool(catchup, trigger, config)


def retold(runs: Sequence[CatchupRun]) -> dict[int, str]:
    """Everyone the calls' summaries retell (id -> name as shown)."""
    return {k: v for run in runs for k, v in run.caught.retold().items()}


def catchup_work_log(runs: Sequence[CatchupRun]) -> list[WorkLogEntry]:
    """One line per call: what it found, and the id its summaries' records are under."""
    entries = []
    for run in runs:
        caught = run.caught
        if caught.refused is not None:
            detail, count = f"nothing read: {caught.refused}", 0
        else:
            count = len(caught.summaries)
            detail = (
                f"{count} conversation(s) of {caught.found} found summarised; their records: "
                f"explain {run.ask_id}"
            )
        entries.append(WorkLogEntry(action=WORK_LOG_ACTION, detail=detail, count=count))
    return entries
