"""``python -m bot run`` as a process: what it says at start-up, and SIGTERM as ``docker stop``.

The bot runs as a real subprocess against the local fake Discord and fake model (both on this
test's event loop), because signals, exit codes, log lines and leftover worker processes only
exist for a real process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import Answer, FakeOpenAI
from bot.storage import Store

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "support-channel.json"
CHANNEL = 1300000000000000001
BOT_ID = 1300000000000000100
BEN = 1300000000000000102

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.slow,
]


@dataclass
class BotProcess:
    process: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)
    children: set[int] = field(default_factory=set)
    """Child processes seen while it ran, stopped at the end if the bot left them behind."""
    _reader: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    async def wait_for_line(self, text: str, within: float = 30) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for line in self.lines:
                if text in line:
                    return line
            if self.process.returncode is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(f"no log line with {text!r}; got:\n" + "\n".join(self.lines))

    @property
    def log(self) -> str:
        return "\n".join(self.lines)


def config_file(tmp_path: Path, discord: FakeDiscord, model_url: str, **extra: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[discord]\napi_base = "{discord.api_base}"\nguild_ready_timeout = 0.1\n'
        f'[model]\nbase_url = "{model_url}"\nname = "fake-model"\n'
        f"[triggers]\nburst_window_seconds = 0.05\n"
        f"[replies]\nedit_interval_seconds = 0.2\n"
        f'[storage]\npath = "{tmp_path / "store.sqlite3"}"\n'
        # Process workers: the test checks that none is left behind.
        f'[articles]\nextract_workers = "process"\n' + "".join(extra.values())
    )
    return path


@contextlib.asynccontextmanager
async def bot_process(
    config: Path, discord: FakeDiscord, **environment: str
) -> AsyncIterator[BotProcess]:
    env = {**os.environ, "DISCORD_TOKEN": discord.token, "PYTHONUNBUFFERED": "1"}
    env.pop("THREADWISE_CONFIG", None)
    env.update(environment)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", "--config", str(config),
        cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    bot = BotProcess(process)
    bot._reader = asyncio.create_task(bot._read())
    try:
        yield bot
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        # Leftover workers keep the stderr pipe open: stop reading, and stop them.
        for pid in bot.children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(bot._reader, 5)


def children_of(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (the goose3 workers, the resource tracker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for child processes")
async def test_sigterm_stops_within_a_second_and_records_the_answer_in_flight(tmp_path):
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord, FakeOpenAI() as model:
        await discord.load_log(EXAMPLE)
        config = config_file(tmp_path, discord, model.url)
        async with bot_process(config, discord) as bot:
            await bot.wait_for_line("connected as")
            workers = bot.children = children_of(bot.process.pid)
            assert workers, "the goose3 worker processes should be running"
            # An answer that is still streaming when the stop comes.
            model.queue(Answer(text="Hard links are fast, but " + "word " * 200, chunk_delay=0.2))
            said = await discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> can I use hard links?")
            await discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=20)
            began = time.monotonic()
            bot.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(bot.process.wait(), 20)
            took = time.monotonic() - began
    assert code == 0, bot.log
    assert "Traceback" not in bot.log
    # About a second alone; the machine running the suite is shared, hence the margin.
    assert took < 3.0, f"took {took:.2f} s to stop"
    # multiprocessing's resource tracker leaves when it sees its parent's pipe close: a moment.
    for _ in range(40):
        if not [pid for pid in workers if alive(pid)]:
            break
        await asyncio.sleep(0.05)
    assert not [pid for pid in workers if alive(pid)], "worker processes left running"
    with Store.open(tmp_path / "store.sqlite3") as store:
        explanation = store.explain(int(said["id"]))
    assert explanation.outcome == "partial"
    assert explanation.error is not None and "abandoned" in explanation.error
    shown = discord.bot_messages(CHANNEL, after=int(said["id"]))
    assert "could not finish this answer" in shown[-1]["content"]


async def test_start_up_says_what_it_uses_and_warns_once_when_the_model_is_silent(tmp_path):
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord:
        await discord.load_log(EXAMPLE)
        silent = f"http://127.0.0.1:{closed_port()}/v1"
        config = config_file(tmp_path, discord, silent)
        health = tmp_path / "health"
        async with bot_process(config, discord, THREADWISE_HEALTH_FILE=str(health)) as bot:
            await bot.wait_for_line("connected as")
            warning = await bot.wait_for_line("does not answer")
            for _ in range(100):
                if health.exists():
                    break
                await asyncio.sleep(0.05)
            healthy = await health_check(health)
            bot.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(bot.process.wait(), 20)
    assert code == 0
    assert healthy == 0, "the heartbeat file should be fresh while connected"
    assert not health.exists() and await health_check(health) == 1
    assert "WARNING" in warning and silent in warning and "fake-model" in warning
    assert sum("does not answer" in line for line in bot.lines) == 1
    assert f"config: {config}" in bot.log
    assert f"store: {tmp_path / 'store.sqlite3'}" in bot.log
    assert f"model: fake-model at {silent}" in bot.log
    invite = next(line for line in bot.lines if "invite it with" in line)
    assert f"client_id={discord.application_id}" in invite
    assert "permissions=277025459200" in invite  # view, send, send in threads, history, commands
    assert "PyNaCl" not in bot.log


async def test_a_model_that_answers_gives_no_warning(tmp_path):
    async with FakeDiscord(bot_id=BOT_ID) as discord, FakeOpenAI() as model:
        await discord.load_log(EXAMPLE)
        async with bot_process(config_file(tmp_path, discord, model.url), discord) as bot:
            await bot.wait_for_line("connected as")
            # The probe comes after the login: on a busy machine, seconds after (it once took
            # over the 5 s this waited).
            async with asyncio.timeout(30):
                while not any(r.path.endswith("/models") for r in model.requests):
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            bot.process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(bot.process.wait(), 20) == 0
    assert any(r.path.endswith("/models") for r in model.requests)
    assert "does not answer" not in bot.log


async def health_check(path: Path) -> int:
    """The image's HEALTHCHECK command."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.serve.health", cwd=ROOT,
        env={**os.environ, "THREADWISE_HEALTH_FILE": str(path)},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    return await process.wait()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_start_up_probe_sends_the_key_the_way_the_provider_expects(provider):
    from bot.config.model_settings import ModelSettings
    from bot.serve.startup import model_problem
    from tests.fakes.anthropic_server import FakeAnthropic

    fake_server = FakeAnthropic if provider == "anthropic" else FakeOpenAI
    listed = "claude-fake" if provider == "anthropic" else "fake-model"
    async with fake_server(api_key="right-key") as fake:

        def settings(key: str, name: str = listed) -> ModelSettings:
            return ModelSettings(provider=provider, base_url=fake.url, name=name, api_key=key)

        assert await model_problem(settings("right-key")) is None
        refused = await model_problem(settings("wrong-key"))
        unlisted = await model_problem(settings("right-key", name="llama3.1"))
    assert refused is not None and "refused the API key (HTTP 401" in refused
    if provider == "anthropic":  # a paged list without aliases: the name is not held to it
        assert unlisted is None
    else:
        assert unlisted == (
            f"it does not list the model 'llama3.1' ([model] name; it lists {listed!r})"
        )


