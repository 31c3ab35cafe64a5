"""Cost of splitting a streamed answer, per delta, at 10k, 100k and 1M characters so far.

While an answer streams, every delta from the model goes through ``StreamingSplitter.update``
(the bot edits its Discord messages from the result). That work must not grow with the text
received so far, or a long answer turns into seconds of event-loop CPU (the heartbeat stalls).

For each size the answer (paragraphs, lists, code blocks, as models write) is streamed up to the
size in 20-character deltas, then the next 500 deltas are timed one by one: median and p99 per
delta. "cold" is the call as timed right after the harness made the new text (a copy of up to
1 MB, which empties the CPU caches: the bot itself joins deltas only once per edit interval);
"warm" is the same call repeated, the splitter's own work. ``ratio`` is the warm cost at this
size over its cost at 10k: 1.0 means independent of the text so far. The baseline in the same
run is what splitting cost per delta when it re-read the whole text each time: ``split_chunks``
of the text so far (timed on a few deltas, it is slow); ``speedup`` is against the cold median.

    python -m bench.split_stream [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.discord.chunking import DISCORD_MESSAGE_LIMIT, StreamingSplitter, split_chunks

DELTA = 20
TIMED_DELTAS = 500
WARM_UP_DELTA = 1000


def answer_text(size: int) -> str:
    """A model-like answer of at least ``size`` characters: prose, lists and code blocks."""
    parts: list[str] = []
    length = 0
    number = 0
    while length < size:
        number += 1
        part = (
            f"Step {number}: the reader follows the reply chain, then the history around it. " * 4
            + "\n\n- first point\n- second point, a little longer than the first\n\n"
            + f"```python\ndef step_{number}(state):\n"
            + "".join(f"    state = advance(state, {i})\n" for i in range(12))
            + "    return state\n```\n\n"
        )
        parts.append(part)
        length += len(part)
    return "".join(parts)


def incremental_per_delta(text: str, upto: int) -> tuple[list[float], list[float]]:
    """Seconds per ``update`` for the deltas right after ``upto`` characters: as measured right
    after the harness copied the text (cold caches), and the same call repeated (warm)."""
    splitter = StreamingSplitter(DISCORD_MESSAGE_LIMIT)
    for end in range(WARM_UP_DELTA, upto + 1, WARM_UP_DELTA):  # larger steps: quicker to reach
        splitter.update(text[:end])
    cold, warm = [], []
    held: list[str] = []
    for step in range(1, TIMED_DELTAS + 1):
        piece = text[: upto + step * DELTA]
        # Freeing the previous copy of the text is the harness's cost (the bot joins deltas
        # instead), so it happens here, outside the timed call.
        held = [*held[-1:], piece]
        began = time.perf_counter()
        splitter.update(piece)
        cold.append(time.perf_counter() - began)
        began = time.perf_counter()
        splitter.update(piece)
        warm.append(time.perf_counter() - began)
    return cold, warm


def resplit_per_delta(text: str, upto: int, samples: int) -> list[float]:
    """Seconds per delta when the whole text so far is split again (the old way)."""
    timings = []
    for step in range(1, samples + 1):
        piece = text[: upto + step * DELTA]
        began = time.perf_counter()
        split_chunks(piece, DISCORD_MESSAGE_LIMIT)
        timings.append(time.perf_counter() - began)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k only")
    args = parser.parse_args()
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    text = answer_text(max(sizes) + (TIMED_DELTAS + 1) * DELTA)
    print(f"{'chars so far':>12} {'cold median':>12} {'p99':>9} {'warm median':>12} {'ratio':>6} "
          f"{'re-split':>10} {'speedup':>8}")  # fmt: skip
    first_warm: float | None = None
    for size in sizes:
        cold, warm = (sorted(t) for t in incremental_per_delta(text, size))
        cold_median, warm_median = statistics.median(cold), statistics.median(warm)
        p99 = cold[int(len(cold) * 0.99) - 1]
        first_warm = first_warm or warm_median
        baseline = statistics.median(resplit_per_delta(text, size, 5 if size < 1_000_000 else 3))
        print(
            f"{size:>12,} {cold_median * 1e6:>10.1f}us {p99 * 1e6:>7.0f}us "
            f"{warm_median * 1e6:>10.1f}us {warm_median / first_warm:>6.2f} "
            f"{baseline * 1e3:>8.1f}ms {baseline / cold_median:>7.0f}x"
        )


if __name__ == "__main__":
    main()
