"""The studio's JSON API, served for real on 127.0.0.1 and asked over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.cli.studio import running
from bot.config.model_settings import ModelSettings
from bot.storage import ContextEntry, InteractionRecord, Store, WorkLogEntry
from bot.studio.channel import ChannelStudio
from bot.studio.server import make_app
from conversation.common.settings import ContextSettings
from conversation.replay.gold import Score, load_gold
from conversation.replay.log_contexts import select_contexts
from conversation.replay.log_source import LogSource

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "support-channel.json"
GOLD = ROOT / "examples" / "support-channel.gold.json"


def ids_at(*times: str) -> list[str]:
    """Message ids of the example log by their HH:MM time (each minute holds one message)."""
    source = LogSource.from_file(EXAMPLE)
    by_time = {m.created_at.strftime("%H:%M"): str(m.id) for m in source.messages}
    return [by_time[t] for t in times]


@contextlib.asynccontextmanager
async def studio(
    log: Path | None = EXAMPLE, store: Store | None = None, **settings: Any
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    channel = ChannelStudio(log, ContextSettings(**settings)) if log else None
    async with (
        running(make_app(channel, store), "127.0.0.1", 0) as url,
        aiohttp.ClientSession() as http,
    ):
        yield http, url


async def post(http: aiohttp.ClientSession, url: str, body: dict) -> tuple[int, dict]:
    async with http.post(url, json=body) as response:
        return response.status, await response.json()


async def test_the_channel_is_described_with_ids_as_strings_and_every_setting():
    async with studio() as (http, url), http.get(url + "api/channel") as response:
        info = await response.json()
    assert len(info["messages"]) == 22
    first = info["messages"][0]
    assert first["id"] == "1350030694809600000" and first["author"] == "Ana"
    assert first["content"].startswith("Our nightly backup job failed")
    dev_reply = next(m for m in info["messages"] if m["author"] == "Dev")
    assert dev_reply["reply_to"] == ids_at("13:10")[0]
    assert [f["key"] for f in info["fields"]] == list(ContextSettings.model_fields)
    threshold = next(f for f in info["fields"] if f["key"] == "time_threshold_minutes")
    assert threshold["kind"] == "float" and threshold["exclusive_minimum"]
    assert info["has_gold"] and info["default_trigger"] == ids_at("13:28")[0]


async def test_a_trigger_context_follows_changed_settings():
    trigger, guide, question = ids_at("13:28", "13:12", "13:10")
    async with studio() as (http, url):
        status, wide = await post(http, url + "api/context", {"trigger": trigger, "settings": {}})
        assert status == 200
        status, narrow = await post(
            http,
            url + "api/context",
            {"trigger": trigger, "settings": {"min_linear": 1, "max_total": 2}},
        )
        assert status == 200
    chosen = {item["id"]: item for item in wide["context"]}
    reference = next(r for r in chosen[guide]["reasons"] if r["kind"] == "reference")
    assert reference["via"] == trigger
    # The replied-to message scores high, and its explanation says what raised the score.
    assert reference["score"] >= 0.9 and reference["evidence"]
    assert {"source": trigger, "target": guide, "kind": "reference"} in wide["edges"]
    assert question in chosen  # the question the guide answered, reached through it
    assert all(item["tokens"] > 0 and item["text"] for item in wide["context"])
    parts = (
        wide["system_tokens"] + wide["trigger_tokens"] + wide["label_tokens"]
        + sum(i["tokens"] for i in wide["context"])
    )  # fmt: skip
    assert wide["label_tokens"] > 0  # the lunch talk comes after its label
    assert 0 <= wide["tokens"] - parts <= 10  # the chat template's reply priming, rounding
    assert wide["budget"].startswith(f"prompt ~{wide['tokens']} of 7168 tokens (window 8192")
    assert all(item["cuts"] == [] for item in wide["context"])
    # Two messages at most, and the replied-to one is kept first.
    assert len(narrow["context"]) == 2
    assert guide in {item["id"] for item in narrow["context"]}
    assert "max_total = 2" in narrow["toml"] and "min_linear = 1" in narrow["toml"]
    assert narrow["toml"].startswith("[context]\n")
    pasted = tomllib.loads(narrow["toml"])["context"]
    assert ContextSettings(**pasted) == ContextSettings(min_linear=1, max_total=2)


async def test_the_context_is_fitted_to_the_model_token_budget():
    trigger, question = ids_at("13:28", "13:10")
    model = ModelSettings(context_tokens=400, reserve_tokens=100)
    channel = ChannelStudio(EXAMPLE, ContextSettings(), model)
    async with (
        running(make_app(channel, None), "127.0.0.1", 0) as url,
        aiohttp.ClientSession() as http,
    ):
        _, view = await post(http, url + "api/context", {"trigger": trigger, "settings": {}})
    dropped = [item for item in view["context"] if item["tokens"] == 0]
    assert dropped and all(item["cuts"] and item["text"] == "" for item in dropped)
    assert all(cut.startswith("dropped: budget, message") for i in dropped for cut in i["cuts"])
    assert (
        view["tokens"] <= 300
        and "of 300 tokens (window 400 - answer reserve 100)" in (view["budget"])
    )
    assert "dropped" in view["budget"]
    # The question the trigger's reply chain leads to is kept; the budget drops other talk.
    assert question not in {item["id"] for item in dropped}


async def test_a_shorter_silence_threshold_seals_history_sooner():
    trigger = ids_at("13:28")[0]
    async with studio() as (http, url):
        _, thirty = await post(http, url + "api/context", {"trigger": trigger, "settings": {}})
        _, short = await post(
            http,
            url + "api/context",
            {"trigger": trigger, "settings": {"time_threshold_minutes": 0.5, "min_linear": 0}},
        )
    assert {item["id"] for item in short["context"]} < {item["id"] for item in thirty["context"]}
    # Only what a reply reference reaches, whatever its age, is left.
    assert all(
        reason["kind"] == "reference" for item in short["context"] for reason in item["reasons"]
    )


async def test_gold_scores_for_a_trigger_and_for_the_whole_log():
    trigger = ids_at("13:28")[0]
    gold = load_gold(GOLD)[int(trigger)]
    settings = {"min_linear": 2, "max_total": 4}
    async with studio() as (http, url):
        _, view = await post(http, url + "api/context", {"trigger": trigger, "settings": settings})
        _, narrow = await post(http, url + "api/score", {"settings": settings})
        _, default = await post(http, url + "api/score", {"settings": {}})
    chosen = {int(item["id"]) for item in view["context"]}
    score = view["score"]
    assert score["gold"] == [str(m) for m in sorted(gold.context)]
    assert score["missed"] == [str(m) for m in sorted(gold.context - chosen)]
    assert score["precision"] == pytest.approx(len(chosen & gold.context) / len(chosen), abs=1e-4)
    assert score["recall"] == pytest.approx(len(chosen & gold.context) / len(gold.context), 1e-3)
    for item in view["context"]:
        assert item["in_gold"] == (int(item["id"]) in gold.context)
    # The whole-log figure is the benchmark's definition, computed here independently.
    expected = await score_log(ContextSettings(**settings))
    assert narrow["score"]["triggers"] == expected.triggers == len(load_gold(GOLD))
    assert narrow["score"]["f1"] == pytest.approx(expected.f1, abs=1e-4)
    assert narrow["score"]["recall"] < default["score"]["recall"]


async def score_log(settings: ContextSettings) -> Score:
    source = LogSource.from_file(EXAMPLE)
    gold = load_gold(GOLD)
    score = Score()
    async for selection in select_contexts(source, settings, list(gold)):
        trigger = selection.trigger.id
        score.add(trigger, set(selection.ids), gold[trigger])
    return score


async def test_a_log_without_gold_has_no_scores(tmp_path):
    log = tmp_path / "channel.json"
    log.write_bytes(EXAMPLE.read_bytes())
    trigger = ids_at("13:28")[0]
    async with studio(log) as (http, url):
        _, view = await post(http, url + "api/context", {"trigger": trigger, "settings": {}})
        _, score = await post(http, url + "api/score", {"settings": {}})
        async with http.get(url + "api/channel") as response:
            info = await response.json()
    assert view["score"] is None and score["score"] is None
    assert not info["has_gold"] and info["default_trigger"] == trigger


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            {"min_linear": 60},
            "studio: [context] min_linear: must not exceed max_total (min_linear = 60 > max_total",
        ),
        ({"max_totl": 3}, "studio: [context] max_totl: unknown key"),
        ({"time_threshold_minutes": 0}, "studio: [context] time_threshold_minutes: more than 0"),
        ({"max_total": ""}, "studio: [context] max_total: Input should be a valid integer"),
    ],
)
async def test_settings_the_config_would_refuse_get_its_one_line_error(settings, line):
    trigger = ids_at("13:28")[0]
    async with studio() as (http, url):
        status, body = await post(
            http, url + "api/context", {"trigger": trigger, "settings": settings}
        )
        score_status, score_body = await post(http, url + "api/score", {"settings": settings})
    assert status == score_status == 400
    assert body["error"].startswith(line) and "\n" not in body["error"]
    assert score_body == body


@pytest.mark.parametrize(
    ("trigger", "status", "words"),
    [("1", 404, "no message 1 in the log"), ("12ab", 400, "not a Discord id"), (None, 400, "id")],
)
async def test_bad_triggers_are_one_line_errors(trigger, status, words):
    async with studio() as (http, url):
        got, body = await post(http, url + "api/context", {"trigger": trigger})
    assert got == status and words in body["error"]


async def test_requests_must_be_json_objects():
    async with studio() as (http, url):
        async with http.post(url + "api/score", data="max_total=3") as response:
            assert response.status == 415
        async with http.post(url + "api/score", json=[1, 2]) as response:
            assert response.status == 400
            assert (await response.json())["error"] == "request body must be a JSON object"


async def test_the_page_is_served_with_a_strict_content_security_policy():
    async with studio() as (http, url):
        async with http.get(url) as page:
            html = await page.text()
            policy = page.headers["Content-Security-Policy"]
        async with http.get(url + "static/studio.js") as script:
            assert script.status == 200
            js = await script.text()
    assert '<script src="/static/studio.js"' in html
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js  # text nodes only


async def test_a_foreign_host_name_is_refused():
    """A page elsewhere reaching the studio through DNS rebinding names its own host."""
    async with studio() as (http, url):
        async with http.get(url + "api/channel", headers={"Host": "attacker.example"}) as refused:
            assert refused.status == 421
        async with http.get(url + "api/info", headers={"Host": "localhost:1"}) as allowed:
            assert allowed.status == 200


async def test_without_a_log_the_channel_api_says_how_to_get_one():
    async with studio(log=None) as (http, url):
        async with http.get(url + "api/info") as response:
            assert await response.json() == {"channel": False, "store": False}
        async with http.get(url + "api/channel") as response:
            assert response.status == 404
            assert "python -m bot studio LOG" in (await response.json())["error"]


def make_record(index: int, **fields: Any) -> InteractionRecord:
    started = datetime(2024, 5, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=index)
    values: dict[str, Any] = {
        "channel_id": 1300000000000000001,
        "trigger_message_id": 1350098139217920000 + index,
        "trigger_author_id": 1300000000000000103,
        "started_at": started,
        "ended_at": started + timedelta(seconds=2),
        "model": "fake-model",
        "parameters": {"temperature": 0.7},
        "request_messages": [
            {"role": "system", "content": "You are threadwise."},
            {"role": "user", "content": f"chloe: question {index} <b>bold?</b>", "name": "chloe"},
        ],
        "context": [
            None,
            ContextEntry(
                message_id=1350098139217920000 + index,
                author_id=1300000000000000103,
                name="chloe",
                reasons=["trigger"],
                tokens=31,
            ),
        ],
        "answer": f"answer number {index}",
        "answer_message_ids": [1350098139217930000 + index],
        "usage": {"prompt_tokens": 120 + index, "completion_tokens": 30, "total_tokens": 150},
        "latency_seconds": 1.25,
        "outcome": "success",
        "work_log": [WorkLogEntry(action="history_page", detail="before 1", count=50)],
    }
    values.update(fields)
    return InteractionRecord(**values)


async def test_the_store_lists_recorded_answers_newest_first_and_shows_one_whole(tmp_path):
    store = Store.open(tmp_path / "store.sqlite3")
    try:
        for index in range(3):
            await store.record(make_record(index))
        await store.record(make_record(3, outcome="failure", answer="", error="model timed out"))
        async with studio(log=None, store=store) as (http, url):
            async with http.get(url + "api/store/interactions?limit=2") as response:
                page = await response.json()
            async with http.get(
                url + f"api/store/interactions?before={page[-1]['seq']}"
            ) as response:
                older = await response.json()
            async with http.get(
                url + f"api/store/interactions/{page[1]['interaction_id']}"
            ) as response:
                record = await response.json()
            async with http.get(url + "api/store/interactions/nope") as response:
                missing = response.status, await response.json()
    finally:
        store.close()
    assert [item["outcome"] for item in page] == ["failure", "success"]
    assert page[0]["error"] == "model timed out"
    assert page[1]["answer_excerpt"] == "answer number 2"
    assert page[1]["trigger_message_id"] == "1350098139217920002"  # exact, as a string
    assert [item["answer_excerpt"] for item in older] == ["answer number 1", "answer number 0"]
    assert record["request_messages"][1]["content"] == "chloe: question 2 <b>bold?</b>"
    assert record["context"][1]["reasons"] == ["trigger"]
    assert record["usage"]["prompt_tokens"] == 122 and record["latency_seconds"] == 1.25
    assert record["work_log_summary"] == ["history_page: 1, 50 items"]
    assert missing[0] == 404 and "no interaction with id nope" in missing[1]["error"]


def fetch_from_command(tmp_path: Path, paths: list[str], *args: str) -> list[Any]:
    """Start ``python -m bot studio`` with ``args``, GET each of ``paths``, stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "studio", *args, "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("studio: http://127.0.0.1:"), line
        url = line.split()[1]

        async def fetch() -> list[Any]:
            async with aiohttp.ClientSession() as http:
                answers = []
                for path in paths:
                    async with http.get(url + path) as response:
                        answers.append(await response.json())
                return answers

        return asyncio.run(fetch())
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_command_prints_its_address_and_serves(tmp_path):
    info, channel = fetch_from_command(tmp_path, ["api/info", "api/channel"], str(EXAMPLE))
    assert info == {"channel": True, "store": False}
    assert channel["applies"]["summary"].startswith("settings: top level")


