"""REST calls and build time per trigger on a seeded synthetic busy channel.

Three situations, for our builder and for the original design's algorithm read literally, in
one run:

* cold: the bot knows nothing of the channel (a fresh cache per trigger);
* warm: the bot has been connected since a fifth of the log; gateway MESSAGE_CREATE events
  fed the shared channel cache up to each trigger, and earlier triggers' pages stayed in it;
* warm, no events: the shared cache only holds what earlier builds fetched (a bot that ignores
  gateway events), to show what the events are worth.

The source is the channel-log source counting calls as the fake Discord would serve them.

    python -m bench.context_cost [--messages N] [--triggers N] [--seed S]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from bench import baselines
from conversation.builder import ContextBuilder
from conversation.cache import ChannelCache
from conversation.dce import parse_export
from conversation.log_source import LogSource
from conversation.reader import ChannelReader
from conversation.settings import ContextSettings
from conversation.source import MessageLike
from tests.fakes.synthetic import busy_channel

MODES = {"cold": "cold", "warm": "warm", "warm, no events": "shared"}
Build = Callable[[MessageLike, ChannelReader], Awaitable[object]]


async def measure(source: LogSource, triggers: list[int], build: Build, mode: str):
    calls: list[int] = []
    seconds: list[float] = []
    shared = ChannelCache(source.channel_id)
    connected_at = source.messages[len(source.messages) // 5]
    if mode == "warm":
        shared.go_live(connected_at.created_at)
    fed = len(source.messages) // 5
    for index in triggers:
        trigger = source.messages[index]
        if mode == "warm":  # the gateway delivered everything up to the trigger
            for message in source.messages[fed : index + 1]:
                shared.add(message)
            fed = index + 1
        cache = ChannelCache(source.channel_id) if mode == "cold" else shared
        reader = ChannelReader(source, cache)
        started = time.perf_counter()
        await build(trigger, reader)
        seconds.append(time.perf_counter() - started)
        calls.append(reader.rest_calls)
    return calls, seconds


def summary(calls: list[int], seconds: list[float]) -> str:
    q = statistics.quantiles(calls, n=20)
    return (
        f"median {statistics.median(calls):.0f}, p95 {q[-1]:.0f}, "
        f"mean {statistics.mean(calls):.2f} | {statistics.median(seconds) * 1e3:.2f} ms"
    )


async def main_async(args: argparse.Namespace) -> None:
    export = parse_export(busy_channel(seed=args.seed, messages=args.messages))
    source = LogSource(export)
    settings = ContextSettings()
    builder = ContextBuilder(settings)
    before = settings.model_copy(update={"min_linear": 10, "learned_relevance": False})
    start = len(source.messages) // 5 + 1
    step = max(1, (len(source.messages) - start) // args.triggers)
    triggers = list(range(start, len(source.messages), step))[: args.triggers]
    selectors: dict[str, Build] = {
        "threadwise builder": builder.build,
        "rules only, min_linear 10 (before the score)": ContextBuilder(before).build,
        "original tik/tok, literal": lambda t, r: baselines.original_literal(t, r, before),
    }
    print(
        f"synthetic busy channel: {len(source.messages)} messages, seed {args.seed}, "
        f"{len(triggers)} triggers; REST calls per trigger"
    )
    print("| selector | cache | REST calls per trigger | build time (median) | calls vs original |")
    print("|---|---|---|---|---|")
    means: dict[tuple[str, str], float] = {}
    rows = []
    for mode in ("cold", "warm", "warm, no events"):
        for name, build in selectors.items():
            calls, seconds = await measure(source, triggers, build, MODES[mode])
            means[(name, mode)] = statistics.mean(calls)
            rows.append((name, mode, summary(calls, seconds)))
    for name, mode, text in rows:
        original = means[("original tik/tok, literal", mode)]
        ratio = means[(name, mode)] / original if original else float("nan")
        print(f"| {name} | {mode} | {text} | {ratio:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--triggers", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
