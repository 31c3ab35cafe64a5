"""Channel logs in, clear errors out: DCE parsing, ``contexts`` and ``replay`` from the shell."""

from __future__ import annotations

import json

import pytest

from conversation.replay.dce import ExportError, load_export, parse_export
from conversation.replay.log_source import LogSource
from tests.fakes.harness import EXAMPLE, ROOT, run_cli_here
from tests.fakes.later import asked_later

LOGS = ROOT / "tests" / "logs"


# ---------------------------------------------------------------------------- broken exports


def test_not_json_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{ this is not json")
    with pytest.raises(ExportError, match=rf"^{path}: not a JSON file"):
        load_export(path)


def test_not_an_export_names_the_file(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ExportError, match="no 'messages' list"):
        load_export(path)


def test_bad_message_names_the_message(tmp_path):
    raw = json.loads((LOGS / "interleaved.json").read_text())
    raw["messages"][3]["timestamp"] = "yesterday-ish"
    bad_id = raw["messages"][3]["id"]
    with pytest.raises(ExportError, match=rf"^x.json: message {bad_id}: timestamp"):
        parse_export(raw, source="x.json")


def test_non_numeric_id_is_an_error():
    raw = json.loads((LOGS / "interleaved.json").read_text())
    raw["messages"][0]["id"] = "abc"
    with pytest.raises(ExportError, match="message abc: id: Value error, message id must be"):
        parse_export(raw, source="x.json")


def test_real_export_quirks_are_tolerated():
    source = LogSource.from_file(LOGS / "quirks_thread.json")
    assert source.export.duplicate_ids  # kept once, the later copy
    contents = [m.content for m in source.messages]
    assert contents.count("a message exported twice (edited)") == 1
    assert "a message exported twice" not in contents
    assert source.messages[0].author.display_name == "erin"  # no nickname in the export
    assert source.channel.__class__.__name__ == "Thread"
    assert source.bot_user_id == 999  # the log's bot speaks as the assistant


def test_reply_resolution_follows_discord():
    deleted = LogSource.from_file(LOGS / "reply_to_deleted.json").messages[2]
    assert type(deleted.reference.resolved).__name__ == "DeletedReferencedMessage"
    outside = LogSource.from_file(LOGS / "reply_outside_log.json").messages[1]
    assert outside.reference.resolved is None  # unknown: Discord would not say either


# ---------------------------------------------------------------------------- contexts


def test_contexts_prints_one_json_line_per_trigger(tmp_path):
    ids = [m["id"] for m in json.loads((LOGS / "chain_across_days.json").read_text())["messages"]]
    triggers = tmp_path / "triggers.txt"
    triggers.write_text(f"{ids[-1]}\n{ids[4]}\n")
    config = tmp_path / "config.toml"  # four recent messages: ids[4] is in for two reasons
    config.write_text("[context]\nmin_linear = 4\n")
    log = str(LOGS / "chain_across_days.json")
    result = run_cli_here("contexts", log, "--triggers", str(triggers), "--config", str(config))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["trigger"] for line in lines] == [ids[-1], ids[4]]
    first = lines[0]
    assert set(first) == {"trigger", "context", "reasons", "rest_calls", "scores"}
    assert first["context"] == sorted(first["context"], key=int)
    assert ids[4] in first["context"] and ids[-1] not in first["context"]
    linear, reference = first["reasons"][ids[4]]
    assert linear.startswith("linear (score ") and reference == f"reference via {ids[-1]}"
    # Every selected message carries its learned score and what raised it.
    assert set(first["scores"]) == set(first["context"])
    assert all(0 <= entry["score"] <= 1 for entry in first["scores"].values())
    evidence = first["scores"][ids[4]]["evidence"]
    assert evidence and all(isinstance(word, str) and word for word in evidence)
    assert first["rest_calls"] == 1


def test_contexts_default_is_every_message():
    result = run_cli_here("contexts", str(LOGS / "interleaved.json"))
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 9


def test_contexts_with_prompts_gives_each_trigger_the_prompt_replay_would_send(tmp_path):
    example = LOGS.parents[1] / "examples" / "support-channel.json"
    ids = [m["id"] for m in json.loads(example.read_text())["messages"]]
    triggers = tmp_path / "triggers.txt"
    triggers.write_text(f"{ids[-1]}\n{ids[5]}\n")
    result = run_cli_here("contexts", str(example), "--triggers", str(triggers), "--prompts")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["trigger"] for line in lines] == [ids[-1], ids[5]]
    plain = run_cli_here("contexts", str(example), "--triggers", str(triggers))
    for line, alone in zip(lines, plain.stdout.splitlines(), strict=True):
        assert {k: v for k, v in line.items() if k != "prompt"} == json.loads(alone)
        replayed = run_cli_here("replay", "--no-model", "--format", "json", str(example),
                           "--trigger", line["trigger"])  # fmt: skip
        assert line["prompt"] == json.loads(replayed.stdout)["messages"]
    # The linked guide is read from the offline pages beside the log, as replay reads it.
    assert any('<embedding type="article"' in m["content"] for m in lines[0]["prompt"])


