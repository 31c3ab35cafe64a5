"""``replay`` reproduces the prompt the bot would have sent then, and every mistake is one line.

Driven from the shell as an operator runs it, on copies of the bundled example log.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.harness import run_cli_here

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "support-channel.json"


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_cli_here(*args, cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def no_articles(tmp_path: Path) -> str:
    config = tmp_path / "config.toml"
    config.write_text("[articles]\nenabled = false\n")
    return str(config)


def copy_example(tmp_path: Path, *, pages: bool = True) -> tuple[Path, dict]:
    log = tmp_path / "channel.json"
    shutil.copy(EXAMPLE, log)
    if pages:
        shutil.copytree(EXAMPLE.parent / "pages", tmp_path / "pages")
    return log, json.loads(log.read_text())


def test_a_reply_names_whom_it_replies_to_when_that_message_is_in_the_context():
    result = run_cli("replay", "--no-model", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "Dev (replying to Chloé): Yes, last month." in result.stdout
    assert "replying to an earlier message" not in result.stdout


def test_the_prompt_is_the_one_of_the_triggers_time(tmp_path):
    """A persona with {now} gets the trigger's time, so a past prompt is reproduced exactly."""
    config = tmp_path / "config.toml"
    config.write_text('[model]\nsystem_prompt = "It is {now}."\n[articles]\nenabled = false\n')
    export = json.loads(EXAMPLE.read_text())
    first = export["messages"][0]["id"]
    result = run_cli(
        "replay", "--no-model", "--format", "json", "--trigger", first, str(EXAMPLE),
        "--config", str(config),
    )  # fmt: skip
    system = json.loads(result.stdout)["messages"][0]["content"]
    assert system == "It is Friday 2025-03-14 09:00 UTC."


def test_the_header_counts_the_messages_before_the_trigger():
    export = json.loads(EXAMPLE.read_text())
    first, fifth = export["messages"][0]["id"], export["messages"][4]["id"]
    assert (
        "(0 of 0 earlier messages selected"
        in run_cli("replay", "--no-model", "--trigger", first, str(EXAMPLE)).stdout
    )
    assert (
        " of 4 earlier messages selected"
        in run_cli("replay", "--no-model", "--trigger", fifth, str(EXAMPLE)).stdout
    )


def test_reasons_have_one_name_in_replay_and_contexts(tmp_path):
    replay = run_cli("replay", "--no-model", str(EXAMPLE)).stdout
    contexts = run_cli("contexts", str(EXAMPLE)).stdout.splitlines()
    assert "[linear" in replay and "[recent" not in replay
    assert any('"linear' in line for line in contexts)
    assert not any('"recent' in line for line in contexts)


def test_a_log_with_a_byte_order_mark_is_read(tmp_path):
    log = tmp_path / "bom.json"
    log.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    result = run_cli("replay", "--no-model", str(log), "--config", no_articles(tmp_path))
    assert result.returncode == 0, result.stderr


def test_text_attachments_come_from_the_exported_files_or_say_they_are_not_there(tmp_path):
    log, export = copy_example(tmp_path, pages=False)
    files = tmp_path / "channel.json_Files"
    files.mkdir()
    (files / "pg_upgrade-check-1A2B.txt").write_text("Checking cluster versions ... ok\n")
    export["messages"][-1]["attachments"] = [
        {"id": "1", "url": "channel.json_Files/pg_upgrade-check-1A2B.txt",
         "fileName": "pg_upgrade-check.txt", "fileSizeBytes": 33},
        {"id": "2", "url": "https://cdn.discordapp.com/attachments/1/2/notes.txt",
         "fileName": "notes.txt", "fileSizeBytes": 20},
        {"id": "3", "url": "../../etc/hostname", "fileName": "sneaky.txt", "fileSizeBytes": 9},
    ]  # fmt: skip
    log.write_text(json.dumps(export))
    result = run_cli("replay", "--no-model", str(log), "--config", no_articles(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "[text attachment: pg_upgrade-check.txt]\n       Checking cluster versions ... ok" in out
    assert "[text attachment: notes.txt, not readable: not in the log (export with --media" in out
    assert "[text attachment: sneaky.txt, not readable: outside the export's folder" in out
    assert "AttributeError" not in out


def test_a_missing_offline_page_is_one_line(tmp_path):
    log, _ = copy_example(tmp_path)
    (tmp_path / "pages" / "database-upgrade.html").unlink()
    result = run_cli("replay", "--no-model", str(log))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith(f"error: {tmp_path / 'pages' / 'index.json'}: ")
    assert "database-upgrade.html" in result.stderr and len(result.stderr.splitlines()) == 1


def test_an_offline_page_that_is_not_utf8_is_still_read(tmp_path):
    log, _ = copy_example(tmp_path)
    page = tmp_path / "pages" / "database-upgrade.html"
    page.write_bytes(page.read_bytes().replace(b"Upgrading", b"Upgr\xe4ding"))
    result = run_cli("replay", "--no-model", str(log))
    assert result.returncode == 0, result.stderr
    assert "pipeline bug" not in result.stderr and "Traceback" not in result.stderr
    assert "article https://wiki.example.org/guides/database-upgrade: read" in result.stdout


def test_a_triggers_file_that_is_not_text_is_one_line(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"\xff\xfe1\x002\x00")
    result = run_cli("contexts", str(EXAMPLE), "--triggers", str(ids))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {ids}: not UTF-8 text")


@pytest.mark.parametrize("out", [".", "/"])
def test_export_to_a_folder_is_one_line(tmp_path, out):
    config = tmp_path / "config.toml"
    store = tmp_path / "store.sqlite3"
    config.write_text(f'[storage]\npath = "{store}"\n')
    from bot.storage import Store

    Store.open(store).close()
    result = run_cli("export", "--config", str(config), "--out", out, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: --out {out}: is a folder")


def test_the_benchmark_without_its_data_says_where_it_looks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "lab.context_quality", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {tmp_path}: no scored logs here")


def test_warm_replays_show_what_a_bot_that_saw_the_channel_builds(tmp_path):
    """Cold, a busy channel's context costs history pages (a second one here: every candidate of
    the first page enters, so the conversation reaches its edge); ``--warm`` walks as far through
    what the cache holds, with no REST call, as the running bot does."""
    from tests.fakes.synthetic import busy_channel

    log = tmp_path / "busy.json"
    channel = busy_channel(seed=3, messages=300, reply_rate=0, old_reply_rate=0, silence_rate=0)
    log.write_text(json.dumps(channel))
    config = tmp_path / "config.toml"  # every candidate enters: the context is the walk
    config.write_text("[context]\nrelevance_threshold = 0.0\nmax_total = 300\n")
    trigger = channel["messages"][-1]["id"]
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{trigger}\n")

    def context(*options: str) -> dict:
        done = run_cli("contexts", str(log), "--triggers", str(ids), "--config", str(config),
                       *options)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    cold, warm = context(), context("--warm")
    # Cold, the first page's choice and what the second adds (its messages 0.1 over the
    # threshold: not all of them), for a second REST call.
    assert cold["rest_calls"] == 2 and 100 < len(cold["context"]) < 199
    assert (len(warm["context"]), warm["rest_calls"]) == (199, 0)
    shown = run_cli("replay", str(log), "--no-model", "--warm", "--config", str(config))
    assert (
        "(199 of 299 earlier messages selected, 0 REST call(s) with a warm cache)" in shown.stdout
    )
