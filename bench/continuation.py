"""Cost of laying out a member's text as continuation lines, per message, against the work
every message already gets.

``continuation_lines`` runs on every user message of every context, so it must stay small next
to what a message costs anyway. The baseline, in the same run, is ``neutralize_embedding_tags``,
the one pass over each message's text that was there before (a regular expression substitution
over the whole text). Three kinds of message: one line of chat (most of them), a few lines of
prose, and a pasted code block with an inlined text file (about 8,000 characters).

    python -m bench.continuation
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conversation.prompt import continuation_lines, neutralize_embedding_tags

ONE_LINE = "did anyone try the new release on the staging box? it keeps restarting for me"
PROSE = "\n".join(
    [
        "ok so here is what I tried:",
        "1. restarted the service",
        "2. cleared the cache",
        "",
        "Note: none of it helped, the logs say the same thing",
    ]
)
CODE = (
    "here's my config, why does it fail?\n```toml\n[model]\nname = 'llama'\n```\n"
    "[text attachment: server.log]\n"
    + "".join(
        f"2025-03-14 09:{i % 60:02d} worker {i}: request took {i * 7} ms\n" for i in range(140)
    )
)


def per_call(function: Callable[[str], str], text: str, calls: int) -> float:
    """Best of five runs, seconds per call."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(calls):
            function(text)
        best = min(best, (time.perf_counter() - began) / calls)
    return best


def main() -> None:
    print(f"{'message':<28} {'chars':>6} {'layout us':>10} {'baseline us':>12} {'ratio':>6}")
    for label, text, calls in (
        ("one line of chat", ONE_LINE, 20000),
        ("five lines of prose", PROSE, 20000),
        ("code block + text file", CODE, 500),
    ):
        layout = per_call(continuation_lines, text, calls)
        baseline = per_call(neutralize_embedding_tags, text, calls)
        print(
            f"{label:<28} {len(text):>6} {layout * 1e6:>10.2f} {baseline * 1e6:>12.2f}"
            f" {layout / baseline:>6.2f}"
        )


if __name__ == "__main__":
    main()