def test_the_command_answers_with_the_table_of_the_logs_channel(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(CHANNEL_MODELS + OTHER_TABLE + LOG_TABLE)
    (channel,) = fetch_from_command(
        tmp_path, ["api/channel"], str(EXAMPLE), "--config", str(config)
    )
    assert channel["applies"]["table"] == 2 and channel["applies"]["model"] == "big-model"
    assert channel["settings"]["max_total"] == 12


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ([], "error: studio: give a channel log (python -m bot studio LOG.json), --store, or both"),
        (["missing.json"], "error: missing.json"),
        (["--store"], "no store there yet ([storage] path"),
        ([str(EXAMPLE), "--port", "70000"], "error: --port: must be 0..65535, got 70000"),
    ],
)
def test_command_mistakes_are_one_line(tmp_path, args, line):
    done = subprocess.run(
        [sys.executable, "-m", "bot", "studio", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    errors = [text for text in done.stderr.splitlines() if not text.startswith("note: ")]
    assert len(errors) == 1 and line in errors[0]
    assert "Traceback" not in done.stderr


def test_a_broken_gold_file_is_one_line(tmp_path):
    log = tmp_path / "channel.json"
    log.write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "channel.gold.json").write_text('{"messages": {"1": {"annotated": true}}}')
    done = subprocess.run(
        [sys.executable, "-m", "bot", "studio", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    errors = [text for text in done.stderr.splitlines() if not text.startswith("note: ")]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {tmp_path / 'channel.gold.json'}: not a gold file")


CHANNEL_MODELS = """
[model]
name = "small"
[models.big]
base_url = "http://127.0.0.1:9/v1"
name = "big-model"
[context]
max_total = 30
"""
OTHER_TABLE = """
[[channels]]
match = { channel_ids = [77] }
[channels.context]
max_total = 8
"""
LOG_TABLE = """
[[channels]]
match = { channel_ids = [1300000000000000001] }
model = "big"
[channels.context]
max_total = 12
[channels.triggers]
burst_window_seconds = 4.0
"""


@contextlib.asynccontextmanager
async def configured_studio(
    tmp_path: Path, text: str
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    """The studio as ``python -m bot studio LOG`` starts it with ``text`` as config.toml."""
    from bot.config.schema import load_config

    path = tmp_path / "config.toml"
    path.write_text(text)
    channel = ChannelStudio.for_config(EXAMPLE, load_config(path, env={}))
    async with (
        running(make_app(channel, None), "127.0.0.1", 0) as url,
        aiohttp.ClientSession() as http,
    ):
        yield http, url


async def test_the_channel_says_which_table_applies_and_copies_that_table(tmp_path):
    from bot.config.channels import ChannelSettings, Place

    text = CHANNEL_MODELS + OTHER_TABLE + LOG_TABLE
    trigger = ids_at("13:28")[0]
    async with configured_studio(tmp_path, text) as (http, url):
        async with http.get(url + "api/channel") as response:
            info = await response.json()
        _, view = await post(
            http, url + "api/context", {"trigger": trigger, "settings": {"max_total": 5}}
        )
    applies = info["applies"]
    assert applies["table"] == 2 and applies["matched_by"] == "channel"
    assert applies["model"] == "big-model"
    assert "[context] max_total = 12" in applies["changes"]
    assert "[triggers] burst_window_seconds = 4.0" in applies["changes"]
    assert '[model] name = "big-model"' in applies["changes"]
    assert applies["summary"].startswith(
        "settings: [[channels]] 2, matched by its channel (channel_ids = [1300000000000000001])"
    )
    assert info["settings"]["max_total"] == 12  # the table's, not the top level's 30
    # The copy is the channel's table: pasted over it, only this channel changes.
    assert view["toml"].startswith("[[channels]]\n")
    pasted = tomllib.loads(view["toml"])["channels"][0]
    assert pasted["match"] == {"channel_ids": [1300000000000000001]}
    assert pasted["model"] == "big" and pasted["triggers"] == {"burst_window_seconds": 4.0}
    assert pasted["context"] == {"max_total": 5}
    edited = load_config_text(tmp_path, CHANNEL_MODELS + OTHER_TABLE + view["toml"])
    table = ChannelSettings(edited)
    here = table.settings_at(Place(1300000000000000001, None, 1300000000000000000))
    assert here.context.max_total == 5 and here.model.name == "big-model"
    assert table.settings_at(Place(77, None, None)).context.max_total == 8
    assert table.settings_at(Place(78, None, None)).context.max_total == 30


def load_config_text(tmp_path: Path, text: str):
    from bot.config.schema import load_config

    path = tmp_path / "edited.toml"
    path.write_text(text)
    return load_config(path, env={})


async def test_a_channel_no_table_matches_says_top_level_and_copies_context(tmp_path):
    trigger = ids_at("13:28")[0]
    async with configured_studio(tmp_path, CHANNEL_MODELS + OTHER_TABLE) as (http, url):
        async with http.get(url + "api/channel") as response:
            info = await response.json()
        _, view = await post(
            http, url + "api/context", {"trigger": trigger, "settings": {"max_total": 5}}
        )
    applies = info["applies"]
    assert applies["table"] is None and applies["matched_by"] is None
    assert applies["model"] == "small" and applies["changes"] == []
    assert applies["summary"] == (
        "settings: top level (no [[channels]] table matches); model small"
    )
    assert info["settings"]["max_total"] == 30
    assert view["toml"].startswith("[context]\n")
    assert tomllib.loads(view["toml"])["context"]["max_total"] == 5


def test_the_studio_command_reads_the_log_once_when_a_table_applies(tmp_path, monkeypatch):
    """``python -m bot studio LOG`` with a [[channels]] table for the log's channel: the log is
    read once, and the page answers with the table's settings."""
    import argparse

    import bot.cli.studio as cli
    import conversation.replay.log_source as log_source
    from bot.config.schema import load_config
    from bot.studio.server import CHANNEL_KEY

    reads: list[Path] = []
    read = log_source.load_export

    def counted(path, *args, **kwargs):
        reads.append(Path(path))
        return read(path, *args, **kwargs)

    served: list[Any] = []

    async def serve(app, host, port) -> None:  # instead of serving until Ctrl-C
        served.append(app)

    monkeypatch.setattr(log_source, "load_export", counted)
    monkeypatch.setattr(cli, "_serve_forever", serve)
    path = tmp_path / "config.toml"
    path.write_text(CHANNEL_MODELS + OTHER_TABLE + LOG_TABLE)
    args = argparse.Namespace(log=EXAMPLE, store=False, port=0, host="127.0.0.1")
    assert cli.studio_command(args, load_config(path, env={})) == 0
    [app] = served
    assert reads == [EXAMPLE]
    assert app[CHANNEL_KEY].applies.table == 2 and app[CHANNEL_KEY].model.name == "big-model"


async def test_a_warm_cache_shows_what_a_bot_that_saw_the_channel_builds(tmp_path, monkeypatch):
    """Cold, a busy channel's context costs history pages (two here: every candidate enters,
    so the conversation reaches the first page's edge); warm, the walk goes as far through what
    the cache holds, with no REST call, as ``replay --warm`` shows."""
    from conversation.selection import walk

    monkeypatch.setattr(walk, "OLDER_MARGIN", 0.0)  # the second page's messages enter too
    from tests.fakes.synthetic import busy_channel

    log = tmp_path / "busy.json"
    channel = busy_channel(seed=3, messages=300, reply_rate=0, old_reply_rate=0, silence_rate=0)
    log.write_text(json.dumps(channel))
    messages = channel["messages"]
    # One conversation from message 100 on, with two triggers in it.
    labels = {
        m["id"]: {"annotated": i in (250, 299), "parents": [], "conversation": 1}
        for i, m in enumerate(messages)
        if i >= 100
    }
    log.with_name("busy.gold.json").write_text(json.dumps({"messages": labels}))
    every = {"relevance_threshold": 0.0, "max_total": 300}  # the context is the walk
    trigger = messages[-1]["id"]
    async with studio(log) as (http, url):
        _, cold = await post(http, url + "api/context", {"trigger": trigger, "settings": every})
        body = {"trigger": trigger, "settings": every, "warm": True}
        _, warm = await post(http, url + "api/context", body)
        _, cold_score = await post(http, url + "api/score", {"settings": every})
        _, warm_score = await post(http, url + "api/score", {"settings": every, "warm": True})
        status, refused = await post(http, url + "api/context", {**body, "warm": "yes"})
    assert (len(cold["context"]), cold["rest_calls"], cold["warm"]) == (199, 2, False)
    assert (len(warm["context"]), warm["rest_calls"], warm["warm"]) == (199, 0, True)
    # The gold is 199 and 150 messages back: each trigger reaches all of it, cold through a
    # second page, warm from the cache.
    assert cold_score["score"]["triggers"] == warm_score["score"]["triggers"] == 2
    assert cold_score["score"]["recall"] == warm_score["score"]["recall"] == 1.0
    assert cold_score["score"]["rest_calls_per_trigger"] > 0
    assert warm_score["score"]["rest_calls_per_trigger"] == 0
    assert (status, refused) == (400, {"error": "warm: true or false (got 'yes')"})
