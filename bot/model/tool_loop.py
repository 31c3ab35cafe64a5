"""The tool loop: ask the model, run the tools it calls, give it their results, ask again.

At most ``max_steps`` rounds of calls; the request after the last round still declares the
tools (the calls in its messages need them) but tells the model not to call them. A model (or
server) that calls them anyway and writes nothing has those calls answered "not run" and is
asked once more without the tools offered at all (``bare``), so the answer ends with text.
Each round appends, in OpenAI format, the assistant turn that asked (its text, if it wrote
some first, and its ``tool_calls``) and one ``tool`` turn per call: the next request is the
previous one plus those turns, so each assistant turn is recorded with exactly the prefix it
was sampled from.

Calls past ``max_calls`` in a round, or past ``max_total`` in the answer, are not run: each
gets an error result saying why. An answer cut at its token limit (``max_tokens``, ``length``)
while asking for calls has none run (their arguments may be cut short); the next request asks
for the final answer, as does the one after the answer's last allowed call.

The ids of the calls are the bot's: a server's id is kept when it is well formed (what
Anthropic takes: letters, digits, ``_`` and ``-``) and not yet used in the request, else the
call gets a fresh one (``own_ids``). Servers repeat ids (gateways number calls per answer) or
use characters the API refuses in the next request; the record keeps the ids sent, so every
later round and the export agree with them. Nothing needs the server's id back: a provider
reads only the ids of the request it is sent.

The loop knows tools only through :class:`ToolRunner` (the bot's toolbox, or a test's);
running them never raises here: a failing or slow tool is an error result the model reads.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.model.call import Attempt, CacheHints, Completion, DeltaCallback, Usage
from bot.model.client import ModelClient
from bot.model.errors import ModelError
from bot.tools.defuse import wrap
from bot.tools.spec import ToolCallRequest, ToolOutcome, ToolSpec

log = logging.getLogger(__name__)

CUT_OFF = ("max_tokens", "length")  # Anthropic's and OpenAI's "the token limit ended it"
CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # Anthropic's pattern (OpenAI takes any)
NO_MORE_CALLS = "not run: this answer may call no more tools; answer now with what you have"

StatusCallback = Callable[[str], Awaitable[None]]


class ToolRunner(Protocol):
    def specs(self) -> list[ToolSpec]: ...

    def status(self, calls: Sequence[ToolCallRequest]) -> str: ...

    async def run(
        self, calls: Sequence[ToolCallRequest], room_chars: int | None = None
    ) -> list[ToolOutcome]: ...


@dataclass
class ToolRound:
    """One round: the calls the model asked for and what each gave back."""

    calls: tuple[ToolCallRequest, ...]
    outcomes: list[ToolOutcome]
    seconds: float


@dataclass
class ToolProgress:
    """The tools offered, the turns the rounds added and every attempt of every request: what
    an answer did with its tools, whether it ended with text or with a :class:`ModelError`
    (which then carries it as ``tool_progress``: calls already run are recorded, not lost)."""

    specs: list[ToolSpec]
    added: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[ToolRound] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    ignored_calls: int = 0  # calls asked for after the last round (not run)
    first_usage: Usage | None = None  # of the first request: the prompt without tool turns


@dataclass(kw_only=True)
class LoopResult(ToolProgress):
    """The progress of an answer that ended with text, and that final completion."""

    completion: Completion


def assistant_turn(text: str, calls: Sequence[ToolCallRequest]) -> dict[str, Any]:
    """The assistant message that asked for ``calls``, as OpenAI takes it back."""
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ],
    }


def ids_in(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tool call ids the messages already use."""
    return {
        str(call.get("id"))
        for message in messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, Mapping)
    }


def own_ids(calls: Sequence[ToolCallRequest], taken: set[str]) -> tuple[ToolCallRequest, ...]:
    """The calls with ids the request can carry: the server's when well formed and not in
    ``taken``, else ``call_N`` (the first N free); ``taken`` gains them."""
    owned = []
    for call in calls:
        call_id = call.id
        if not CALL_ID.fullmatch(call_id) or call_id in taken:
            call_id = next(f"call_{n}" for n in range(len(taken) + 1) if f"call_{n}" not in taken)
            call = call.model_copy(update={"id": call_id})
        taken.add(call_id)
        owned.append(call)
    return tuple(owned)


