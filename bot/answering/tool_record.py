"""The tool rounds of an answer in its stored interaction.

The calls and results are request messages like any other (OpenAI's ``tool_calls`` and
``tool`` turns, after the prompt, in the order sent), so they are nodes of the store and of the
export. Their context entries say what they are (no Discord message is behind them); the work
log has one line per call with its outcome and time; the parameters keep the tools offered in
OpenAI's format, whichever provider answered, so the export can put them beside the messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.model.tool_loop import ToolProgress
from bot.storage.explain import one_line
from bot.storage.models import ContextEntry, WorkLogEntry

TOOL_CALL = "tool call"
TOOL_RESULT = "tool result"


def tool_context(
    loop: ToolProgress, retold: Mapping[str, dict[int, str]] | None = None
) -> list[ContextEntry]:
    """One entry per added turn, aligned with ``loop.added``; ``retold``: whom a tool's results
    retell, by the tool's name (``catch_up``'s summaries), named on each of its results, so
    forget-user drops them with any of those people, as it drops a summary."""
    retold = retold or {}
    names = {
        call.id: call.name for round_ in loop.rounds for call in round_.calls
    }  # call id -> tool name
    entries = []
    for turn in loop.added:
        if turn["role"] == "tool":
            name = names.get(turn["tool_call_id"], "?")
            entries.append(
                ContextEntry(reasons=[f"{TOOL_RESULT}: {name}"], named=retold.get(name, {}))
            )
        else:
            called = ", ".join(c["function"]["name"] for c in turn.get("tool_calls", ()))
            entries.append(ContextEntry(reasons=[f"{TOOL_CALL}: {called}"]))
    return entries


def tool_work_log(loop: ToolProgress, refused: int | None = None) -> list[WorkLogEntry]:
    """One line per call; ``refused``: the number of the prompt refused as too long that the
    rounds answered (the calls ran, though their turns are not in the stored messages)."""
    entries = []
    where = "" if refused is None else f"prompt {refused} (refused as too long), "
    for number, round_ in enumerate(loop.rounds, start=1):
        for call, outcome in zip(round_.calls, round_.outcomes, strict=True):
            arguments = one_line(call.arguments, 160)
            ran = (
                "not run again (its result for the refused prompt)"
                if outcome.reused
                else f"in {outcome.seconds:.2f} s"
            )
            detail = (
                f"{where}round {number}: {call.name} {arguments}: {outcome.status} {ran}, "
                f"{outcome.original_chars} characters"
            )
            if outcome.status == "not_run":  # the limits said no: nothing ran, nothing came
                detail = f"{where}round {number}: {call.name} {arguments}: {outcome.detail}"
            elif not outcome.ok:
                detail += f" ({outcome.detail})"
            entries.append(
                WorkLogEntry(
                    action="tool_call", detail=detail, status="success" if outcome.ok else "failure"
                )
            )
    if loop.ignored_calls:
        entries.append(
            WorkLogEntry(
                action="tool_call",
                detail=f"{loop.ignored_calls} call(s) asked for after the last round, not run",
                status="failure",
            )
        )
    return entries


def tool_parameters(parameters: dict[str, Any], loop: ToolProgress) -> dict[str, Any]:
    """The request's parameters with the tools in OpenAI's format and without ``tool_choice``
    (it only told the last request not to call)."""
    kept = {k: v for k, v in parameters.items() if k not in ("tools", "tool_choice")}
    return kept | {"tools": [spec.openai() for spec in loop.specs]}
