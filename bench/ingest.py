"""Gateway messages absorbed by one bot process, and the memory the cached ones take.

The real client connects to the fake Discord; then MESSAGE_CREATE frames (JSON text, as the
gateway sends them once inflated) are fed to nextcord's gateway handler as fast as it takes
them, spread over many channels, none addressed to the bot. Measured: messages per second from
frame to channel cache (nextcord's parsing, the event dispatch and the bot's ``on_message``),
and the resident memory the cached messages add, per 100,000. The websocket and zlib are left
out (the fake server runs in this process and would share its CPU).

    python -m bench.ingest [--messages 100000] [--channels 200] [--keep slim|full]

``--keep full`` caches nextcord's ``Message`` objects as they come (the bot before slimming);
run both to compare: memory needs a fresh process each.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config.schema import Config
from bot.demo.discord_server import FakeDiscord
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from conversation.replay import parse_export
from conversation.sources import time_snowflake
from tests.fakes.synthetic import busy_channel

BASE_CHANNEL = 720_000_000_000_000_000
BATCH = 1000
WORDS = "the backup job on the staging box failed again after the kernel update so I rolled back"


def rss_mb() -> float:
    """Resident memory now (not the peak), from /proc."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def frames(templates: list[dict[str, Any]], start: int, count: int, first_id: int) -> list[str]:
    out = []
    for n in range(start, start + count):
        payload = copy.copy(templates[n % len(templates)])
        payload["id"] = str(first_id + n * 4096)
        payload["content"] = f"{WORDS} #{n}"
        out.append(json.dumps({"op": 0, "t": "MESSAGE_CREATE", "s": None, "d": payload}))
    return out


async def run(messages: int, channels: int, keep: str) -> None:
    async with FakeDiscord() as discord:
        users: list[int] = []
        for index in range(channels):
            export = parse_export(
                busy_channel(seed=index, messages=5, channel_id=BASE_CHANNEL + index)
            )
            await discord.load_log(export)
            users.append(int(export.messages[-1].author.id))
        templates = [
            discord.state.create_message(
                BASE_CHANNEL + index, discord.state.user(users[index]), "template"
            )
            for index in range(channels)
        ]
        config = Config.model_validate({
            "discord": {"token": discord.token, "api_base": discord.api_base,
                        "guild_ready_timeout": 0.1},
            "model": {"base_url": "http://127.0.0.1:9/v1", "name": "none"},
            "articles": {"enabled": False},
            "cache": {"max_messages": messages + channels * 10,
                      "max_messages_per_channel": messages},
        })  # fmt: skip
        async with ModelClient(config.model) as model_client:
            client = ThreadwiseClient(config, articles=None, model=model_client)
            if keep == "full":
                client.caches.slim = None
            with discord.nextcord_pointed_here():
                async with discord.running(client):
                    ws = client.ws
                    budget = client.caches.budget
                    assert budget is not None
                    first_id = time_snowflake(discord.state.clock()) + (1 << 30)
                    gc.collect()
                    before = rss_mb()
                    spent, cpu_began = 0.0, time.process_time()
                    for start in range(0, messages, BATCH):
                        batch = frames(templates, start, min(BATCH, messages - start), first_id)
                        expected = budget.used + len(batch)
                        began = time.perf_counter()
                        for frame in batch:
                            await ws.received_message(frame)
                        while budget.used < expected:
                            await asyncio.sleep(0)
                        spent += time.perf_counter() - began
                    cpu = time.process_time() - cpu_began
                    del batch
                    gc.collect()
                    after = rss_mb()
                    cached = budget.used
                    meanings = client.meanings
                    if meanings is not None:  # the meaning extra: its worker, apart
                        await meanings.settled()
                        meaning_cpu = time.process_time() - cpu_began - cpu
                        gc.collect()
                        embedded = rss_mb()
    per_100k = (after - before) / cached * 100_000
    print(
        f"{messages} messages over {channels} channels, cache keeps {keep} messages: "
        f"{messages / spent:,.0f} messages/s absorbed, {cpu / messages * 1e6:,.0f} CPU-us "
        f"each; {cached} cached, RSS +{after - before:.0f} MB = {per_100k:.0f} MB per 100k "
        f"({(after - before) * 1024 * 1024 / cached:,.0f} bytes each)"
    )
    if meanings is not None:
        kept = len(meanings)
        print(
            f"meaning extra: {kept} embedded and kept (at most {meanings.kept}), "
            f"{meanings.dropped} dropped from the full queue; embedding "
            f"{meaning_cpu / max(1, kept) * 1000:.1f} CPU-ms a message in the worker; "
            f"RSS +{embedded - after:.0f} MB "
            f"({(embedded - after) * 1024 * 1024 / max(1, kept):,.0f} bytes a kept meaning)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=200)
    parser.add_argument("--keep", choices=("slim", "full"), default="slim")
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.channels, args.keep))


if __name__ == "__main__":
    main()