async def test_the_start_up_probe_knows_ollamas_latest_tag():
    from bot.config.model_settings import ModelSettings
    from bot.serve.startup import model_problem

    async with FakeOpenAI(models=("llama3.1:latest",)) as fake:
        assert await model_problem(ModelSettings(base_url=fake.url, name="llama3.1")) is None


async def test_the_start_up_probe_asks_for_the_v1_a_base_url_lacks():
    from bot.config.model_settings import ModelSettings
    from bot.serve.startup import model_problem

    async with FakeOpenAI() as fake:
        bare = fake.url.removesuffix("/v1")
        problem = await model_problem(ModelSettings(base_url=bare, name="fake-model"))
        assert await model_problem(ModelSettings(base_url=fake.url, name="fake-model")) is None
    assert problem == f"HTTP 404 at {bare}/models; does [model] base_url end in /v1?"


async def test_a_token_copied_with_its_bot_prefix_still_logs_in(tmp_path):
    """Operators copy "Bot xxx" from an Authorization header; a wrong token says what to do."""
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord:
        await discord.load_log(EXAMPLE)
        config = config_file(tmp_path, discord, f"http://127.0.0.1:{closed_port()}/v1")
        async with bot_process(config, discord, DISCORD_TOKEN=f"Bot {discord.token}") as bot:
            await bot.wait_for_line("connected as")
            bot.process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(bot.process.wait(), 20) == 0
        async with bot_process(config, discord, DISCORD_TOKEN="Bot not-the-token") as bot:
            code = await asyncio.wait_for(bot.process.wait(), 20)
            await asyncio.wait_for(bot._reader, 5)
    assert code == 3
    (line,) = [line for line in bot.lines if "rejected the token" in line]
    assert 'no "Bot " prefix' in line and "Traceback" not in bot.log


@pytest.mark.parametrize("back_after", [1.0, None], ids=["store back during the stop", "never"])
async def test_sigterm_while_postgresql_stalls_records_what_it_can_and_stops_in_bounded_time(
    tmp_path: Path, postgres_server: object, back_after: float | None
) -> None:
    """The answers' records are drained at a stop (``bot/answering/record_line.py``): a store
    back within the drain gets the answer's record; one that never comes back costs one log
    line, and the process still ends (it used to wait on the stalled writer for ever)."""
    from tests.bot.storage.test_stalled_store import interactions, proxied, unix_socket
    from tests.fakes.stall_proxy import StallingProxy

    url = postgres_server.fresh_url()  # type: ignore[attr-defined]
    with StallingProxy(unix_socket(url)) as proxy:
        async with (
            FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord,
            FakeOpenAI() as model,
        ):
            await discord.load_log(EXAMPLE)
            config = tmp_path / "config.toml"
            config.write_text(
                f'[discord]\napi_base = "{discord.api_base}"\nguild_ready_timeout = 0.1\n'
                f'[model]\nbase_url = "{model.url}"\nname = "fake-model"\n'
                "[triggers]\nburst_window_seconds = 0.05\n[articles]\nenabled = false\n"
                f'[storage]\nurl = "{proxied(url, proxy.port)}"\n'
            )
            async with bot_process(config, discord) as bot:
                await bot.wait_for_line("connected as")
                proxy.pause()
                said = await discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> still there?")
                await discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=20)
                await asyncio.sleep(0.5)  # the answer done, its record waiting for the store
                began = time.monotonic()
                bot.process.send_signal(signal.SIGTERM)
                if back_after is not None:
                    asyncio.get_running_loop().call_later(back_after, proxy.resume)
                code = await asyncio.wait_for(bot.process.wait(), 30)
                took = time.monotonic() - began
        proxy.resume()
        recorded = await interactions(url)
    print(f"stopped in {took:.1f} s; interactions recorded: {recorded}")
    assert code == 0, bot.log
    assert "Traceback" not in bot.log
    if back_after is not None:
        assert recorded == 1, bot.log
    else:
        assert recorded == 0
        assert sum("not recorded" in line for line in bot.lines) == 1, bot.log
        assert took < 20, f"took {took:.1f} s to stop"
