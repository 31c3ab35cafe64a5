"""The whole bot under load: 100 channels, each triggered repeatedly, fake Discord and fake model.

Reports the bot's own overhead per answer (from the start of the answer to the model request,
so the injected model latency is excluded; REST latency of the fake is included), REST calls
per answer, answers lost or duplicated, and peak memory. The first round in each channel runs
with a cold cache and is the baseline the warm rounds are compared with, in the same run.

    python -m bench.e2e [--channels 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.synthetic import busy_channel
from bot.answer import AnswerResult
from bot.app import ThreadwiseClient
from bot.config import Config
from bot.model_client import ModelClient
from conversation.dce import parse_export
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import Answer, FakeOpenAI

BASE_CHANNEL = 710_000_000_000_000_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(channels: int, rounds: int, think: float) -> None:
    results: list[tuple[int, AnswerResult]] = []
    rounds_of: dict[int, int] = {}
    spacing = think / channels

    async def record(result: AnswerResult) -> None:
        results.append((rounds_of.get(result.trigger.id, 0), result))

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
        calls = [r.prepared.selection.rest_calls for r in group if r.prepared]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--think", type=float, default=2.0, help="seconds a channel waits before asking again"
    )
    args = parser.parse_args()
    asyncio.run(run(args.channels, args.rounds, args.think))


if __name__ == "__main__":
    main()
