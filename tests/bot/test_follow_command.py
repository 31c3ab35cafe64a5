"""``python -m bot follow``: the decisions on a bundled log, and that each uses only the past."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import pytest

from bot.cli.main import main
from conversation.dce import time_snowflake
from tests.fakes.harness import BOT_ID, EXAMPLE, run_cli

CHLOE = "1300000000000000103"
ELI = "1300000000000000105"


def _said(log: dict, template_author: str, at: str, content: str, reply_to: str | None = None):
    """A message appended to ``log`` by the author of an earlier one, at ``at`` (UTC)."""
    author = next(m["author"] for m in log["messages"] if m["author"]["id"] == template_author)
    moment = datetime.fromisoformat(f"2025-03-14T{at}+00:00")
    message = copy.deepcopy(log["messages"][-1])
    message.update(
        id=str(time_snowflake(moment)),
        timestamp=moment.isoformat(),
        content=content,
        author=author,
        mentions=[],
    )
    message.pop("reference", None)
    if reply_to is not None:
        message["reference"] = {"messageId": reply_to, "channelId": log["channel"]["id"]}
        message["type"] = "Reply"
    else:
        message["type"] = "Default"
    log["messages"].append(message)
    return message["id"]


@pytest.fixture
def follow_log(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The support channel, then the bot answers Chloé, she goes on without a mention, and
    Eli goes on about lunch."""
    log = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    trigger = log["messages"][-1]["id"]
    ids = {
        "answer": _said(
            log,
            str(BOT_ID),
            "13:29:00",
            "Yes: the hard-link mode upgrades the 800 GB in minutes, but if it fails halfway "
            "the old cluster cannot be started again, so take a backup first.",
            reply_to=trigger,
        ),
        "follow_up": _said(
            log, CHLOE, "13:30:00", "how long does the backup of the 800 GB take before that?"
        ),
        "lunch": _said(log, ELI, "13:31:00", "who is driving to the ramen place?"),
    }
    path = tmp_path / "channel.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path, ids


def _decisions(capsys: pytest.CaptureFixture[str], log: Path) -> list[dict]:
    assert main(["follow", str(log), "--bot-id", str(BOT_ID)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_bundled_log_answers_the_explicit_triggers_only(capsys):
    decisions = _decisions(capsys, EXAMPLE)
    export = json.loads(EXAMPLE.read_text(encoding="utf-8"))["messages"]
    first = next(i for i, m in enumerate(export) if m["author"]["id"] == str(BOT_ID))
    others = [m for m in export[first:] if m["author"]["id"] != str(BOT_ID)]
    assert [d["message"] for d in decisions] == [m["id"] for m in others]
    mentioning = {m["id"] for m in others if any(u["id"] == str(BOT_ID) for u in m["mentions"])}
    assert {d["message"] for d in decisions if d["answer"]} == mentioning
    for decision in decisions:
        assert set(decision) == {"message", "answer", "score", "why"}
        if decision["message"] in mentioning:
            assert decision["score"] is None and decision["why"] == "mentions the bot"


def test_a_follow_up_is_answered_and_the_other_conversation_is_not(capsys, follow_log):
    log, ids = follow_log
    by_id = {d["message"]: d for d in _decisions(capsys, log)}
    follow_up, lunch = by_id[ids["follow_up"]], by_id[ids["lunch"]]
    assert follow_up["answer"] is True and follow_up["score"] >= 0.5
    assert follow_up["why"].startswith("followed: no mention, continues the conversation with")
    assert lunch["answer"] is False and lunch["score"] < follow_up["score"]


def test_cutting_the_log_leaves_earlier_decisions_as_they_were(capsys, follow_log, tmp_path):
    log, _ = follow_log
    full = _decisions(capsys, log)
    export = json.loads(log.read_text(encoding="utf-8"))
    first = next(i for i, m in enumerate(export["messages"]) if m["author"]["id"] == str(BOT_ID))
    for cut in range(first + 1, len(export["messages"])):
        part = dict(export, messages=export["messages"][:cut])
        path = tmp_path / f"cut-{cut}.json"
        path.write_text(json.dumps(part), encoding="utf-8")
        decided = _decisions(capsys, path)
        assert decided == full[: len(decided)], f"cut at message {cut}"


def test_follow_threshold_from_the_config_applies(capsys, follow_log, tmp_path):
    log, ids = follow_log
    config = tmp_path / "config.toml"
    config.write_text("[triggers]\nfollow_threshold = 0.99\n", encoding="utf-8")
    assert main(["follow", str(log), "--bot-id", str(BOT_ID), "--config", str(config)]) == 0
    decisions = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    follow_up = next(d for d in decisions if d["message"] == ids["follow_up"])
    assert follow_up["answer"] is False and follow_up["score"] is not None


def test_an_unknown_bot_id_is_one_line():
    done = run_cli("follow", str(EXAMPLE), "--bot-id", "42")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"error: {EXAMPLE}: user 42 wrote no message in the log"
    assert "Traceback" not in done.stderr
