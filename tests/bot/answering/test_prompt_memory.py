"""What an answer sent, read back from the store (after a restart, or by another shard), on
SQLite and PostgreSQL: where its conversation was last cut comes back with it, and a record
stored before the work log said so reads back as never cut."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.answering.prompt_memory import StoredPromptMemory, cut_floor_entry
from bot.storage import MIGRATIONS, ContextEntry, InteractionRecord, Store, WorkLogEntry
from bot.storage.models import REMOVED
from conversation.memory import OTHERS_REASON, SUMMARY_REASON, summary_of
from conversation.memory.summary import Summary, summary_node
from conversation.prompt import OTHERS_LABEL
from tests.bot.storage.test_summaries_stored import ELI, store  # noqa: F401

CHLOE = 1300000000000000103
CHANNEL = 7


def answered(trigger: int, work_log: list[WorkLogEntry]) -> InteractionRecord:
    """An answer to ``trigger`` (a request of the system prompt and the trigger)."""
    now = datetime.now(UTC)
    return InteractionRecord(
        channel_id=CHANNEL, trigger_message_id=trigger, trigger_author_id=CHLOE,
        started_at=now, ended_at=now, model="m",
        request_messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": f"Chloé: question {trigger}?"},
        ],
        context=[
            None,
            ContextEntry(message_id=trigger, author_id=CHLOE, name="Chloé", reasons=["trigger"]),
        ],
        answer="Done.", answer_message_ids=[trigger + 1], outcome="success", work_log=work_log,
    )  # fmt: skip


async def test_where_a_conversation_was_cut_is_read_back_with_its_request(
    store: Store,  # noqa: F811
) -> None:
    async with store:
        continued = WorkLogEntry(action="prompt_continued", detail="starts with the request ...")
        await store.record(answered(1001, [continued, cut_floor_entry(990)]))
        await store.record(answered(1003, [continued]))  # never cut, or recorded before
        memory = StoredPromptMemory(store)
        cut = await memory.recall(CHANNEL, [1002])  # replies to the answer
        uncut = await memory.recall(CHANNEL, [1003])
    assert cut is not None and cut.trigger_id == 1001 and cut.cut_at == 990
    assert uncut is not None and uncut.trigger_id == 1003 and uncut.cut_at is None


async def test_where_it_was_cut_survives_forgetting_someone_named_like_a_word_of_the_line(
    store: Store,  # noqa: F811
) -> None:
    """forget-user rewrites a forgotten name wherever it stands as a word in the
    conversations they took part in, the work log's lines included: a person called "message"
    or "cut" must not take the cut's message id with the words around it."""
    asked = answered(1001, [cut_floor_entry(990)])
    for name in ("message", "cut"):
        other = len(name)  # a person of their own for each name
        said = ContextEntry(
            message_id=995 + other, author_id=other, name=name, reasons=["temporal"]
        )
        asked = asked.model_copy(
            update={
                "request_messages": [
                    asked.request_messages[0],
                    {"role": "user", "content": f"{name}: {name} here"},
                    *asked.request_messages[1:],
                ],
                "context": [asked.context[0], said, *asked.context[1:]],
            }
        )
    async with store:
        await store.record(asked)
        for other in (len("message"), len("cut")):
            await store.forget_user(other)
        record = store.latest_answered(CHANNEL, [1001])
        cut = await StoredPromptMemory(store).recall(CHANNEL, [1002])
    assert record is not None
    [line] = [e.detail for e in record.work_log if e.action == "cut_floor"]
    assert "removed" in line  # the names went, as forget-user says
    assert cut is not None and cut.cut_at == 990


async def test_a_request_read_back_honours_the_deletions_the_store_recorded(
    store: Store,  # noqa: F811
) -> None:
    """Deleted while no process that remembers the request saw it go (before a restart, or
    on another shard): the store's own record of the deletion marks it gone."""
    async with store:
        await store.record(answered(1001, []))
        await store.record_delete(1002)  # the answer, taken down by a moderator
        await store.record_delete(4242)  # a message the request does not hold
        read = await StoredPromptMemory(store).recall(CHANNEL, [1001])
    assert read is not None and read.gone == frozenset({1002})


def continued_after_a_cut(trigger: int, covers: list[int]) -> InteractionRecord:
    """An answer whose request starts with a summary standing for ``covers``, then other talk
    after the label, cut at 990 (as columns only: its work log says nothing of it)."""
    summary = Summary(text="They planned the upgrade.", messages=len(covers), covers=tuple(covers))
    base = answered(trigger, [])
    system, asked = base.request_messages
    other = {"role": "user", "content": "Eli: lunch?", "name": "Eli"}
    return base.model_copy(
        update={
            "request_messages": [
                system,
                {"role": "user", "content": summary_node(summary).content},
                {"role": "user", "content": OTHERS_LABEL},
                other,
                asked,
            ],
            "context": [
                None,
                ContextEntry(reasons=[SUMMARY_REASON], covers=covers),
                ContextEntry(reasons=[OTHERS_REASON]),
                ContextEntry(message_id=1000, author_id=ELI, name="Eli", reasons=["temporal"]),
                base.context[1],
            ],
            "continues": 980,
            "cut_at": 990,
        }
    )


async def test_what_the_memory_added_is_read_back_from_its_columns(
    store: Store,  # noqa: F811
) -> None:
    async with store:
        await store.record(continued_after_a_cut(1001, [900, 901]))
        read = await StoredPromptMemory(store).recall(CHANNEL, [1002])
        record = store.latest_answered(CHANNEL, [1001])
    assert read is not None and read.cut_at == 990 and read.others == (1000,)
    assert record is not None and record.continues == 980
    (summary,) = [s for s in map(summary_of, read.nodes) if s is not None]
    assert summary.covers == (900, 901)


async def test_deleting_a_summarized_message_replaces_the_summary_in_the_store(
    store: Store,  # noqa: F811
) -> None:
    async with store:
        await store.record(continued_after_a_cut(1001, [900, 901]))
        await store.record(continued_after_a_cut(1003, [950]))
        await store.record_delete(901)
        exported = json.dumps(list(store.export()))
        read = await StoredPromptMemory(store).recall(CHANNEL, [1003])
    assert exported.count("They planned the upgrade.") == 1  # the other summary stays
    assert REMOVED in exported
    assert read is not None and summary_of(read.nodes[1]) is not None


async def test_a_row_stored_before_the_memory_had_columns_still_reads(tmp_path) -> None:
    """Written by the version before: where it was cut comes from its work log's line."""
    path = tmp_path / "before.sqlite3"
    async with Store.open(path, migrations=MIGRATIONS[:-1]) as older:
        await older.record(answered(1001, [cut_floor_entry(990)]))
    async with Store.open(path) as upgraded:
        read = await StoredPromptMemory(upgraded).recall(CHANNEL, [1002])
    assert read is not None and read.cut_at == 990
