"""Hot reload of config.toml while the bot runs: end to end, and the watcher on its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.config import reload as config_reload
from bot.config.config_file import MAX_CONFIG_BYTES
from bot.config.reload import ConfigWatcher, effective_config, is_live
from bot.config.schema import Config, ConfigError, load_config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import FakeOpenAI
from bot.discord.compat import set_rest_base
from bot.serve import live_config
from bot.serve.run import serve
from conversation.articles.service import ArticleService
from conversation.common.settings import ContextSettings
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, EXAMPLE

ROOT = Path(__file__).resolve().parents[3]


def config_text(discord: FakeDiscord, model: FakeOpenAI, *, prompt: str, extra: str = "") -> str:
    return f"""
[discord]
token = "{discord.token}"
api_base = "{discord.api_base}"
guild_ready_timeout = 0.1

[model]
base_url = "{model.url}"
name = "fake-model"
max_retries = 1
retry_base_seconds = 0.01
idle_timeout_seconds = 5
timeout_seconds = 20
system_prompt = "{prompt}"

[articles]
enabled = false

[triggers]
burst_window_seconds = 0.05

[replies]
edit_interval_seconds = 0.2
{extra}
"""


@pytest.fixture(autouse=True)
def root_level() -> Iterator[None]:
    """A reload may set the root logger's level; leave it as found for other tests."""
    level = logging.getLogger().level
    yield
    logging.getLogger().setLevel(level)


