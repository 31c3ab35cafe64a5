"""What an answer's tool calls returned, kept across its prompts.

When the server answers "context too long", the answer is asked again from the start with a
smaller prompt, and the model asks again for the calls it made before. A tool may have done
something (written, sent, paid for): running it again would do it twice, and costs the time of
the first run again. So an answer remembers its calls' results; in a later attempt, a call with
the same name and arguments gets the result it had (cut to that attempt's room), not a second
run. Within one attempt a repeated call runs again: a model that calls twice in one exchange
means it (a page that changed, a counter), and it reads both results.

Not given back: a call answered "its server is down, try again later", which is not kept
(trying again is what the model was told; when the server dropped the connection during the
call the tool may have run, and nothing can say), and a page read whose host the smaller
prompt no longer names (the call runs, and the host rule refuses it).
"""

from __future__ import annotations

import json
from collections import defaultdict, deque

from bot.tools.spec import ToolCallRequest, ToolStatus, parse_arguments

RawResult = tuple[str, ToolStatus, float]
"""A call's text before it is cut to the room, its status, and how long it ran (seconds)."""

CallKey = tuple[str, str]


def call_key(call: ToolCallRequest) -> CallKey:
    """The same call whatever the spacing or key order of its arguments (models vary both)."""
    arguments = parse_arguments(call.arguments)
    if arguments is None:
        return call.name, call.arguments
    return call.name, json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class CallMemory:
    """Every call one answer ran, in order; each attempt reads it through ``for_attempt``."""

    def __init__(self) -> None:
        self._ran: list[tuple[CallKey, RawResult]] = []

    def for_attempt(self) -> AttemptMemory:
        """The results earlier attempts can give this one (each at most once)."""
        return AttemptMemory(self)

    def keep(self, call: ToolCallRequest, result: RawResult) -> None:
        self._ran.append((call_key(call), result))

    def runs(self) -> list[tuple[CallKey, RawResult]]:
        return list(self._ran)


class AttemptMemory:
    """One attempt's view: the results run before it began, taken one call at a time."""

    def __init__(self, memory: CallMemory) -> None:
        self._memory = memory
        self._earlier: defaultdict[CallKey, deque[RawResult]] = defaultdict(deque)
        for key, result in memory.runs():
            self._earlier[key].append(result)

    def take(self, call: ToolCallRequest) -> RawResult | None:
        """An earlier attempt's result of this call, or None: it must run."""
        kept = self._earlier.get(call_key(call))
        return kept.popleft() if kept else None

    def keep(self, call: ToolCallRequest, result: RawResult) -> None:
        """A call this attempt ran, for the attempts after it."""
        self._memory.keep(call, result)
