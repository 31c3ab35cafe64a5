"""The whole bot against the fakes: a running ``ThreadwiseClient`` on the fake Discord and the
fake model (``running_bot``), and the CLI as an operator runs it (``run_cli``).

Shared by the end-to-end tests of ``tests/bot/`` and ``tests/conversation/``; the ids are those of
``examples/support-channel.json``, which every running bot starts with.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.answering.recording import InteractionRecorder
from bot.config.schema import Config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient

ROOT = Path(__file__).resolve().parents[2]
DM_CHANNEL, ALICE = 500000000000000099, 200000000000000001
EXAMPLE = ROOT / "examples" / "support-channel.json"
CHANNEL = 1300000000000000001
BOT_ID = 1300000000000000100
CHLOE, DEV, ELI, BEN = (1300000000000000103, 1300000000000000104, 1300000000000000105,
                        1300000000000000102)  # fmt: skip


@dataclass
class Harness:
    discord: FakeDiscord
    model: FakeOpenAI
    client: ThreadwiseClient

    async def answer_to(self, *args: Any, **kwargs: Any) -> dict:
        """A user speaks; returns the bot's first message after it."""
        said = await self.discord.user_says(*args, **kwargs)
        return await self.discord.wait_for_bot_message(
            int(said["channel_id"]), after=int(said["id"]), timeout=10
        )

    def example_ids(self) -> dict[str, int]:
        export = json.loads(EXAMPLE.read_text())
        return {m["content"][:24]: int(m["id"]) for m in export["messages"]}


def make_config(discord: FakeDiscord, fake_model: FakeOpenAI, **sections: dict) -> Config:
    data: dict[str, dict] = {
        "discord": {"token": discord.token, "api_base": discord.api_base,
                    "guild_ready_timeout": 0.1},
        "model": {"base_url": fake_model.url, "name": "fake-model", "max_retries": 1,
                  "retry_base_seconds": 0.01, "idle_timeout_seconds": 5, "timeout_seconds": 20},
        "articles": {"enabled": False},
        "triggers": {"burst_window_seconds": 0.05},
        "replies": {"edit_interval_seconds": 0.2},
    }  # fmt: skip
    for section, values in sections.items():
        if isinstance(values, dict) and section != "models":
            data.setdefault(section, {}).update(values)
        else:  # [[channels]] and [models.NAME]: given whole
            data[section] = values
    return Config.model_validate(data)


@contextlib.asynccontextmanager
async def running_bot(
    store: Any = None,
    fake_model: dict | None = None,
    fake_discord: dict | None = None,
    toolbox: Any = None,
    **sections: dict,
) -> AsyncIterator[Harness]:
    """``toolbox``: a ``Toolbox`` the answers may use (with ``tools={"enabled": True}``)."""
    async with (
        FakeDiscord(
            # The bot as the example log shows it: username threadwise, nicknamed Threadwise.
            bot_id=BOT_ID,
            **({"bot_name": "threadwise", "bot_nick": "Threadwise"} | (fake_discord or {})),
        ) as discord,
        FakeOpenAI(**(fake_model or {})) as fake,
    ):
        await discord.load_log(EXAMPLE)
        config = make_config(discord, fake, **sections)
        async with ModelClient(config.model) as model_client:
            recorder = InteractionRecorder(store) if store is not None else None
            client = ThreadwiseClient(
                config, articles=None, model=model_client, recorder=recorder, store=store,
                tools=toolbox,
            )  # fmt: skip
            with discord.nextcord_pointed_here():
                async with discord.running(client) as ready:
                    yield Harness(discord=discord, model=fake, client=ready)
        assert not discord.server_errors, discord.server_errors


def sent_contents(request_messages: list[dict]) -> str:
    return "\n".join(str(m["content"]) for m in request_messages)


async def settled(bot: Harness) -> None:
    """Wait until the bot has no answer in progress and no record waiting for the store."""
    records = bot.client.answerer.records
    for _ in range(100):
        if not bot.client._tasks and not records:
            return
        await asyncio.sleep(0.05)


def with_offline_pages(folder: Path) -> Path:
    """``folder`` with a copy of the example's offline pages, for a log written there from the
    example: its replay then reads the linked pages from disk, as the quick start does, and
    never asks the network for them. Returns ``folder``."""
    shutil.copytree(EXAMPLE.parent / "pages", folder / "pages", dirs_exist_ok=True)
    return folder


def run_cli_here(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """``python -m bot ARGS`` run in this process: the same ``main`` that ``bot/__main__.py``
    calls, with its own stdout, stderr, environment (``env`` replaces it, as for a process)
    and folder, and the exit code it would end with; what it saves is an interpreter's
    start-up and imports (seconds each on a busy machine). For commands that neither configure
    logging nor leave threads behind (not ``run``); a test of the process itself (signals,
    ``python -m`` as such) uses ``run_cli``. Call it from a synchronous test, or through
    ``asyncio.to_thread``: commands run their own event loop."""
    from bot.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit:  # argparse's usage errors
                code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(
        ["python", "-m", "bot", *args], code, out.getvalue(), err.getvalue()
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m bot ARGS`` from the repository root, as an operator types it."""
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