def check_config_error(path: Path) -> str:
    """What ``python -m bot check-config`` says about the file, as the operator sees it."""
    done = subprocess.run(
        [sys.executable, "-m", "bot", "check-config", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2, done.stdout
    return done.stderr.strip().removeprefix("error: ")


@contextlib.asynccontextmanager
async def bot_running(path: Path) -> AsyncIterator[None]:
    """``serve`` as ``run`` calls it, watching ``path``."""
    config = load_config(path)
    task = asyncio.create_task(serve(config, config.discord.token.get_secret_value(),
                                     config_path=path))  # fmt: skip
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        set_rest_base("https://discord.com/api/v10")


async def ask(discord: FakeDiscord, model: FakeOpenAI, text: str) -> dict:
    """A member mentions the bot; returns the model request the answer was made from."""
    before = len(model.chat_requests)
    said = await discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> {text}")
    await discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    assert len(model.chat_requests) == before + 1
    return model.chat_requests[-1].body


async def wait_for_log(caplog: pytest.LogCaptureFixture, words: str) -> str:
    # Returns as soon as the line is there; 5 s was once too few on a loaded machine.
    async with asyncio.timeout(30):
        while True:
            for record in caplog.records:
                if record.name == config_reload.log.name and words in record.getMessage():
                    return record.getMessage()
            await asyncio.sleep(0.02)


def system_prompt(body: dict) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


async def test_an_edited_system_prompt_reaches_the_next_answer_and_a_broken_edit_is_refused(
    tmp_path, caplog, monkeypatch
):
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    monkeypatch.setattr(config_reload, "POLL_SECONDS", 0.05)
    path = tmp_path / "config.toml"
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord, FakeOpenAI() as model:
        await discord.load_log(EXAMPLE)
        path.write_text(config_text(discord, model, prompt="You are Alpha."))
        async with bot_running(path):
            await discord.gateway.wait_for_identified()
            assert system_prompt(await ask(discord, model, "first")) == "You are Alpha."

            path.write_text(config_text(discord, model, prompt="You are Beta, and terse."))
            line = await wait_for_log(caplog, "reloaded")
            assert (
                line == f"{path} reloaded: [model] system_prompt 'You are Alpha.' -> "
                "'You are Beta, and terse.'"
            )
            assert system_prompt(await ask(discord, model, "second")) == "You are Beta, and terse."

            sampling = (
                config_text(discord, model, prompt="You are Beta, and terse.")
                .replace('name = "fake-model"', 'name = "fake-model-2"\ntemperature = 0.2')
                .replace(f'base_url = "{model.url}"', 'base_url = "http://x.invalid/v1"')
            )
            path.write_text(sampling)
            await wait_for_log(caplog, "temperature")
            sampled = await ask(discord, model, "sampled")
            assert sampled["temperature"] == 0.2 and sampled["model"] == "fake-model-2"
            await wait_for_log(caplog, "[model] base_url changed: takes effect after a restart")

            broken = config_text(
                discord, model, prompt="You are Gamma.", extra="[context]\nmin_linear = 70\n"
            )
            path.write_text(broken)
            refused = await wait_for_log(caplog, "edit refused")
            expected = check_config_error(path)
            assert expected.startswith(f"{path}: [context] min_linear: must not exceed max_total")
            assert refused == f"{expected} (edit refused: the last good config keeps serving)"
            third = await ask(discord, model, "third")
            assert system_prompt(third) == "You are Beta, and terse."

            path.write_text("[model\nname = ")  # not even TOML
            await wait_for_log(caplog, "not valid TOML")
            assert system_prompt(await ask(discord, model, "fourth")) == "You are Beta, and terse."
        assert not discord.server_errors, discord.server_errors


async def test_context_and_trigger_edits_apply_and_restart_keys_are_announced(
    tmp_path, caplog, monkeypatch
):
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    monkeypatch.setattr(config_reload, "POLL_SECONDS", 0.05)
    path = tmp_path / "config.toml"
    async with FakeDiscord(bot_id=BOT_ID, bot_name="threadwise") as discord, FakeOpenAI() as model:
        await discord.load_log(EXAMPLE)
        four = "[context]\nsummarize = false\nmin_linear = 4\n"  # four recent messages, wide
        path.write_text(config_text(discord, model, prompt="p", extra=four))
        async with bot_running(path):
            await discord.gateway.wait_for_identified()
            wide = await ask(discord, model, "how many messages do you see?")
            assert len(wide["messages"]) > 4

            storage = tmp_path / "elsewhere.sqlite3"
            path.write_text(
                config_text(
                    discord,
                    model,
                    prompt="p",
                    extra="[context]\nsummarize = false\nmin_linear = 1\nmax_total = 2\n"
                    f'[storage]\npath = "{storage}"\n',
                )
            )
            line = await wait_for_log(caplog, "reloaded")
            default = ContextSettings()
            assert line == (
                f"{path} reloaded: [context] min_linear 4 -> 1, "
                f"[context] max_total {default.max_total} -> 2"
            )
            restart = await wait_for_log(caplog, "restart")
            assert restart == f"{path}: [storage] path changed: takes effect after a restart"
            narrow = await ask(discord, model, "and now?")
            # The system prompt, two context messages at most, and the trigger.
            assert len(narrow["messages"]) <= 4

            # A smaller context window makes the budget cut the same context down.
            path.write_text(
                config_text(
                    discord,
                    model,
                    prompt="p",
                    extra="[context]\nsummarize = false\nmin_linear = 10\nmax_total = 30\n"
                    f'[storage]\npath = "{storage}"\n',
                )
            )
            await wait_for_log(caplog, "max_total 2 -> 30")
            full = await ask(discord, model, "all of it?")
            path.write_text(
                config_text(
                    discord,
                    model,
                    prompt="p",
                    extra="[context]\nsummarize = false\nmin_linear = 10\nmax_total = 30\n"
                    f'[storage]\npath = "{storage}"\n',
                ).replace(
                    'system_prompt = "p"',
                    'system_prompt = "p"\ncontext_tokens = 300\nreserve_tokens = 100',
                )
            )
            await wait_for_log(caplog, "context_tokens 8192 -> 300")
            cut = await ask(discord, model, "all of it?")
            assert len(cut["messages"]) < len(full["messages"])

            # Blocking the channel stops answers at once.
            path.write_text(
                config_text(
                    discord,
                    model,
                    prompt="p",
                    extra=f"[permissions]\nblocked_channels = [{CHANNEL}]\n",
                )
            )
            await wait_for_log(caplog, "blocked_channels [] -> [")
            before = len(model.chat_requests)
            await discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> still there?")
            await asyncio.sleep(0.5)
            assert len(model.chat_requests) == before


def make_config(**sections: dict) -> Config:
    return Config.model_validate(sections)


def test_keys_the_bot_reads_at_start_keep_their_running_values():
    running = make_config(model={"base_url": "http://a.example/v1", "temperature": 0.5})
    edited = make_config(
        model={"base_url": "http://b.example/v1", "temperature": 0.1},
        discord={"api_base": "http://c.example/api"},
        articles={"max_chars": 500, "max_bytes": 10},
        context={"max_total": 12},
    )
    effective = effective_config(running, edited)
    assert effective.model.base_url == "http://a.example/v1"
    assert effective.model.temperature == 0.1
    assert effective.discord.api_base == running.discord.api_base
    assert effective.articles.max_chars == 500
    assert effective.articles.max_bytes == running.articles.max_bytes
    assert effective.context.max_total == 12
    assert not is_live(("discord", "token")) and not is_live(("storage", "path"))
    assert is_live(("triggers", "allow_dms")) and is_live(("logging", "level"))
    # /catchup and the catch_up tool read [catchup] at each use, as a channel's table does.
    assert is_live(("catchup", "tool")) and is_live(("catchup", "max_conversations"))


def write(path: Path, text: str) -> None:
    path.write_text(text)


def test_the_watcher_names_what_changed_without_showing_secrets(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    path = tmp_path / "config.toml"
    write(path, '[discord]\ntoken = "old-secret-token"\n')
    applied: list[tuple[Config, Config]] = []
    watcher = ConfigWatcher(path, load_config(path), lambda old, new: applied.append((old, new)))

    assert not watcher.check()  # nothing changed
    write(path, '[discord]\ntoken = "new-secret-token"\n[logging]\nlevel = "DEBUG"\n')
    assert watcher.check()
    old, new = applied[-1]
    assert new.logging.level == "DEBUG" and old.logging.level == "INFO"
    assert new.discord.token is not None
    assert new.discord.token.get_secret_value() == "old-secret-token"  # needs a restart
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        f"{path} reloaded: [logging] level 'INFO' -> 'DEBUG'",
        f"{path}: [discord] token changed: takes effect after a restart",
    ]
    assert "secret" not in caplog.text

    # The same restart key is not announced again when something else changes.
    caplog.clear()
    write(path, '[discord]\ntoken = "new-secret-token"\n[logging]\nlevel = "INFO"\n')
    assert watcher.check()
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} reloaded: [logging] level 'DEBUG' -> 'INFO'"
    ]