def test_contexts_with_prompts_counts_each_trigger_as_answered_in_order(tmp_path):
    """A trigger continuing an earlier listed one's conversation gets the request that starts
    with that one's, byte for byte (the log has no answer to put after it); the selection
    reported beside it does not change."""
    example = LOGS.parents[1] / "examples" / "support-channel.json"
    ids = [m["id"] for m in json.loads(example.read_text())["messages"]]
    triggers = tmp_path / "triggers.txt"
    triggers.write_text(f"{ids[10]}\n{ids[-1]}\n")  # Chloé's "About 800 GB", then her question
    result = run_cli_here("contexts", str(example), "--triggers", str(triggers), "--prompts")
    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert second["prompt"][: len(first["prompt"])] == first["prompt"]
    replayed = run_cli_here("replay", "--no-model", "--format", "json", str(example),
                       "--trigger", second["trigger"])  # fmt: skip
    assert second["prompt"] != json.loads(replayed.stdout)["messages"]  # alone, it starts anew
    plain = run_cli_here("contexts", str(example), "--triggers", str(triggers))
    assert [json.loads(line) for line in plain.stdout.splitlines()] == [
        {k: v for k, v in line.items() if k != "prompt"} for line in (first, second)
    ]


def test_contexts_on_a_missing_trigger_is_one_line(tmp_path):
    triggers = tmp_path / "t.txt"
    triggers.write_text("123\n")
    result = run_cli_here("contexts", str(LOGS / "interleaved.json"), "--triggers", str(triggers))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"error: {triggers}: message 123 is not in {LOGS / 'interleaved.json'}"
    )


def test_contexts_on_a_broken_log_is_one_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("[1, 2")
    result = run_cli_here("contexts", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {path}: not a JSON file")


# ---------------------------------------------------------------------------- replay


def test_replay_shows_the_prompt_with_reasons_offline():
    result = run_cli_here("replay", str(EXAMPLE), "--no-model")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "[trigger]" in out and "[system prompt]" in out
    assert "reference via #" in out
    assert "This guide covers it well" in out
    assert '<embedding type="article"' in out and "hard links" in out  # the bundled page, read
    assert "backup job failed" not in out  # sealed by a four-hour silence
    assert "lunch at the ramen place" not in out  # another conversation, before the recent ones


def test_replay_json_and_a_chosen_trigger():
    export = json.loads(EXAMPLE.read_text())
    trigger = export["messages"][10]["id"]  # Chloé's "About 800 GB" reply to the bot
    result = run_cli_here(
        "replay", str(EXAMPLE), "--trigger", trigger, "--format", "json", "--no-model"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["trigger"] == trigger
    assert data["messages"][0]["role"] == "system"
    assert data["messages"][-1]["content"].startswith(
        "Chloé (replying to Threadwise): About 800 GB"
    )
    assert any(m["role"] == "assistant" for m in data["messages"])


def test_replay_shows_the_budget_and_its_cuts(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[model]\ncontext_tokens = 1000\nreserve_tokens = 200\n")
    args = ("replay", str(EXAMPLE), "--no-model", "--config", str(config))
    text = run_cli_here(*args)
    assert text.returncode == 0, text.stderr
    assert "Token budget: prompt ~" in text.stdout and "of 800 tokens" in text.stdout
    assert "shortened: budget, article https://wiki.example.org/guides/database-upgrade" in (
        text.stdout
    )
    assert "[trigger]" in text.stdout and " tokens\n" in text.stdout
    data = json.loads(run_cli_here(*args, "--format", "json").stdout)
    budget = data["budget"]
    assert budget["limit"] == 800 and budget["prompt_tokens"] <= 800
    assert budget["cuts"] and len(data["tokens"]) == len(data["messages"])
    assert sum(data["tokens"]) <= budget["prompt_tokens"]


def test_replay_says_when_no_model_answers(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[model]\nbase_url = "http://127.0.0.1:9/v1"\n[articles]\nenabled = false\n')
    result = run_cli_here("replay", str(LOGS / "interleaved.json"), "--config", str(config))
    assert result.returncode == 1, result.stderr  # the prompt is shown, but the model failed
    assert "no model answered at http://127.0.0.1:9/v1" in result.stdout
    assert "--no-model" in result.stdout


def test_replay_after_three_days_of_silence_leaves_the_old_conversation_out(tmp_path):
    path = tmp_path / "later.json"
    path.write_text(json.dumps(asked_later("<@1300000000000000100> where should we go for lunch?")))
    config = tmp_path / "config.toml"
    config.write_text("[context]\nmin_linear = 4\n")
    result = run_cli_here("replay", str(path), "--no-model", "--config", str(config))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(4 of 22 earlier messages selected" in out  # the min_linear recent ones only
    assert "temporal via" not in out
    assert "move the main database" not in out and "This guide covers it well" not in out
