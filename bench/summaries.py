"""What summaries at the cut cost and keep: model calls per 100 answers, prefix reuse and tokens,
with and without them, in long conversations.

Replays irc-dev's annotated messages with the log's three most active speakers standing in for
the bot in turn (``bench.prefix``'s stand-in: their messages are the bot's answers), once with
plain cuts and once with each cut summarized. No model runs here: the stand-in writer returns
the start of what it is given, cut to ``--summary-size`` tokens (a real summary fills most of its
``summary_tokens``), so the figures are the cost of the design (calls, tokens sent, prefix kept),
not of a summary's quality. Each summary call's tokens are its prompt (the summary prompt and
the transcript) plus the summary written.

    python -m bench.summaries [DATA_DIR] [--summary-size 300] [--window 64] [--max-total 50]

``--max-total`` smaller than the default makes the conversations long for their room (more
cuts), as a channel with a small ``max_total`` or a small model's window has them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.prefix import Tally, channel_logs, stand_in
from conversation.common import ContextSettings
from conversation.memory import Continuity, SummaryPolicy
from conversation.prompt import Budget, text_tokens
from conversation.selection import ContextBuilder
from lab.context_quality import DEFAULT_DATA


@dataclass
class StandInWriter:
    """Writes a summary of ``size`` tokens (fewer when it is given less), counting the tokens
    each call sends and gets back."""

    size: int
    prompt: str
    tokens_in: int = 0
    tokens_out: int = 0

    async def __call__(self, transcript: str) -> str:
        self.tokens_in += text_tokens(self.prompt) + text_tokens(transcript)
        words = transcript.split()
        text = " ".join(words[: self.size])
        while text_tokens(text) > self.size:
            words = words[: int(len(words) * 0.9)]
            text = " ".join(words[: self.size])
        self.tokens_out += text_tokens(text)
        return text


async def replay(
    data: Path, window: int, size: int, max_total: int
) -> tuple[Tally, Tally, StandInWriter]:
    plain, summarized = Tally(), Tally()
    settings = ContextSettings(max_total=max_total)
    writer = StandInWriter(size=size, prompt=settings.summary_prompt)
    policy = SummaryPolicy(write=writer, max_tokens=settings.summary_tokens, timeout_seconds=60.0)
    budget = Budget(window=8192, reserve=1024)
    builder = ContextBuilder(settings)
    continuity = Continuity(max_total=settings.max_total)
    for source, persona, gold in channel_logs(data):
        for tally, summaries in ((plain, None), (summarized, policy)):
            await stand_in(
                source, gold, persona, builder, continuity, budget, window, tally, summaries
            )
    return plain, summarized, writer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--window", type=int, default=64, help="prompts a server keeps (64)")
    parser.add_argument(
        "--summary-size", type=int, default=300, help="tokens of each stand-in summary (300)"
    )
    parser.add_argument("--max-total", type=int, default=ContextSettings().max_total)
    args = parser.parse_args()
    plain, summarized, writer = asyncio.run(
        replay(args.data, args.window, args.summary_size, args.max_total)
    )
    print(
        f"{plain.prompts} answers of stand-in speakers on {args.data.name}, "
        f"max_total {args.max_total}\n"
    )
    print(
        f"| at a cut | answers | cuts | model calls per 100 answers | prompt tokens | reused from "
        f"previous | reused from last {args.window} | tokens read afresh | summary calls' "
        "tokens (in + out) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, tally, extra in (
        ("plain", plain, 0),
        ("summarized", summarized, writer.tokens_in + writer.tokens_out),
    ):
        calls = 100 * (tally.prompts + tally.summaries) / max(tally.prompts, 1)
        fresh = tally.tokens - tally.recent
        print(
            f"| {name} | {tally.prompts} | {tally.cuts} | {calls:.1f} | {tally.tokens:,} | "
            f"{tally.share(tally.previous):.1%} | {tally.share(tally.recent):.1%} | "
            f"{fresh:,} | {extra:,} |"
        )
    added = summarized.tokens - plain.tokens
    fresh_added = (summarized.tokens - summarized.recent) - (plain.tokens - plain.recent)
    total = writer.tokens_in + writer.tokens_out
    print(
        f"\nSummaries add {added:,} prompt tokens ({added / max(plain.tokens, 1):+.1%}), "
        f"{fresh_added:,} read afresh ({fresh_added / max(plain.tokens - plain.recent, 1):+.1%}),"
        f" and {total:,} tokens of summary calls ({writer.tokens_in:,} in, "
        f"{writer.tokens_out:,} out): {(added + total) / max(plain.tokens, 1):+.1%} of the "
        "plain cuts' prompt tokens in all."
    )


if __name__ == "__main__":
    main()