def test_a_deleted_config_file_is_refused_and_the_running_one_kept(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    path = tmp_path / "config.toml"
    write(path, "[context]\nmax_total = 20\n")
    applied: list[Config] = []
    watcher = ConfigWatcher(path, load_config(path), lambda old, new: applied.append(new))
    path.unlink()
    assert not watcher.check()
    assert caplog.records[-1].getMessage() == (
        f"{path}: config file not found (edit refused: the last good config keeps serving)"
    )
    write(path, "[context]\nmax_total = 20\n")  # put back as it was
    assert not watcher.check()
    assert applied == []
    assert caplog.records[-1].getMessage() == f"{path} saved with no change in effect"


async def test_article_limits_apply_to_the_running_service():
    config = make_config()
    service = ArticleService(config.articles)
    assert len(service.find_urls("see https://a.example/x and https://b.example/y")) == 2
    edited = make_config(articles={"max_urls_per_message": 1, "max_chars": 300, "max_bytes": 9})
    service.apply_limits(effective_config(config, edited).articles)
    assert service.settings.max_urls_per_message == 1
    assert service.settings.max_chars == 300
    assert service.settings.max_bytes == config.articles.max_bytes  # the fetcher's: a restart
    assert service.find_urls("see https://a.example/x and https://b.example/y") == [
        "https://a.example/x"
    ]


async def test_a_reload_keeps_links_to_other_channels_readable():
    """A channel's rebuilt context builder keeps the running bot's resolver of Discord message
    links."""
    from bot.model.client import ModelClient
    from bot.serve.client import ThreadwiseClient

    config = make_config()
    async with ArticleService(config.articles) as articles, ModelClient(config.model) as model:
        client = ThreadwiseClient(config, articles=articles, model=model)
        channel = SimpleNamespace(id=1, guild=None, category_id=None)
        links = client.answerer.channels.runtime_for(channel).builder.links
        assert links is not None
        live_config.apply_to_client(client, config, make_config(context={"max_total": 12}))
        builder = client.answerer.channels.runtime_for(channel).builder
        assert builder.settings.max_total == 12
        assert builder.links is links
        await client.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
async def test_a_config_turned_into_a_named_pipe_never_blocks_the_bot(tmp_path, caplog):
    """Issue 43, break 3: the config symlinked to a named pipe. The watcher read it on the event
    loop and waited for a writer (for good: heartbeats stopped); here a writer comes after a
    second, so the old code's stall shows as a gap in the loop's ticks. Now the pipe is not
    read: one warning, the last good config keeps serving."""
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    real, pipe = tmp_path / "real.toml", tmp_path / "pipe"
    write(real, "[context]\nmax_total = 20\n")
    path = tmp_path / "config.toml"
    path.symlink_to(real)
    applied: list[Config] = []
    watcher = ConfigWatcher(
        path, load_config(path), lambda old, new: applied.append(new), interval=0.02
    )
    os.mkfifo(pipe)
    path.unlink()
    path.symlink_to(pipe)
    writer = threading.Thread(target=open_for_writing, args=(pipe, 1.0, 3.0), daemon=True)
    writer.start()
    watching = asyncio.create_task(watcher.run())
    longest, last = 0.0, time.monotonic()
    for _ in range(100):  # about two seconds of ticks
        await asyncio.sleep(0.02)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    watching.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watching
    assert longest < 0.5, f"the event loop stood still for {longest:.2f} s"
    refused = [r for r in caplog.records if "named pipe" in r.getMessage()]
    assert [r.getMessage() for r in refused] == [
        f"{path}: not a regular file but a named pipe: not read "
        "(edit refused: the last good config keeps serving)"
    ]
    assert refused[0].levelno == logging.WARNING
    assert applied == [] and watcher.running.context.max_total == 20


def open_for_writing(pipe: Path, after: float, within: float) -> None:
    """Open ``pipe`` for writing once a reader waits on it, from ``after`` seconds on, and close
    it at once (the reader then reads an empty file); give up ``within`` seconds later."""
    time.sleep(after)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError:  # no reader yet
            time.sleep(0.01)


def test_a_config_too_big_is_not_read_and_the_last_good_one_kept(tmp_path, caplog):
    """A file past MAX_CONFIG_BYTES (valid TOML, padded with a comment) is refused in one
    warning, once until it changes, before any of it is read; a config file again applies."""
    caplog.set_level(logging.INFO, logger=config_reload.log.name)
    path = tmp_path / "config.toml"
    write(path, "[context]\nmax_total = 20\n")
    applied: list[Config] = []
    watcher = ConfigWatcher(path, load_config(path), lambda old, new: applied.append(new))
    write(path, "[context]\nmax_total = 30\n#" + "x" * MAX_CONFIG_BYTES + "\n")
    assert not watcher.check()
    assert not watcher.check()  # the same refusal is not repeated every poll
    size = path.stat().st_size
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: {size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a config file may have: "
        "not read (edit refused: the last good config keeps serving)"
    ]
    assert caplog.records[0].levelno == logging.WARNING
    assert applied == [] and watcher.running.context.max_total == 20
    write(path, "[context]\nmax_total = 30\n")
    assert watcher.check() and applied[-1].context.max_total == 30


def test_check_config_refuses_a_path_that_is_no_config_file(tmp_path):
    """The same rule when the bot starts or check-config reads: a folder is one line."""
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert refused.value.lines == (f"{tmp_path}: not a regular file but a folder: not read",)


def test_a_file_caught_halfway_through_a_write_is_taken_whole_at_the_next_poll(
    tmp_path, monkeypatch
):
    """A script or an editor that empties the file, then writes it: caught in between, the
    empty file is a valid config of defaults, and it was applied (the system prompt, the model
    and every limit went back to their defaults for a poll)."""
    # A second between the two reads: the rest of the write surely lands within it.
    monkeypatch.setattr(config_reload, "SETTLE_SECONDS", 1.0, raising=False)
    path = tmp_path / "config.toml"
    write(path, '[model]\nsystem_prompt = "You are Alpha."\n')
    applied: list[Config] = []
    watcher = ConfigWatcher(path, load_config(path), lambda old, new: applied.append(new))
    write(path, "")  # emptied; the rest comes while the watcher looks
    rest = threading.Timer(0.05, write, (path, '[model]\nsystem_prompt = "You are Beta."\n'))
    rest.start()
    try:
        assert not watcher.check()  # the empty file is not taken
    finally:
        rest.join()
    assert applied == []
    assert watcher.check() and applied[-1].model.system_prompt == "You are Beta."
