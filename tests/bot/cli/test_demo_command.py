"""``python -m bot demo`` as an operator runs it: from a folder of their own, with no token, no
config and no model server; then ``explain`` and the studio open what it stored."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.cli.store import open_existing
from bot.cli.studio import running
from bot.config.schema import load_config
from bot.demo.openai_server import Answer, FakeOpenAI
from bot.studio.server import make_app


def operator_env() -> dict[str, str]:
    """The environment without a config chosen for the demo (the tests' own may set one)."""
    return {k: v for k, v in os.environ.items() if k not in ("THREADWISE_CONFIG", "DISCORD_TOKEN")}


def demo(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", "demo", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env=operator_env(),
        timeout=120,
    )


async def demo_beside(folder: Path, *args: str) -> tuple[int | None, str, str]:
    """``demo`` run while the test's own servers (a model) keep serving on this loop."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "demo", *args,
        cwd=folder, env=operator_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode, stdout.decode(), stderr.decode()


def lines_in_order(text: str, *wanted: str) -> None:
    """Each of ``wanted`` occurs in ``text``, in this order."""
    at = 0
    for piece in wanted:
        found = text.find(piece, at)
        assert found >= 0, f"{piece!r} missing (after position {at}) in:\n{text}"
        at = found + len(piece)


ANA, BEN = "1400000000000000101", "1400000000000000102"


@pytest.mark.slow
def test_the_demo_plays_the_scene_and_leaves_a_store_explain_and_the_studio_open(tmp_path):
    done = demo(tmp_path, "--dir", "fresh demo")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "no config.toml here" note: the demo does not use a store there
    out = done.stdout
    lines_in_order(
        out,
        "No token, nothing from the internet",
        "Eli: Who is up for pizza at noon?",
        "Ana: @threadwise how do I find what is filling up the NAS",
        "threadwise (answering the mention):",
        "Run `du -xh",
        "Ana: and can the backup job delete snapshots",
        "threadwise (followed: no mention, continues the conversation with Ana",
        "Yes: give the job a retention rule",
        "Eli: Great, I'll book a table for four then.",
        "(left alone: not part of the bot's conversation)",
        "Ben: /catchup",
        "threadwise (only Ben sees it):",
        "2 conversation(s) of 2 found",
        "- eli: Who is up for pizza at noon? [1](https://discord.com/channels/",
        "Why the last answer was what it was",
        "followed: no mention",
        "Context (",
        "The demo's 2 answers are stored in fresh demo/store.sqlite3",
    )
    # Only a line said after the bot spoke can be left alone; the chat before it is just chat.
    assert out.count("(left alone") == 1
    explain_id = re.search(r"python -m bot explain (\d+) --config 'fresh demo/config.toml'", out)
    assert explain_id is not None, out
    assert "python -m bot studio --store --config 'fresh demo/config.toml'" in out

    explained = subprocess.run(
        [sys.executable, "-m", "bot", "explain", explain_id[1], "--config",
         "fresh demo/config.toml"],
        capture_output=True, text=True, cwd=tmp_path, env=operator_env(), timeout=60,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.splitlines()[0] in out  # the transcript showed the same explanation
    assert "followed: no mention, continues the conversation with Ana" in explained.stdout
    assert "Eli: Great" not in explained.stdout  # the neighbouring chat is not in the context

    async def studio_lists() -> list[dict]:
        # The store as `studio --store --config DIR/config.toml` opens it.
        config = load_config(tmp_path / "fresh demo" / "config.toml")
        with open_existing(config) as store:
            async with (
                running(make_app(None, store), "127.0.0.1", 0) as url,
                aiohttp.ClientSession() as http,
                http.get(url + "api/store/interactions") as response,
            ):
                assert response.status == 200
                return await response.json()

    listed = asyncio.run(studio_lists())
    # Ben's catch-up: one record per conversation summarised, its trigger the interaction.
    asked_by = [str(interaction["trigger_author_id"]) for interaction in listed]
    assert asked_by == [BEN, BEN, ANA, ANA]
    answers = listed[2:]  # newest first: the follow-up's answer, then the mention's
    follow_up = re.search(r"Answer to message (\d+) ", out)
    assert follow_up is not None
    assert str(answers[0]["trigger_message_id"]) == follow_up[1]
    assert not (tmp_path / "data").exists()  # the default store of a config-less run: untouched


def test_the_demo_never_overwrites_a_config_it_did_not_write(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "config.toml").write_text('[storage]\npath = "real.sqlite3"\n', encoding="utf-8")
    done = demo(tmp_path, "--dir", "mine")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: mine/config.toml: not written by the demo; give the demo a folder of its own "
        "(--dir DIR)"
    ]
    assert (folder / "config.toml").read_text(encoding="utf-8") == (
        '[storage]\npath = "real.sqlite3"\n'
    )
    assert not (folder / "store.sqlite3").exists()


async def test_with_model_the_configured_endpoint_answers(tmp_path):
    async with FakeOpenAI() as model:
        model.queue(Answer(text="Answered by your own model."), Answer(text="Again yours."))
        (tmp_path / "config.toml").write_text(
            f'[model]\nbase_url = "{model.url}"\nname = "local-llm"\n', encoding="utf-8"
        )
        returncode, out, err = await demo_beside(tmp_path, "--model")
    assert returncode == 0, err
    assert f"your [model] at {model.url}" in out
    lines_in_order(out, "(answering the mention):", "Answered by your own model.", "Again yours.")
    asked = [request.body["model"] for request in model.chat_requests]
    assert set(asked) == {"local-llm"} and len(asked) > 2  # the catch-up's summaries too


async def test_with_model_down_the_demo_says_so_in_one_line_and_exits_1(tmp_path):
    async with FakeOpenAI() as model:
        pass  # its port is free again: nothing listens there
    (tmp_path / "config.toml").write_text(
        f'[model]\nbase_url = "{model.url}"\nname = "m"\nmax_retries = 0\n', encoding="utf-8"
    )
    returncode, out, err = await demo_beside(tmp_path, "--model")
    assert returncode == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the bot did not answer: cannot reach the model at "), last
    assert "could not answer" in out
