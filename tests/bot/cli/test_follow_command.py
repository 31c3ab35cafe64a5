"""``python -m bot follow``: the decisions on a bundled log, and that each uses only the past."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.fakes.harness import BOT_ID, EXAMPLE, ROOT, run_cli_here

# The support channel, then the bot answers Chloé, she goes on without a mention, and Eli goes
# on about lunch (the example of docs/following.md).
FOLLOW_LOG = ROOT / "tests" / "logs" / "follow_up.json"


@pytest.fixture
def follow_log() -> tuple[Path, dict[str, str]]:
    ids = [m["id"] for m in json.loads(FOLLOW_LOG.read_text(encoding="utf-8"))["messages"][-3:]]
    return FOLLOW_LOG, dict(zip(("answer", "follow_up", "lunch"), ids, strict=True))


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
    done = run_cli_here("follow", str(EXAMPLE), "--bot-id", "42")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"error: {EXAMPLE}: user 42 wrote no message in the log"
    assert "Traceback" not in done.stderr


def test_the_docs_follow_example_is_the_commands_output(capsys):
    readme = (ROOT / "docs" / "following.md").read_text(encoding="utf-8")
    command = "$ python -m bot follow tests/logs/follow_up.json --bot-id 1300000000000000100"
    shown = readme[readme.index(command) : readme.index("```", readme.index(command))]
    lines = [line for line in shown.splitlines()[1:] if line and line != "…"]
    assert main(["follow", str(FOLLOW_LOG), "--bot-id", str(BOT_ID)]) == 0
    output = capsys.readouterr().out.splitlines()
    assert lines == output[-len(lines) :]


@pytest.mark.parametrize(
    ("everywhere", "in_the_logs_channel", "followed"),
    [("true", "false", False), ("false", "true", True)],
    ids=["off-in-the-channel", "on-in-the-channel"],
)
def test_the_logs_channel_table_decides_as_the_live_bot_there(
    capsys, follow_log, tmp_path, everywhere, in_the_logs_channel, followed
):
    """follow_up.json is channel 1300000000000000001 of server 1300000000000000000: its
    [[channels]] table's [triggers] apply, as in the live bot, replay and the studio."""
    log, ids = follow_log
    config = tmp_path / "config.toml"
    config.write_text(
        f"[triggers]\nfollow = {everywhere}\n"
        "[[channels]]\nmatch = { channel_ids = [1300000000000000001] }\n"
        f"[channels.triggers]\nfollow = {in_the_logs_channel}\n"
        "[[channels]]\nmatch = { channel_ids = [42] }\n"  # another channel's: not applied
        f"[channels.triggers]\nfollow = {everywhere}\n",
        encoding="utf-8",
    )
    assert main(["follow", str(log), "--bot-id", str(BOT_ID), "--config", str(config)]) == 0
    decisions = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    follow_up = next(d for d in decisions if d["message"] == ids["follow_up"])
    assert follow_up["answer"] is followed
    assert (follow_up["why"] == "following is off here") is not followed
