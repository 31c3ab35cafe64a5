"""Text that is not valid Unicode (a lone surrogate), or that a database cannot hold (NUL),
cannot stop answers or crash the tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conversation.common.text import clean_text
from tests.fakes.harness import (
    BEN,
    BOT_ID,
    CHANNEL,
    CHLOE,
    EXAMPLE,
    run_cli,
    running_bot,
    settled,
    with_offline_pages,
)

LONE = "\ud83d"


@pytest.mark.parametrize("poison", [LONE, "\x00"], ids=["lone-surrogate", "nul"])
async def test_a_poisoned_message_does_not_stop_later_answers(tmp_path, poison):
    from bot.storage import Store

    with Store.open(tmp_path / "store.sqlite3") as store:
        # Four recent messages always in: Chloé's is in both answers' contexts.
        async with running_bot(store=store, context={"min_linear": 4}) as bot:
            await bot.discord.user_says(CHANNEL, CHLOE, f"look {poison} at this")
            await settled(bot)
            for question in ("first question?", "second question?"):
                reply = await bot.answer_to(CHANNEL, BEN, f"<@{BOT_ID}> {question}")
                await settled(bot)
                final = bot.discord.message(CHANNEL, int(reply["id"]))
                assert final["content"].startswith("echo:"), final["content"]
                sent = bot.model.chat_requests[-1].body["messages"]
                assert any("look \ufffd at this" in str(m["content"]) for m in sent)
        assert len(list(store.export())) == 2


def poisoned_log(tmp_path: Path) -> Path:
    export = json.loads(EXAMPLE.read_text())
    export["messages"][-1]["content"] += " \\ud83d"  # JSON escape: a lone surrogate once parsed
    export["messages"][-1]["author"]["nickname"] = "Bad\\udc00Name"
    path = with_offline_pages(tmp_path) / "poisoned.json"
    path.write_text(
        json.dumps(export).replace("\\\\ud83d", "\\ud83d").replace("\\\\udc00", "\\udc00")
    )
    return path


@pytest.mark.parametrize("output", ["text", "json"])
def test_replay_of_a_poisoned_log_shows_the_replacement_character(tmp_path, output):
    path = poisoned_log(tmp_path)
    assert "\\ud83d" in path.read_text()
    result = run_cli("replay", str(path), "--no-model", "--format", output)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "\ufffd" in result.stdout or "\\ufffd" in result.stdout


def test_contexts_of_a_poisoned_log_work(tmp_path):
    result = run_cli("contexts", str(poisoned_log(tmp_path)))
    assert result.returncode == 0, result.stderr


def test_clean_text_keeps_pairs_and_replaces_halves():
    assert clean_text("ok \U0001f600") == "ok \U0001f600"
    assert clean_text("\ud83d\ude00") == "\U0001f600"
    assert clean_text("a\ud83db\udc00") == "a\ufffdb\ufffd"
    assert clean_text("a\ud83db").encode() == "a\ufffdb".encode()


def test_clean_text_replaces_nul():
    assert clean_text("a\x00b\x00") == "a\ufffdb\ufffd"
    assert clean_text("\x00\ud83d\ude00\udc00") == "\ufffd\U0001f600\ufffd"
