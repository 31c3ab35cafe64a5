"""REST calls and build time per trigger on a seeded synthetic busy channel.

Three situations, for our builder and for the original design's algorithm read literally, in
one run:

* cold: the bot knows nothing of the channel (a fresh cache per trigger);
* warm: the bot has been connected since a fifth of the log; gateway MESSAGE_CREATE events
  fed the shared channel cache up to each trigger, and earlier triggers' pages stayed in it;
* warm, no events: the shared cache only holds what earlier builds fetched (a bot that ignores
  gateway events), to show what the events are worth.

The source is the channel-log source counting calls as the fake Discord would serve them.

    python -m bench.context_cost [--messages N] [--triggers N] [--seed S] [--logs DIR]

With ``--logs``, it also times warm builds on real scored logs (the first ``--log-count`` of
DIR, the cache holding each log up to the trigger as ``lab.context_quality --warm`` replays
it), as shipped against the builds without the answer ranking, before the second-look floor
and before the cached window, alternating, in the same process: the synthetic channel's
silences end most walks before one page, a busy real channel's do not.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from conversation.common import ContextSettings
from conversation.replay import LogSource, ReplayCaches, load_gold, parse_export
from conversation.selection import ContextBuilder, load_meaning_model, load_model
from conversation.sources import ChannelCache, ChannelReader, MessageLike
from lab import baselines
from lab.context_quality import LogMeanings
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


def log_variants(
    settings: ContextSettings, meanings: Path | None = None
) -> dict[str, ContextBuilder]:
    """The walks timed on real logs: as shipped, then without the answer ranking, then also
    without the second-look floor (every candidate looked at twice, as before it), then that on
    one page (as before the cached window). With ``meanings`` (``lab.meanings``' cache), the
    score reading meaning first, against the plain one as shipped."""
    model = load_model()
    unranked = model.model_copy(update={"answer_best": 0})
    every = unranked.model_copy(update={"second_look_floor": 0.0})
    one_page = settings.model_copy(update={"cached_candidate_window": settings.candidate_window})
    wide, narrow = settings.cached_candidate_window, settings.candidate_window
    floor = f"second look over {model.second_look_floor:g}"
    reading: dict[str, ContextBuilder] = {}
    if meanings is not None:
        reading["reading meaning (the meaning extra)"] = ContextBuilder(
            settings, model, meanings=LogMeanings(meanings), meaning_model=load_meaning_model()
        )
    return {
        **reading,
        f"cached window ({wide}), {floor}, answer ranking": ContextBuilder(settings, model),
        f"cached window ({wide}), {floor}": ContextBuilder(settings, unranked),
        f"cached window ({wide}), every candidate looked at twice": ContextBuilder(settings, every),
        f"one page ({narrow}), every candidate looked at twice": ContextBuilder(one_page, every),
    }


async def time_logs(
    paths: list[Path], builders: dict[str, ContextBuilder], rounds: int = 3
) -> tuple[int, dict[str, list[float]]]:
    """How many triggers, and each builder's median warm build time (seconds) in each round
    (the first round also makes each builder's clues, so the best round is the figure)."""
    sources = [
        (p, LogSource.from_file(p), sorted(load_gold(p.with_suffix(".gold.json")))) for p in paths
    ]
    medians: dict[str, list[float]] = {name: [] for name in builders}
    for _ in range(rounds):
        for name, builder in builders.items():
            seconds = []
            for path, source, trigger_ids in sources:
                if isinstance(builder.clues.meanings, LogMeanings):
                    builder.clues.meanings.read(path)
                caches = ReplayCaches(source, warm=True)
                for trigger_id in trigger_ids:
                    reader = ChannelReader(source, caches.for_trigger(trigger_id))
                    started = time.perf_counter()
                    await builder.build(source.message(trigger_id), reader)
                    seconds.append(time.perf_counter() - started)
            medians[name].append(statistics.median(seconds))
    return sum(len(ids) for _, _, ids in sources), medians


def print_log_times(
    paths: list[Path], settings: ContextSettings, meanings: Path | None = None
) -> None:
    triggers, medians = asyncio.run(time_logs(paths, log_variants(settings, meanings)))
    logs = f"{len(paths)} scored log{'s' if len(paths) != 1 else ''}"
    print(f"\nwarm builds on {logs}, {triggers} triggers (median per round; best against best):")
    for name, times in medians.items():
        print(f"  {name}: " + ", ".join(f"{t * 1e3:.2f} ms" for t in times))
    (shipped, shipped_times), *others = medians.items()
    for name, times in others:
        ratio = min(shipped_times) / min(times)
        print(f"  {shipped} against {name}: {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--triggers", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--logs", type=Path, help="also time warm builds on these scored logs")
    parser.add_argument("--log-count", type=int, default=6, help="how many of them (by name)")
    parser.add_argument(
        "--meanings",
        type=Path,
        metavar="CACHE",
        help="with --logs: also time the score reading meaning (python -m lab.meanings' cache)",
    )
    args = parser.parse_args()
    paths: list[Path] = []
    if args.logs is not None:
        paths = sorted(args.logs.glob("*.gold.json"))[: args.log_count]
        if not paths:
            parser.exit(2, f"error: {args.logs}: no scored logs here (*.json with a .gold.json)\n")
        paths = [p.with_name(p.name.removesuffix(".gold.json") + ".json") for p in paths]
    asyncio.run(main_async(args))
    if paths:
        print_log_times(paths, ContextSettings(), args.meanings)


if __name__ == "__main__":
    main()