def tool_turn(outcome: ToolOutcome) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": outcome.call_id, "content": outcome.content}


async def complete_with_tools(
    model: ModelClient,
    messages: Sequence[Mapping[str, Any]],
    tools: ToolRunner,
    *,
    max_steps: int,
    on_delta: DeltaCallback | None = None,
    on_status: StatusCallback | None = None,
    room_chars: int | None = None,
    cache: CacheHints | None = None,
    max_calls: int = 8,
    max_total: int = 24,
) -> LoopResult:
    """Answer ``messages`` with ``tools`` offered (see the module docstring). ``room_chars``:
    what the prompt's budget leaves for the tool turns (None: no limit); each round's results
    share what is left of it. ``cache``: the prompt's cache hints, the same for every round
    (the prompt is the start of each request).

    A :class:`ModelError` of any request propagates as ``complete`` raises it, its class kept
    (a context too long is still one), with the rounds so far as its ``tool_progress`` and the
    earlier requests' attempts before its own."""
    progress = ToolProgress(tools.specs())
    specs, added, rounds = progress.specs, progress.added, progress.rounds  # filled as it goes
    attempts = progress.attempts
    step = used = 0
    must_answer = bare = False
    taken = ids_in(messages)
    while True:
        final = step >= max_steps or not specs or must_answer
        try:
            completion = await model.complete(
                [*messages, *added], on_delta=on_delta, tools=specs, final=final, bare=bare,
                cache=cache,
            )  # fmt: skip
        except ModelError as error:
            error.attempts = (*attempts, *error.attempts)
            error.tool_progress = progress
            raise
        attempts.extend(completion.attempts)
        if step == 0:
            progress.first_usage = completion.usage
        calls = own_ids(completion.tool_calls, taken)
        if calls and final and not bare and not completion.text.strip():
            # Told not to call, it called and wrote nothing: its calls are answered "not run"
            # and it is asked once more, the tools not even offered, so the member gets text.
            log.info("the model called tools when told to answer: one more request without")
            bare = True
            refused = [_not_run(call, NO_MORE_CALLS) for call in calls]
            rounds.append(ToolRound(calls, refused, 0.0))
            added.append(assistant_turn(completion.text, calls))
            added.extend(tool_turn(outcome) for outcome in refused)
            continue
        if not calls or final:
            if calls:
                log.info("the model asked for %d tool call(s) after the last round", len(calls))
            progress.ignored_calls = len(calls) if final else 0
            return LoopResult(**vars(progress), completion=completion)
        step += 1
        run, refused = _split(calls, completion.finish_reason, max_calls, max_total - used)
        if on_status is not None and run:
            try:
                await on_status(tools.status(run))
            except Exception as error:  # the status line is cosmetic
                log.debug("tool status not shown: %s", error)
        began = time.monotonic()
        if room_chars is not None:
            room_chars -= sum(len(c.arguments) + len(c.name) for c in calls) + len(completion.text)
        used += len(run)
        must_answer = completion.finish_reason in CUT_OFF or used >= max_total
        outcomes = await tools.run(run, room_chars) if run else []
        outcomes = [*outcomes, *refused]
        if room_chars is not None:
            room_chars -= sum(len(outcome.content) for outcome in outcomes)
        rounds.append(ToolRound(calls, outcomes, time.monotonic() - began))
        added.append(assistant_turn(completion.text, calls))
        added.extend(tool_turn(outcome) for outcome in outcomes)


def _split(
    calls: Sequence[ToolCallRequest], finish_reason: str | None, max_calls: int, left: int
) -> tuple[list[ToolCallRequest], list[ToolOutcome]]:
    """The first calls, to run, and an error outcome for each later one, not run."""
    if finish_reason in CUT_OFF:
        why = "not run: your answer reached its token limit while asking for it; answer now"
        return [], [_not_run(c, why) for c in calls]
    allowed = max(0, min(max_calls, left))
    why = (
        f"not run: at most {max_calls} tool calls per round"
        if allowed == max_calls
        else "not run: this answer has used all its tool calls; answer now"
    )
    run = list(calls[:allowed])
    return run, [_not_run(c, why) for c in calls[allowed:]]


def _not_run(call: ToolCallRequest, why: str) -> ToolOutcome:
    return ToolOutcome(
        call_id=call.id,
        name=call.name,
        content=wrap(call.name, why, error=True),
        status="not_run",
        detail=why,
    )
