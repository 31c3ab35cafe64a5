"""A summary in a stored request (``conversation.memory.summary``), on SQLite and PostgreSQL:
``forget-user`` replaces every one that drew on the person's messages and leaves the others;
``explain`` says what it stands for; retention drops it with its interaction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.storage import ContextEntry, InteractionRecord, Store
from bot.storage.explain import render_text
from bot.storage.models import REMOVED
from conversation.memory.summary import Summary, summary_node

ELI, DEV, CHLOE = 1300000000000000105, 1300000000000000104, 1300000000000000103


def summarized(trigger: int, authors: dict[int, str], started: datetime) -> InteractionRecord:
    """An answer whose request carries a summary of earlier messages by ``authors``."""
    summary = Summary(
        text=f"{' and '.join(authors.values())} planned the upgrade (request {trigger}).",
        messages=12,
        first=datetime(2026, 11, 27, 13, 2, tzinfo=UTC),
        last=datetime(2026, 11, 27, 14, 40, tzinfo=UTC),
        authors=authors,
    )
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": summary_node(summary).content},
        {"role": "user", "content": "Chloé: and now?", "name": "Chloe"},
    ]
    context = [
        None,
        ContextEntry(reasons=["summary"], tokens=40, named=authors),
        ContextEntry(message_id=trigger, author_id=CHLOE, name="Chloé", reasons=["trigger"]),
    ]
    return InteractionRecord(
        channel_id=7, trigger_message_id=trigger, trigger_author_id=CHLOE,
        started_at=started, ended_at=started, model="m", request_messages=messages,
        context=context, answer="Done.", outcome="success",
    )  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "postgresql":
        return Store.open_url(request.getfixturevalue("postgres_url"))
    return Store.open(tmp_path / "store.sqlite3")


async def test_forget_user_replaces_the_summaries_that_drew_on_them(store: Store) -> None:
    now = datetime.now(UTC)
    async with store:
        await store.record(summarized(1001, {ELI: "Eli", DEV: "Dev"}, now))
        await store.record(summarized(1002, {DEV: "Dev"}, now))
        explained = await store.explain_async(1001)
        await store.forget_user(ELI)
        exported = [line["messages"][1]["content"] for line in store.export()]
        after = await store.explain_async(1001)
    (shown,) = [m.excerpt for m in explained.context if m.reasons == ["summary"]]
    assert shown.startswith("summary of 12 messages, 2026-11-27 13:02 to 14:40 UTC: Eli and Dev")
    assert f" 1. summary (~40 tokens): {shown}" in render_text(explained).splitlines()
    assert exported[0] == REMOVED  # Eli's: gone whole
    assert exported[1].startswith("(Summary of 12 earlier") and "Dev planned" in exported[1]
    assert [m.excerpt for m in after.context if m.reasons == ["summary"]] == [REMOVED]
    assert "Eli" not in json.dumps(list(store.export()))


async def test_retention_drops_a_summary_with_its_interaction(store: Store) -> None:
    async with store:
        old = datetime.now(UTC) - timedelta(days=40)
        await store.record(summarized(1001, {DEV: "Dev"}, old))
        await store.record(summarized(1002, {ELI: "Eli"}, datetime.now(UTC)))
        await store.prune(30)
        exported = json.dumps(list(store.export()))
    assert "request 1001" not in exported and "request 1002" in exported


async def test_a_record_written_after_a_forget_holds_nothing_of_the_person(store: Store) -> None:
    """An answer begun before forget-user ran and recorded after it (the record line writes
    after the answer, later still when the store stalls) is taken back like the records
    before; one begun after the forget keeps what the person said since."""
    async with store:
        began = datetime.now(UTC) - timedelta(seconds=5)
        await store.forget_user(ELI)
        await store.record(summarized(1001, {ELI: "Eli", DEV: "Dev"}, began))
        await store.record(summarized(1002, {ELI: "Eli"}, datetime.now(UTC) + timedelta(seconds=1)))
        exported = [line["messages"][1]["content"] for line in store.export()]
    assert exported[0] == REMOVED
    assert "Eli planned" in exported[1]  # said after the forget: new, read like anyone's


async def test_a_summary_recorded_after_a_message_it_stands_for_was_deleted_is_replaced(
    store: Store,
) -> None:
    record = summarized(1001, {DEV: "Dev"}, datetime.now(UTC))
    summary_entry = record.context[1].model_copy(update={"covers": [555, 556]})
    record = record.model_copy(update={"context": [None, summary_entry, record.context[2]]})
    async with store:
        await store.record_delete(556)  # deleted while the record waited in line
        await store.record(record)
        await store.record(summarized(1002, {DEV: "Dev"}, datetime.now(UTC)))
        exported = [line["messages"][1]["content"] for line in store.export()]
    assert exported[0] == REMOVED
    assert "Dev planned the upgrade (request 1002)" in exported[1]  # covers nothing deleted
