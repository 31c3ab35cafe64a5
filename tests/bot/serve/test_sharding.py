"""Sharding: the fake gateway routes like Discord, and two bot processes, one shard each,
answer their own guilds into one shared PostgreSQL store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config.schema import Config, ConfigError, load_config
from bot.demo.discord_server import FakeDiscord, make_nextcord_client
from bot.demo.openai_server import FakeOpenAI
from bot.serve.sharding import ShardedThreadwiseClient, client_class, shard_options
from bot.storage import Store

ROOT = Path(__file__).resolve().parents[3]
LOGS = ROOT / "tests" / "logs"
# (guild_id >> 22) % 2: guild 400000000000000001 is on shard 0, 900000000000000000 on shard 1.
SHARD0_LOG, SHARD0_CHANNEL, SHARD0_USER = (
    "fake_guild_general.json",
    500000000000000001,
    200000000000000002,
)
SHARD1_LOG, SHARD1_CHANNEL, SHARD1_USER = "chain_across_days.json", 900000000000000001, 101
DM_LOG, DM_CHANNEL, DM_USER = "fake_dm_alice.json", 500000000000000099, 200000000000000001


def test_shard_keys_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    for body, expected in [
        ("shard_ids = [0]", "[discord] shard_ids: needs shard_count"),
        ("shard_count = 2\nshard_ids = [2]", "[discord] shard_ids: 2 is not a shard of 2"),
        ("shard_count = 2\nshard_ids = [1, 1]", "[discord] shard_ids: lists a shard twice"),
        ("shard_count = 0", "[discord] shard_count: "),
    ]:
        config.write_text(f"[discord]\n{body}\n")
        with pytest.raises(ConfigError) as caught:
            load_config(config)
        assert str(caught.value).startswith(f"{config}: {expected}"), str(caught.value)
    config.write_text(
        '[discord]\nshard_count = 4\nshard_ids = [2, 3]\n[storage]\nurl = "postgresql://b@db/t"\n'
    )
    settings = load_config(config)
    assert shard_options(settings.discord) == {"shard_count": 4, "shard_ids": [2, 3]}
    assert client_class(settings) is ShardedThreadwiseClient
    assert client_class(Config()) is not ShardedThreadwiseClient  # unsharded stays plain


async def test_fake_gateway_routes_guilds_and_dms_by_shard(fake_discord: FakeDiscord) -> None:
    for log in (SHARD0_LOG, SHARD1_LOG, DM_LOG):
        await fake_discord.load_log(LOGS / log)
    seen: dict[int, list[int]] = {0: [], 1: []}
    async with contextlib.AsyncExitStack() as stack:
        for shard in (0, 1):
            client = make_nextcord_client(shard_id=shard, shard_count=2)

            async def on_message(message: Any, shard: int = shard) -> None:
                seen[shard].append(message.channel.id)

            client.event(on_message)
            await stack.enter_async_context(fake_discord.running(client))
            assert [g.id for g in client.guilds] == [
                400000000000000001 if shard == 0 else 900000000000000000
            ]
        identify = fake_discord.gateway.frames_with_op(2)
        assert sorted(frame.data["shard"] for frame in identify) == [[0, 2], [1, 2]]
        await fake_discord.user_says(SHARD0_CHANNEL, SHARD0_USER, "on shard zero")
        await fake_discord.user_says(SHARD1_CHANNEL, SHARD1_USER, "on shard one")
        await fake_discord.user_says(DM_CHANNEL, DM_USER, "a direct message")
        for _ in range(100):
            if len(seen[0]) + len(seen[1]) >= 3:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)  # anything routed wrongly would arrive by now
    assert seen == {0: [SHARD0_CHANNEL, DM_CHANNEL], 1: [SHARD1_CHANNEL]}


# ----------------------------------------------------------------------------- two processes


def _bot_config(path: Path, discord: FakeDiscord, model: FakeOpenAI, url: str, shard: int) -> Path:
    path.write_text(
        f"""
[discord]
token = {json.dumps(discord.token)}
api_base = {json.dumps(discord.api_base)}
guild_ready_timeout = 0.1
shard_count = 2
shard_ids = [{shard}]

[model]
base_url = {json.dumps(model.url)}
name = "fake-model"
max_retries = 1
stream = false

[articles]
enabled = false

[triggers]
burst_window_seconds = 0.05

[storage]
url = {json.dumps(url)}
"""
    )
    return path


@contextlib.contextmanager
def _bot_process(config: Path) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


async def _connected(child: subprocess.Popen[str], timeout: float = 30.0) -> None:  # noqa: ASYNC109
    """Wait for the bot's "connected as" log line (its on_ready)."""
    assert child.stderr is not None
    stderr = child.stderr

    async def scan() -> None:
        lines: list[str] = []
        while True:
            line = await asyncio.to_thread(stderr.readline)
            if not line:
                raise AssertionError("bot process ended:\n" + "".join(lines))
            lines.append(line)
            if "connected as" in line:
                return

    await asyncio.wait_for(scan(), timeout)


@contextlib.asynccontextmanager
async def _world() -> AsyncIterator[tuple[FakeDiscord, FakeOpenAI]]:
    async with FakeDiscord() as discord, FakeOpenAI() as model:
        for log in (SHARD0_LOG, SHARD1_LOG, DM_LOG):
            await discord.load_log(LOGS / log)
        yield discord, model
    assert not discord.server_errors, discord.server_errors


@pytest.mark.slow
async def test_two_shard_processes_answer_their_guilds_into_one_store(
    postgres_url: str, tmp_path: Path
) -> None:
    Store.open_url(postgres_url).close()  # one migration up front, as an operator would
    async with _world() as (discord, model):
        configs = [
            _bot_config(tmp_path / f"shard{n}.toml", discord, model, postgres_url, n)
            for n in (0, 1)
        ]
        with _bot_process(configs[0]) as first, _bot_process(configs[1]) as second:
            await asyncio.gather(_connected(first), _connected(second))
            bot = discord.bot_id
            asked = [
                await discord.user_says(SHARD0_CHANNEL, SHARD0_USER, f"<@{bot}> ZERO-QUESTION"),
                await discord.user_says(SHARD1_CHANNEL, SHARD1_USER, f"<@{bot}> ONE-QUESTION"),
                await discord.user_says(DM_CHANNEL, DM_USER, "DM-QUESTION"),
            ]
            for said in asked:
                await discord.wait_for_bot_message(
                    int(said["channel_id"]), after=int(said["id"]), timeout=20
                )
            # Each question reached exactly one process: one model call each, one answer each.
            assert len(model.chat_requests) == 3
            for said in asked:
                answers = discord.bot_messages(int(said["channel_id"]), after=int(said["id"]))
                assert len(answers) == 1
            with Store.open_url(postgres_url) as store:
                lines: list[str] = []
                for _ in range(100):
                    lines = list(store.export_lines())
                    if len(lines) >= 3:
                        break
                    await asyncio.sleep(0.05)
        everything = "\n".join(lines)
        assert len(lines) == 3
        for question in ("ZERO-QUESTION", "ONE-QUESTION", "DM-QUESTION"):
            assert everything.count(question) >= 1
        # Which process answered what: the gateway saw one IDENTIFY per shard.
        identify = discord.gateway.frames_with_op(2)
        assert sorted(frame.data["shard"] for frame in identify) == [[0, 2], [1, 2]]
