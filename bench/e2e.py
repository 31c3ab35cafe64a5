"""The whole bot under load: 100 channels, each triggered repeatedly, fake Discord and fake model.

Reports the bot's own overhead per answer (from the start of the answer to the model request,
so the injected model latency is excluded; REST latency of the fake is included), REST calls
per answer, answers lost or duplicated, and peak memory. The first round in each channel runs
with a cold cache and is the baseline the warm rounds are compared with, in the same run.

    python -m bench.e2e [--channels 100] [--rounds 5] [--max-prompt-bytes N]

It also reports the peak bytes of the requests the bot remembers for follow-ups, against their
budget (``[cache] max_prompt_bytes``; a small one shows it is held).

Capacity mode: answers per second at saturation (every channel asks again as soon as it has
its answer, model 50 ms), the fakes in this process and the bot in separate processes: one
unsharded process, or two processes running shards 0 and 1 of 2, recording into one store.

    python -m bench.e2e --capacity [--processes 1|2] [--store postgresql|sqlite|none]

With ``--against DIR`` (a checkout of the baseline, ``git archive REV | tar -x -C DIR``) the
same load runs on the baseline's bot and on this tree's in turn, twice each, on fresh fakes,
and the ratio of bot CPU per answer is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.answering.result import AnswerResult
from bot.config.schema import Config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import Answer, FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from conversation.replay import parse_export
from tests.fakes.synthetic import busy_channel

BASE_CHANNEL = 710_000_000_000_000_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(channels: int, rounds: int, think: float, prompt_bytes: int | None = None) -> None:
    results: list[tuple[int, AnswerResult]] = []
    rounds_of: dict[int, int] = {}
    spacing = think / channels
    peak_memory = 0  # the bytes of the remembered requests, after each answer

    async def record(result: AnswerResult) -> None:
        nonlocal peak_memory
        results.append((rounds_of.get(result.trigger.message.id, 0), result))
        peak_memory = max(peak_memory, client.answerer.memory.bytes)  # type: ignore[attr-defined]

    async with FakeDiscord() as discord, FakeOpenAI(default=Answer(first_byte_delay=0.05)) as model:
        members = []
        for index in range(channels):
            export = parse_export(
                busy_channel(seed=index, messages=150, channel_id=BASE_CHANNEL + index)
            )
            await discord.load_log(export)
            members.append(export.messages[-1].author.id)
        config = Config.model_validate({
            "discord": {"token": discord.token, "api_base": discord.api_base,
                        "guild_ready_timeout": 0.1},
            "model": {"base_url": model.url, "name": "fake-model"},
            "articles": {"enabled": False},
            "triggers": {"burst_window_seconds": 0},
            "cache": {} if prompt_bytes is None else {"max_prompt_bytes": prompt_bytes},
        })  # fmt: skip
        async with ModelClient(config.model) as model_client:
            client = ThreadwiseClient(config, articles=None, model=model_client, recorder=record)
            with discord.nextcord_pointed_here():
                async with discord.running(client):
                    started = time.perf_counter()
                    triggers: list[int] = []

                    async def converse(index: int) -> None:
                        # Channels start staggered, as real traffic does, then each asks again
                        # as soon as it has its answer.
                        await asyncio.sleep(index * spacing)
                        channel = BASE_CHANNEL + index
                        for number in range(rounds):
                            said = await discord.user_says(
                                channel,
                                int(members[index]),
                                f"<@{discord.bot_id}> question {number}",
                            )
                            rounds_of[int(said["id"])] = number
                            triggers.append(int(said["id"]))
                            await discord.wait_for_bot_message(channel, after=int(said["id"]),
                                                               timeout=60)  # fmt: skip
                            await asyncio.sleep(think)

                    await asyncio.gather(*(converse(i) for i in range(channels)))
                    while client._tasks:
                        await asyncio.sleep(0.01)
                    elapsed = time.perf_counter() - started
        replies: dict[int, int] = {}
        for channel in range(channels):
            for message in discord.bot_messages(BASE_CHANNEL + channel):
                reference = message.get("message_reference") or {}
                if reference.get("message_id"):
                    replied = int(reference["message_id"])
                    replies[replied] = replies.get(replied, 0) + 1
    lost = sum(1 for t in triggers if t not in replies)
    duplicated = sum(1 for t in triggers if replies.get(t, 0) > 1)
    cold = [r for n, r in results if n == 0]
    warm = [r for n, r in results if n > 0]
    print(
        f"{channels} channels x {rounds} rounds = {len(triggers)} answers in {elapsed:.1f} s "
        f"({len(triggers) / elapsed:.0f} answers/s; model latency 50 ms injected)"
    )
    print("| cache | answers | overhead p50 | overhead p95 | REST calls per answer |")
    print("|---|---|---|---|---|")
    for label, group in (("cold (first round)", cold), ("warm (later rounds)", warm)):
        overheads = [r.overhead_seconds * 1e3 for r in group if r.overhead_seconds is not None]
        calls = [r.asked.prepared.selection.rest_calls for r in group if r.asked.prepared]
        print(
            f"| {label} | {len(group)} | {percentile(overheads, 0.5):.1f} ms | "
            f"{percentile(overheads, 0.95):.1f} ms | {statistics.mean(calls):.2f} |"
        )
    warm_p50 = percentile([r.overhead_seconds for r in warm if r.overhead_seconds], 0.5)
    cold_p50 = percentile([r.overhead_seconds for r in cold if r.overhead_seconds], 0.5)
    print(f"warm overhead p50 = {warm_p50 / cold_p50:.2f}x the cold one")
    print(f"answers lost: {lost}, duplicated: {duplicated}")
    print(
        f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    budget = config.cache.max_prompt_bytes
    print(
        f"remembered requests: peak {peak_memory / 2**20:.1f} MB of the {budget / 2**20:.0f} MB "
        "budget ([cache] max_prompt_bytes)"
    )


# ----------------------------------------------------------------------------- capacity

# Two guilds whose ids fall on different shards of 2 ((guild_id >> 22) % 2).
GUILDS = (700_000_000_000_000_000, 700_000_000_000_000_000 + (1 << 22))


def sharded_channel(index: int) -> Any:
    """A busy channel in one of the two guilds, alternating, so shards share the work."""
    raw = busy_channel(seed=index, messages=150, channel_id=BASE_CHANNEL + index)
    guild = str(GUILDS[index % 2])
    raw["guild"]["id"] = guild
    for message in raw["messages"]:
        if "reference" in message:
            message["reference"]["guildId"] = guild
    return parse_export(raw)


@contextlib.contextmanager
def store_url(kind: str) -> Iterator[dict[str, Any]]:
    """``[storage]`` settings for the workers: a fresh PostgreSQL (pgserver) or SQLite file."""
    folder = Path(tempfile.mkdtemp(prefix="threadwise-bench-"))
    server = None
    try:
        if kind == "postgresql":
            import pgserver

            server = pgserver.get_server(folder / "pg", cleanup_mode="stop")
            yield {"url": server.get_uri()}
        elif kind == "sqlite":
            yield {"path": str(folder / "store.sqlite3")}
        else:
            yield {}
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


async def capacity(
    channels: int, seconds: float, processes: int, store: str, against: Path | None = None
) -> None:
    """The load on this tree's bot; with ``against`` (another checkout, the baseline), on the
    baseline's bot and this one's in turn, twice each, each run on fresh fakes loaded alike
    (a run's answers must not change the next one's channels)."""
    here = Path(__file__).resolve().parents[1]
    runs = [("", here)]
    if against is not None:
        runs = [("baseline", against.resolve()), ("this tree", here)] * 2
    cpu: dict[str, list[float]] = {}
    for label, code in runs:
        async with (
            FakeDiscord() as discord,
            FakeOpenAI(default=Answer(first_byte_delay=0.05)) as model,
        ):
            members = []
            for index in range(channels):
                export = sharded_channel(index)
                await discord.load_log(export)
                members.append(int(export.messages[-1].author.id))
            spent = await _saturate(discord, model, members, seconds, processes, store, code, label)
            cpu.setdefault(label, []).append(spent)
    if against is not None:
        ratio = statistics.mean(cpu["this tree"]) / statistics.mean(cpu["baseline"])
        print(f"bot CPU per answer, this tree / baseline ({against}), mean of two runs each: "
              f"{ratio:.2f}x")  # fmt: skip


async def _saturate(
    discord: FakeDiscord,
    model: FakeOpenAI,
    members: list[int],
    seconds: float,
    processes: int,
    store: str,
    code: Path,
    label: str,
) -> float:
    """One capacity run with the bot of the checkout ``code``; its bot CPU per answer (s)."""
    with store_url(store) as storage:
        config: dict[str, Any] = {
            "discord": {"token": discord.token, "api_base": discord.api_base,
                        "guild_ready_timeout": 0.1},
            "model": {"base_url": model.url, "name": "fake-model"},
            "articles": {"enabled": False},
            "triggers": {"burst_window_seconds": 0},
            "storage": storage,
        }  # fmt: skip
        if storage.get("url"):
            from bot.storage import Store

            Store.open_url(storage["url"]).close()  # migrate once before the shards start
        workers = []
        for shard in range(processes):
            if processes > 1:
                config["discord"] |= {"shard_count": processes, "shard_ids": [shard]}
            workers.append(
                subprocess.Popen(  # noqa: ASYNC220 - started once, before the run
                    [sys.executable, "-m", "bench.e2e", "--worker", json.dumps(config)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=code,
                    env={**os.environ, "PYTHONPATH": str(code)},
                )
            )
        for worker in workers:
            line = await asyncio.to_thread(worker.stdout.readline)  # type: ignore[union-attr]
            assert line.strip() == "ready", f"worker did not start: {line!r}"
        answered = 0
        deadline = 0.0

        async def converse(index: int) -> None:
            nonlocal answered
            channel = BASE_CHANNEL + index
            number = 0
            while time.perf_counter() < deadline:
                said = await discord.user_says(
                    channel, members[index], f"<@{discord.bot_id}> question {number}"
                )
                await discord.wait_for_bot_message(channel, after=int(said["id"]), timeout=60)
                answered += 1
                number += 1

        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(*(converse(i) for i in range(len(members))))
        elapsed = time.perf_counter() - started
        reports = []
        for worker in workers:
            out, _ = await asyncio.to_thread(worker.communicate, "", 60)
            reports.append(json.loads(out.strip().splitlines()[-1]))
    warm = [o * 1e3 for report in reports for o in report["warm"]]
    recorded = sum(report["recorded"] for report in reports)
    shards = "unsharded" if processes == 1 else f"shards 0..{processes - 1} of {processes}"
    print(
        f"{label + ': ' if label else ''}capacity: {processes} bot process(es) ({shards}), "
        f"store {store}, {len(members)} channels, {elapsed:.0f} s: {answered} answers = "
        f"{answered / elapsed:.0f} answers/s (model 50 ms, no think time); {recorded} recorded"
    )
    cpu = sum(report["cpu_seconds"] for report in reports)
    print(
        f"warm overhead p50 {percentile(warm, 0.5):.1f} ms, p95 {percentile(warm, 0.95):.1f} ms; "
        f"bot CPU {cpu / answered * 1e3:.1f} ms per answer (~{answered / cpu:.0f} answers/s "
        f"per core); per-process peak RSS {', '.join(str(r['rss_mb']) + ' MB' for r in reports)}"
    )
    return cpu / answered


async def worker(raw_config: str) -> None:
    """One bot process for the capacity mode: answers until stdin closes, then reports."""
    from bot.answering.recording import open_recorder
    from bot.serve.sharding import client_class

    config = Config.model_validate(json.loads(raw_config))
    seen: set[int] = set()
    warm: list[float] = []
    recorded = 0
    async with contextlib.AsyncExitStack() as stack:
        recorder = None
        if config.storage.url or "path" in config.storage.model_fields_set:
            recorder = await stack.enter_async_context(open_recorder(config))

        async def record(result: AnswerResult) -> None:
            nonlocal recorded
            channel = result.trigger.message.channel.id
            if channel in seen and result.overhead_seconds is not None:
                warm.append(result.overhead_seconds)
            seen.add(channel)
            if recorder is not None:
                await recorder(result)
                recorded += 1

        model_client = await stack.enter_async_context(ModelClient(config.model))
        client = client_class(config)(
            config,
            articles=None,
            model=model_client,
            recorder=record,
            store=recorder.store if recorder else None,
        )
        task = asyncio.create_task(client.start(config.discord.token.get_secret_value()))  # type: ignore[union-attr]
        await client.wait_until_ready()
        spent = resource.getrusage(resource.RUSAGE_SELF)
        cpu_at_ready = spent.ru_utime + spent.ru_stime
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        while client._tasks:
            await asyncio.sleep(0.01)
        await client.close()
        await asyncio.gather(task, return_exceptions=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report = {
        "warm": warm,
        "recorded": recorded,
        "rss_mb": usage.ru_maxrss // 1024,
        "cpu_seconds": usage.ru_utime + usage.ru_stime - cpu_at_ready,
    }
    print(json.dumps(report), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--think", type=float, default=2.0, help="seconds a channel waits before asking again"
    )
    parser.add_argument("--capacity", action="store_true", help="answers/s at saturation")
    parser.add_argument("--processes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--store", choices=("postgresql", "sqlite", "none"), default="postgresql")
    parser.add_argument("--seconds", type=float, default=20.0, help="capacity run length")
    parser.add_argument(
        "--against",
        type=Path,
        help="capacity: a checkout of the baseline (git worktree or archive) run first",
    )
    parser.add_argument(
        "--max-prompt-bytes",
        type=int,
        help="[cache] max_prompt_bytes of the run (default: the config's, 64 MiB)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(args.worker))
    elif args.capacity:
        asyncio.run(capacity(args.channels, args.seconds, args.processes, args.store, args.against))
    else:
        asyncio.run(run(args.channels, args.rounds, args.think, args.max_prompt_bytes))


if __name__ == "__main__":
    main()
