"""Tool turns in the store (real SQLite): a result never without its call, whatever is
removed; the export puts the tools beside the messages and leaves tool-less lines as they were."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.storage import ContextEntry, InteractionRecord, Store

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOOLS = [{"type": "function", "function": {"name": "search", "description": "Search.",
                                           "parameters": {"type": "object"}}}]  # fmt: skip
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "search", "arguments": '{"q": "alice deploy"}'}}
    ],
}  # fmt: skip
RESULT = {
    "role": "tool",
    "tool_call_id": "c1",
    "content": '<tool_result tool="search">alice said 16:00</tool_result>',
}


def record(messages: list[dict], *, tools: bool = True, trigger: int = 100) -> InteractionRecord:
    context = [
        None,
        ContextEntry(message_id=50, author_id=8, name="alice", reasons=["linear"]),
        ContextEntry(message_id=trigger, author_id=7, name="bob", reasons=["trigger"]),
    ]
    context += [ContextEntry(reasons=["tool"]) for _ in messages[3:]]
    return InteractionRecord(
        channel_id=10, trigger_message_id=trigger, trigger_author_id=7, started_at=NOW,
        ended_at=NOW + timedelta(seconds=1), model="m",
        parameters={"temperature": 0.5} | ({"tools": TOOLS} if tools else {}),
        request_messages=messages, context=context, answer="Found it.", outcome="success",
    )  # fmt: skip


PROMPT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "alice: the deploy is at 16:00", "name": "alice"},
    {"role": "user", "content": "bob: when is the deploy?", "name": "bob"},
]


def test_a_result_without_its_call_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"request_messages\[3\] is a tool result without"):
        record([*PROMPT, RESULT])
    with pytest.raises(ValidationError, match="without its call"):
        record([*PROMPT, RESULT, CALL])  # the call must come first


async def test_export_adds_the_tools_and_forget_user_keeps_pairs(tmp_path: Path) -> None:
    with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record(record([*PROMPT, CALL, RESULT]))
        await store.record(record(PROMPT, tools=False, trigger=101))
        with_tools, without = list(store.export_lines())
        assert without == (
            '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":'
            '"alice: the deploy is at 16:00","name":"alice"},{"role":"user","content":'
            '"bob: when is the deploy?","name":"bob"},{"role":"assistant","content":'
            '"Found it."}]}'
        )
        assert with_tools.endswith(
            ',{"role":"assistant","content":"Found it."}],"tools":'
            + json.dumps(TOOLS, separators=(",", ":"))
            + "}"
        )
        line = json.loads(with_tools)
        assert line["messages"][3:5] == [CALL, RESULT]
        await store.forget_user(8)  # alice: named in the call's arguments and in the result
        after = json.loads(next(iter(store.export_lines())))
    kept = [
        (m["role"], m.get("tool_call_id"), len(m.get("tool_calls") or ()))
        for m in after["messages"]
    ]
    assert kept[3:5] == [("assistant", None, 1), ("tool", "c1", 0)]  # the pair stays a pair
    assert after["messages"][4]["tool_call_id"] == after["messages"][3]["tool_calls"][0]["id"]
    assert "alice" not in json.dumps(after["messages"][3:5])  # also the call's arguments
    assert json.loads(after["messages"][3]["tool_calls"][0]["function"]["arguments"])


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("Chloé", '{"q": "Chlo\\u00e9 deploy"}'),  # the name JSON-escaped
        ("zed\\", json.dumps({"q": "ask zed\\ about the deploy"})),  # ends in a backslash
    ],
)
async def test_forget_user_reads_the_arguments_as_json(
    tmp_path: Path, name: str, arguments: str
) -> None:
    call = {**CALL, "tool_calls": [{**CALL["tool_calls"][0], "function": {
        "name": "search", "arguments": arguments}}]}  # fmt: skip
    prompt = [PROMPT[0], {**PROMPT[1], "name": "x", "content": f"{name}: hi"}, PROMPT[2]]
    entry = ContextEntry(message_id=50, author_id=8, name=name, reasons=["linear"])
    with Store.open(tmp_path / "store.sqlite3") as store:
        rec = record([*prompt, call, RESULT])
        await store.record(rec.model_copy(update={"context": [None, entry, *rec.context[2:]]}))
        await store.forget_user(8)
        after = json.loads(next(iter(store.export_lines())))
    decoded = json.loads(after["messages"][3]["tool_calls"][0]["function"]["arguments"])
    assert name not in decoded["q"] and "deploy" in decoded["q"]


async def test_forget_user_leaves_calls_without_the_name_byte_exact(tmp_path: Path) -> None:
    arguments = '{"q":  "bob deploy",\n "n": 1.50}'  # spacing and number kept as written
    call = {**CALL, "tool_calls": [{**CALL["tool_calls"][0], "function": {
        "name": "search", "arguments": arguments}}]}  # fmt: skip
    with Store.open(tmp_path / "store.sqlite3") as store:
        await store.record(record([*PROMPT, call, RESULT]))
        await store.forget_user(8)
        after = json.loads(next(iter(store.export_lines())))
    assert after["messages"][3]["tool_calls"][0]["function"]["arguments"] == arguments
