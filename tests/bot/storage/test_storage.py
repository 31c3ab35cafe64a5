"""The interaction store against a real SQLite file: round trips, sharing, validity, privacy."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.cli.main import main as cli_main
from bot.storage import (
    MIGRATIONS,
    ArticleEntry,
    ContextEntry,
    InteractionRecord,
    Store,
    StoreError,
    WorkLogEntry,
    migrate,
    render_text,
    schema_version,
)
from bot.storage.models import REMOVED
from bot.storage.mutations import FORGOTTEN, repoint_theirs

NODE_INDEXES = next(
    i
    for i, step in enumerate(MIGRATIONS)
    if "CREATE INDEX context_node ON context (node_id)" in step
)
"""The migration that indexes rows by node: a store of before it is made at this version."""


NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SYSTEM = {"role": "system", "content": "You are Testbot. Be brief."}
BOT_ID = 999
NODE_INDEXES = next(
    i for i, m in enumerate(MIGRATIONS) if any("INDEX context_node" in s for s in m)
)
"""The number of migrations before the node indexes: a file of that version gains them."""


def user_msg(mid: int, author: int, text: str, name: str = "") -> dict:
    return {"role": "user", "content": f'<message author="{name or author}">{text}</message>'}


def make_record(
    trigger: int,
    messages: list[tuple[int, int, str]],
    *,
    channel: int = 10,
    answer: str = "An answer.",
    answer_ids: tuple[int, ...] = (),
    outcome: str = "success",
    started: datetime = NOW,
    author: int | None = None,
    names: dict[int, str] | None = None,
) -> InteractionRecord:
    """A record whose request is the system prompt plus ``(message_id, author_id, text)``."""
    names = names or {}
    request = [SYSTEM] + [user_msg(m, a, t, names.get(a, "")) for m, a, t in messages]
    context: list[ContextEntry | None] = [None] + [
        ContextEntry(message_id=m, author_id=a, name=names.get(a), reasons=[f"linear {i}"])
        for i, (m, a, _) in enumerate(messages)
    ]
    return InteractionRecord(
        guild_id=1,
        channel_id=channel,
        trigger_message_id=trigger,
        trigger_author_id=author if author is not None else messages[-1][1],
        started_at=started,
        ended_at=started + timedelta(seconds=2),
        model="llama3.1",
        parameters={"temperature": 0.7},
        request_messages=request,
        context=context,
        answer=answer,
        answer_message_ids=list(answer_ids),
        usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        latency_seconds=1.5,
        outcome=outcome,  # type: ignore[arg-type]
        error=None if outcome == "success" else "model timed out",
        work_log=[
            WorkLogEntry(action="history_page", detail="before 100", count=50),
            WorkLogEntry(action="reference", detail="followed 42"),
            WorkLogEntry(action="model_attempt", detail="HTTP 503", status="failure"),
            WorkLogEntry(action="model_attempt", detail="ok"),
        ],
        articles=[
            ArticleEntry(url="http://10.0.0.1/x", status="refused", reason="private address")
        ],
    )


class Backend:
    """One of the two databases the store runs on, and how to look at what it left on disk."""

    def __init__(self, name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.name = name
        self.path = tmp_path / "deep" / "dir" / "store.sqlite3"
        self.server = request.getfixturevalue("postgres_server") if name == "postgresql" else None
        self.url = self.server.fresh_url() if self.server else None

    def open(self) -> Store:
        return Store.open_url(self.url) if self.url else Store.open(self.path)

    def raw_bytes(self) -> bytes:
        """Everything the database wrote to disk (SQLite: the file and its WAL)."""
        if self.server is not None:
            _checkpoint(self.server.url)  # the rows reach the data files
            return self.server.data_bytes(self.url or "")
        wal = self.path.with_name(self.path.name + "-wal")
        return self.path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request.param, tmp_path, request)


@pytest.fixture
async def store(backend: Backend):
    opened = backend.open()
    yield opened
    opened.close()


async def test_round_trip_keeps_every_field(store: Store) -> None:
    rec = make_record(
        103, [(101, 1, "hello"), (102, 2, "héllo wörld ✓"), (103, 1, "bot?")], answer_ids=(200, 201)
    )
    assert await store.record(rec) == rec.id
    assert store.get_interaction(rec.id) == rec


async def test_nul_characters_are_stored_alike_on_both_databases(store: Store) -> None:
    # PostgreSQL text cannot hold NUL; a record carrying one must not be lost there.
    rec = make_record(103, [(101, 1, "a\x00b"), (103, 2, "c")], answer="an\x00swer")
    rec = rec.model_copy(
        update={
            "error": "HTTP 500: bad\x00byte",
            "work_log": [WorkLogEntry(action="model_attempt", detail="x\x00y")],
        }
    )
    rec = InteractionRecord.model_validate(rec.model_dump())
    assert await store.record(rec) == rec.id
    stored = store.get_interaction(rec.id)
    assert stored.answer == "an\ufffdswer"
    assert "a\ufffdb" in stored.request_messages[1]["content"]
    assert stored.error == "HTTP 500: bad\ufffdbyte"
    assert stored.work_log[0].detail == "x\ufffdy"


async def test_export_is_exactly_the_request_plus_answer(store: Store) -> None:
    rec = make_record(103, [(101, 1, "a"), (103, 2, "b")], answer="Réponse « exacte »")
    image = {
        "role": "user",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "http://i/x"}},
        ],
        "name": "alice",
    }
    rec2 = rec.model_copy(
        update={
            "id": "x2",
            "request_messages": [*rec.request_messages, image],
            "context": [*rec.context, None],
        }
    )
    failed = make_record(104, [(104, 3, "c")], outcome="failure")
    await store.record(rec)
    await store.record(failed)
    await store.record(rec2)
    lines = list(store.export())
    assert lines == [
        {"messages": [*rec.request_messages, {"role": "assistant", "content": rec.answer}]},
        {"messages": [*rec2.request_messages, {"role": "assistant", "content": rec.answer}]},
    ]
    # Key order is kept, too: the stored text is the message as given.
    assert list(lines[1]["messages"][-2]) == ["role", "content", "name"]


async def test_export_filters_by_date_and_channel(store: Store) -> None:
    await store.record(make_record(1, [(1, 1, "old")], started=NOW - timedelta(days=3)))
    await store.record(make_record(2, [(2, 1, "new")], channel=11))
    await store.record(make_record(3, [(3, 1, "new here")], channel=10))
    since = NOW - timedelta(days=1)
    got = [line["messages"][1]["content"] for line in store.export(since=since)]
    assert got == [user_msg(2, 1, "new")["content"], user_msg(3, 1, "new here")["content"]]
    got = [line["messages"][1]["content"] for line in store.export(channel_id=10)]
    assert got == [user_msg(1, 1, "old")["content"], user_msg(3, 1, "new here")["content"]]


async def test_nodes_are_shared_between_interactions(store: Store) -> None:
    history = [(i, i % 3, f"message {i}") for i in range(1, 12)]
    await store.record(make_record(10, history[:10]))
    await store.record(make_record(11, history[1:11]))
    counts = store.counts()
    assert counts["context"] == 22  # 11 + 11 rows (system prompt included)
    assert counts["nodes"] == 12  # system + 11 distinct messages
    assert counts["nodes"] < counts["context"]


async def test_edit_adds_version_and_leaves_old_interaction_alone(store: Store) -> None:
    rec = make_record(5, [(4, 1, "I like cats"), (5, 2, "really?")])
    await store.record(rec)
    before = list(store.export())
    version = await store.record_edit(4, 10, 1, "I like dogs", NOW + timedelta(minutes=1))
    assert version == 2
    versions = store.message_versions(4)
    assert [(v.version, v.state, v.superseded_by) for v in versions] == [
        (1, "superseded", 2),
        (2, "active", None),
    ]
    assert "I like cats" in (versions[0].content or "")
    assert versions[1].content == "I like dogs"
    assert versions[1].edited_at == NOW + timedelta(minutes=1)
    assert store.get_interaction(rec.id) == rec
    assert list(store.export()) == before
    # A later answer that sees the edit is a separate sample; the old one is not rewritten.
    later = make_record(
        6, [(4, 1, "I like dogs"), (6, 2, "and now?")], started=NOW + timedelta(minutes=2)
    )
    await store.record(later)
    exported = list(store.export())
    assert exported[0] == before[0]
    assert len(exported) == 2
    assert store.explain(5).context[1].state == "superseded"
    assert store.explain(6).context[1].state == "active"


async def test_delete_invalidates(store: Store) -> None:
    await store.record(make_record(5, [(4, 1, "soon gone"), (5, 2, "hm")]))
    assert await store.record_delete(4) is True
    assert [v.state for v in store.message_versions(4)] == ["invalidated"]
    assert await store.record_delete(777) is False
    assert [v.state for v in store.message_versions(777)] == ["invalidated"]
    explanation = store.explain(5)
    assert explanation.context[1].state == "invalidated"
    assert "(invalidated since)" in render_text(explanation)


async def test_a_deleted_message_leaves_every_record_and_the_export(store: Store) -> None:
    """Deleted means gone: the message's text leaves the records of the answers that read it,
    its edits, and the export; its id and invalidated state stay (how a request read back
    knows it is gone); the other messages of those requests are untouched."""
    secret = "the vault code is 7741"
    await store.record(make_record(5, [(4, 1, secret), (5, 2, "hm")]))
    await store.record_edit(4, 10, 1, f"{secret}, really", NOW)
    await store.record(make_record(7, [(4, 1, f"{secret}, really"), (6, 3, "ok"), (7, 2, "so?")]))
    await store.record(make_record(9, [(8, 2, "unrelated"), (9, 3, "fine")]))
    await store.record_delete(4)
    exported = json.dumps(list(store.export()))
    assert "7741" not in exported
    assert "hm" in exported and "so?" in exported and "unrelated" in exported
    assert [v.state for v in store.message_versions(4)][-1] == "invalidated"
    assert all(v.content in (None, REMOVED) for v in store.message_versions(4))
    assert [e.excerpt for e in store.explain(7).context][1] == REMOVED


async def test_the_bots_deleted_answer_leaves_its_record(store: Store) -> None:
    await store.record(make_record(5, [(5, 2, "code?")], answer="It is 7741.", answer_ids=(50,)))
    await store.record(make_record(9, [(8, 2, "unrelated"), (9, 3, "fine")], answer_ids=(90,)))
    await store.record_delete(50)  # a moderator takes the bot's answer down
    exported = json.dumps(list(store.export()))
    assert "7741" not in exported and "An answer." in exported


async def test_a_catchup_summary_that_drew_on_a_deleted_message_goes(store: Store) -> None:
    catchup = make_record(
        5, [(4, 1, "the deploy failed"), (5, 2, "retrying")], answer="- Deploy failed"
    )
    catchup = catchup.model_copy(update={"work_log": [WorkLogEntry(action="catchup")]})
    await store.record(catchup)
    await store.record_delete(4)
    (line,) = list(store.export())
    assert "Deploy failed" not in json.dumps(line) and "retrying" in json.dumps(line)


async def test_edits_of_a_message_the_store_never_held_are_not_kept(store: Store) -> None:
    assert await store.record_edit(50, 10, 1, "first seen as edit", NOW) == 0
    assert await store.record_edit(50, 10, 1, "again", NOW) == 0
    assert store.message_versions(50) == []
    assert store.counts()["message_versions"] == 0
    await store.record(make_record(51, [(50, 1, "then used in a context"), (51, 2, "hm")]))
    assert await store.record_edit(50, 10, 1, "edited once held", NOW) == 2
    assert [v.state for v in store.message_versions(50)] == ["superseded", "active"]


async def test_forget_user_leaves_no_trace_in_the_file(store: Store, backend: Backend) -> None:
    secret = "ZANZIBAR-PINEAPPLE-7741"
    alice, bob = 1, 2
    names = {alice: "AliceSecretName", bob: "Bob"}
    # Alice talks in Bob's interactions; one interaction is triggered by her.
    await store.record(
        make_record(
            3, [(1, alice, f"my code is {secret}"), (3, bob, "ok")], names=names, answer="noted"
        )
    )
    await store.record(
        make_record(
            5,
            [
                (1, alice, f"my code is {secret}"),
                (3, bob, "ok"),
                (5, alice, f"repeat {secret} " + "long paste " * 800),  # overflow pages
            ],
            names=names,
            answer=f"Your code is {secret}",
            answer_ids=(600,),
        )
    )
    await store.record_edit(1, 10, alice, f"edited {secret}", NOW)
    raw = backend.raw_bytes
    assert secret.encode() in raw()
    result = await store.forget_user(alice)
    assert result.interactions_emptied == 1
    for needle in (secret.encode(), b"AliceSecretName"):
        assert needle not in raw()
    # Bob's interaction survives, with Alice's message replaced; hers is an empty shell.
    bob_line = store.export()
    lines = list(bob_line)
    assert len(lines) == 1
    assert lines[0]["messages"][1]["content"] == REMOVED
    assert lines[0]["messages"][2] == user_msg(3, bob, "ok", "Bob")
    shell = store.explain(600)
    assert shell.removed and shell.context == [] and shell.work_log == []
    assert "removed at the user's request" in render_text(shell)
    assert all(v.content == REMOVED for v in store.message_versions(1))
    store.close()
    assert secret.encode() not in raw()
    if backend.server is None:
        with sqlite3.connect(backend.path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _checkpoint(url: str) -> None:
    """Write PostgreSQL's dirty pages out, so its data files show what the tables hold."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


async def test_prune_drops_old_interactions_and_orphan_nodes(store: Store) -> None:
    old = make_record(1, [(1, 1, "ancient only")], started=datetime.now(UTC) - timedelta(days=40))
    shared_old = make_record(
        2, [(2, 1, "shared"), (3, 1, "old end")], started=datetime.now(UTC) - timedelta(days=40)
    )
    new = make_record(4, [(2, 1, "shared"), (4, 1, "fresh")], started=datetime.now(UTC))
    for rec in (old, shared_old, new):
        await store.record(rec)
    result = await store.prune(30)
    assert result.interactions == 2
    assert result.nodes == 2  # "ancient only" and "old end"; "shared" and system stay
    assert store.find_interaction(1) is None
    assert store.get_interaction(new.id) == new
    assert store.counts()["nodes"] == 3
    with pytest.raises(ValueError):
        await store.prune(0)


def test_migrations_from_empty_file_and_idempotent_reopen(tmp_path: Path) -> None:
    path = tmp_path / "a" / "s.sqlite3"
    Store.open(path).close()
    with sqlite3.connect(path) as conn:
        assert schema_version(conn) == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"nodes", "interactions", "context", "message_versions"} <= tables
    Store.open(path).close()  # re-open: nothing to apply, nothing breaks
    with sqlite3.connect(path, isolation_level=None) as conn:
        assert migrate(conn) == 0
        # A later release appends a migration: only it runs, in order.
        extra = (*MIGRATIONS, ("CREATE TABLE later (x INTEGER)",))
        assert migrate(conn, extra) == 1
        assert schema_version(conn) == len(MIGRATIONS) + 1
    with pytest.raises(StoreError, match="newer"):
        Store.open(path)


async def test_a_first_version_file_migrates_and_keeps_model_limits(tmp_path: Path) -> None:
    from bot.storage.limits import ModelLimits

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path, isolation_level=None) as conn:
        migrate(conn, MIGRATIONS[:1])  # as the first release left it
    with Store.open(path) as store:
        assert store.model_limits() == {}
        await store.record(make_record(1, [(1, 1, "x")]))
        await store.save_model_limits(ModelLimits(model="m", ratio=0.7, samples=3, window=4096))
        await store.save_model_limits(ModelLimits(model="m", ratio=0.8, samples=4, window=4096))
    with Store.open(path) as store:
        assert store.model_limits() == {
            "m": ModelLimits(model="m", ratio=0.8, samples=4, window=4096)
        }
        assert store.counts()["interactions"] == 1


async def test_a_file_of_the_version_before_gains_the_node_indexes_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "before.sqlite3"
    records = [
        make_record(3, [(1, 1, "hello"), (3, 2, "hi")], answer_ids=(600,)),
        make_record(5, [(1, 1, "hello"), (5, 1, "again")], names={1: "Al"}),
    ]
    async with Store.open(path, migrations=MIGRATIONS[:NODE_INDEXES]) as store:
        for rec in records:
            await store.record(rec)
        await store.record_edit(1, 10, 1, "hello, edited", NOW)
        versions = store.message_versions(1)
        counts = store.counts()
    with sqlite3.connect(path) as conn:
        assert schema_version(conn) == NODE_INDEXES
        assert not {"context_node", "message_versions_node"} & _index_names(conn)
    with Store.open(path) as store:
        assert [store.get_interaction(rec.id) for rec in records] == records
        assert store.message_versions(1) == versions
        assert store.counts() == counts
    with sqlite3.connect(path) as conn:
        assert schema_version(conn) == len(MIGRATIONS)
        assert {"context_node", "message_versions_node"} <= _index_names(conn)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _index_names(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}


@pytest.mark.parametrize("table", ["context", "message_versions"])
def test_forget_user_finds_the_rows_of_each_node_by_an_index(tmp_path: Path, table: str) -> None:
    """It runs once per node of theirs: scanning the table each time made it quadratic."""
    Store.open(tmp_path / "s.sqlite3").close()
    with sqlite3.connect(tmp_path / "s.sqlite3") as conn:
        conn.execute(FORGOTTEN)
        plan = " | ".join(
            row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + repoint_theirs(table), (2, 1, 1))
        )
    assert f"SEARCH {table} USING INDEX {table}_node (node_id=?)" in plan, plan


def test_every_foreign_key_column_leads_an_index(tmp_path: Path) -> None:
    """Deleting a row (a node, an interaction) looks for the rows that name it: without such an
    index, once per deleted row over the whole table (retention took minutes, not a second)."""
    Store.open(tmp_path / "s.sqlite3").close()
    with sqlite3.connect(tmp_path / "s.sqlite3") as conn:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        unindexed = []
        for table in tables:
            leading = {
                conn.execute(f"PRAGMA index_info('{index}')").fetchone()[2]
                for _, index, *_ in conn.execute(f"PRAGMA index_list('{table}')")
            }
            unindexed += [
                f"{table}.{column}"
                for _, _, _, column, *_ in conn.execute(f"PRAGMA foreign_key_list('{table}')")
                if column not in leading
            ]
    assert unindexed == []


async def test_bad_record_is_refused_whole(store: Store) -> None:
    with pytest.raises(ValidationError, match="aligned"):
        InteractionRecord.model_validate(
            {**make_record(1, [(1, 1, "x")]).model_dump(), "context": []}
        )
    with pytest.raises(ValidationError):
        InteractionRecord.model_validate(
            {**make_record(1, [(1, 1, "x")]).model_dump(), "started_at": datetime(2026, 1, 1)}
        )
    with pytest.raises(ValidationError, match=r"request_messages\[1\] is not storable"):
        InteractionRecord.model_validate(
            {
                **make_record(1, [(1, 1, "x")]).model_dump(),
                "request_messages": [SYSTEM, {"role": "user", "content": object()}],
            }
        )
    detailed = InteractionRecord.model_validate(
        {
            **make_record(1, [(1, 1, "x")]).model_dump(),
            "usage": {"total_tokens": 5, "prompt_tokens_details": {"cached_tokens": 2}},
        }
    )
    assert detailed.usage == {"total_tokens": 5}
    rec = make_record(1, [(1, 1, "x")])
    await store.record(rec)
    await store.record(rec)  # tried again (the record line): one copy, not refused
    assert store.counts()["interactions"] == 1
    assert store.counts()["context"] == 2


async def test_concurrent_writers(store: Store) -> None:
    async def channel(channel_id: int) -> list[str]:
        ids = []
        for n in range(8):
            base = channel_id * 1000
            history = [(base + k, k % 4, f"c{channel_id} m{k}") for k in range(n, n + 20)]
            rec = make_record(base + n + 20, history, channel=channel_id)
            ids.append(await store.record(rec))
        return ids

    results = await asyncio.gather(*(channel(c) for c in range(1, 51)))
    counts = store.counts()
    assert counts["interactions"] == 400
    assert counts["context"] == 400 * 21
    assert len({i for ids in results for i in ids}) == 400
    assert counts["nodes"] == 1 + 50 * 27  # system + each channel's distinct messages


async def test_explain_by_trigger_and_by_answer_id(store: Store) -> None:
    rec = make_record(
        7,
        [(6, 1, "context line"), (7, 2, "question")],
        answer_ids=(700, 701),
        names={1: "Ann", 2: "Ben"},
    )
    await store.record(rec)
    by_trigger = store.explain(7)
    assert by_trigger == store.explain(701)
    assert by_trigger.interaction_id == rec.id
    assert [m.name for m in by_trigger.context] == [None, "Ann", "Ben"]
    assert by_trigger.context[1].reasons == ["linear 0"]
    assert by_trigger.articles[0].reason == "private address"
    assert by_trigger.work_log_summary == [
        "history_page: 1, 50 items",
        "reference: 1",
        "model_attempt: 2 (1 failed)",
    ]
    text = render_text(by_trigger)
    assert "Ann [6]" in text and "linear 0" in text and "private address" in text
    assert "120+30=150" in text
    with pytest.raises(StoreError, match="12345"):
        store.explain(12345)


async def test_explain_tells_a_grown_cap_with_its_evidence(store: Store) -> None:
    await store.record(make_record(7, [(6, 1, "context line"), (7, 2, "question")]))
    plain = store.explain(7)
    assert "Longer context" not in render_text(plain)
    cap = "cap 87: 14% of this channel's last 100 contexts asked for more than 50 messages"
    grown = plain.model_copy(
        update={"work_log": [*plain.work_log, WorkLogEntry(action="context_cap", detail=cap)]}
    )
    assert f"Longer context: {cap}" in render_text(grown)


async def test_render_text_fits_discord(store: Store) -> None:
    history = [(i, i % 5, "long words " * 30) for i in range(1, 31)]
    rec = make_record(30, history, answer_ids=(900,))
    await store.record(rec)
    explanation = store.explain(900)
    full = render_text(explanation)
    assert len(full) > 2000
    short = render_text(explanation, limit=2000)
    assert len(short) <= 2000
    assert short.startswith("Answer to message 30")
    assert "more lines not shown" in short
    assert len(render_text(explanation, limit=300)) <= 300


# ----------------------------------------------------------------------------- CLI


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "data/store.sqlite3"\n')
    return config


async def _seed(path: Path) -> InteractionRecord:
    async with Store.open(path) as store:
        rec = make_record(
            42, [(41, 1, "cli context"), (42, 2, "cli question ZEBRA-CLI")], answer_ids=(4200,)
        )
        await store.record(rec)
        await store.record(make_record(43, [(43, 3, "other channel")], channel=77))
    return rec


def test_cli_export_explain_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    rec = asyncio.run(_seed(tmp_path / "data" / "store.sqlite3"))
    out = tmp_path / "train.jsonl"
    assert cli_main(["export", "--config", str(config), "--channel", "10", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines == [
        {"messages": [*rec.request_messages, {"role": "assistant", "content": rec.answer}]}
    ]
    capsys.readouterr()
    assert cli_main(["export", "--config", str(config), "--since", "2026-05-02"]) == 0
    assert capsys.readouterr().out == ""
    assert cli_main(["export", "--config", str(config)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2

    assert cli_main(["explain", "--config", str(config), "4200"]) == 0
    assert "cli context" in capsys.readouterr().out
    assert cli_main(["explain", "--config", str(config), "31337"]) == 2
    assert "31337" in capsys.readouterr().err
    assert cli_main(["export", "--config", str(config), "--since", "May 1st"]) == 2
    assert "--since" in capsys.readouterr().err

    assert cli_main(["forget-user", "--config", str(config), "2"]) == 0
    printed = capsys.readouterr().out
    assert "1 interaction emptied" in printed and "1 interactions" not in printed
    assert b"ZEBRA-CLI" not in (tmp_path / "data" / "store.sqlite3").read_bytes()


def test_cli_clear_errors_for_missing_or_broken_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    assert cli_main(["explain", "--config", str(config), "1"]) == 2
    assert "no store there yet" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "store.sqlite3").write_bytes(b"this is not sqlite" * 100)
    assert cli_main(["export", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot open the database" in err
    assert len(err.strip().splitlines()) == 1


async def test_two_stores_on_one_file_do_not_lock_each_other(backend: Backend) -> None:
    """The bot and a CLI command (two writers, two connections) share the store safely."""
    first, second = backend.open(), backend.open()
    try:

        async def write(store: Store, channel: int) -> None:
            for n in range(15):
                await store.record(
                    make_record(channel * 100 + n, [(n, 1, "shared text")], channel=channel)
                )

        await asyncio.gather(
            *(write(first, c) for c in range(1, 6)),
            *(write(second, c) for c in range(6, 11)),
            second.record_edit(1, 1, 1, "edited meanwhile", NOW),
        )
        assert first.counts()["interactions"] == 150
        assert second.counts()["nodes"] == 2  # the system prompt and "shared text", once
    finally:
        first.close()
        second.close()


async def test_forget_from_another_process_does_not_break_the_running_store(backend: Backend):
    """``forget-user`` from the command line while the bot's store is open and caching ids."""
    with backend.open() as bot_store:
        await bot_store.record(make_record(3, [(1, 1, "alice speaks"), (3, 1, "again")]))
        with backend.open() as cli_store:
            await cli_store.forget_user(1)  # deletes nodes the bot's store has cached
        for trigger in (20, 21, 22):
            # The same text again: its node was deleted, the bot's cached id must not be used.
            await bot_store.record(
                make_record(trigger, [(4, 3, "alice speaks"), (trigger, 2, f"bob {trigger}")])
            )
        lines = list(bot_store.export())
    assert sum("bob 2" in json.dumps(line) for line in lines) == 3


async def test_forget_reaches_edits_recorded_without_an_author(store: Store, backend: Backend):
    await store.record(make_record(3, [(1, 1, "first words"), (3, 2, "ok")]))
    await store.record_edit(1, 10, None, "EDITED-WITHOUT-AUTHOR", NOW)
    await store.forget_user(1)
    contents = [v.content for v in store.message_versions(1)]
    assert "EDITED-WITHOUT-AUTHOR" not in json.dumps(contents)
    assert b"EDITED-WITHOUT-AUTHOR" not in backend.raw_bytes()


async def test_forget_reaches_the_bots_answers_to_them_in_later_contexts(
    store: Store, backend: Backend
):
    # The secret is long enough not to turn up by chance in binary pages (ids, timestamps).
    alice, bob = 1, 2
    # Alice asks (trigger 3); the bot's answer (message 600) quotes her.
    await store.record(
        make_record(
            3,
            [(3, alice, "my pin is PIN-4242-QX")],
            answer="Your pin is PIN-4242-QX",
            answer_ids=(600,),
        )
    )
    # Later Bob's interaction has that answer in its context, as the assistant's turn.
    later = make_record(9, [(9, bob, "what did the bot say?")])
    turn = {"role": "assistant", "content": "Your pin is PIN-4242-QX"}
    entry = ContextEntry(message_id=600, author_id=BOT_ID, reasons=["linear"])
    later = later.model_copy(
        update={
            "request_messages": [SYSTEM, turn, *later.request_messages[1:]],
            "context": [None, entry, *later.context[1:]],
        }
    )
    await store.record(later)
    await store.forget_user(alice)
    assert "PIN-4242-QX" not in json.dumps(list(store.export()))
    assert b"PIN-4242-QX" not in backend.raw_bytes()
    assert any("what did the bot say?" in json.dumps(line) for line in store.export())


async def test_forget_reaches_links_they_posted_in_other_interactions(
    store: Store, backend: Backend
):
    alice, bob = 1, 2
    link = "https://docs.example/private-share?token=ALICE-TOKEN-77"
    record = make_record(5, [(4, alice, f"see {link}"), (5, bob, "thanks")])
    record = record.model_copy(
        update={
            "articles": [ArticleEntry(url=link, status="ok")],
            "work_log": [WorkLogEntry(action="article", detail=f"{link}: extracted")],
        }
    )
    await store.record(record)
    await store.forget_user(alice)
    assert b"ALICE-TOKEN-77" not in backend.raw_bytes()
    explanation = store.explain(5)
    assert [a.url for a in explanation.articles] == [REMOVED]


def test_forget_user_says_when_nothing_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second run, or an id the store never saw, reports no redactions and no rewrite."""
    config = _config(tmp_path)
    asyncio.run(_seed(tmp_path / "data" / "store.sqlite3"))
    assert cli_main(["forget-user", "--config", str(config), "2"]) == 0
    first = capsys.readouterr().out
    assert "redacted" in first and "rewritten" in first
    for user in ("2", "777777"):
        assert cli_main(["forget-user", "--config", str(config), user]) == 0
        again = capsys.readouterr().out
        assert again.startswith(f"user {user}: nothing of theirs left in ")
        assert "redacted" not in again and "rewritten" not in again


async def test_closing_with_records_still_queued_finishes_them(tmp_path: Path) -> None:
    """The close signal can be picked up while records are grouped: it must still close."""
    store = Store.open(tmp_path / "queued.sqlite3")
    pending = [
        asyncio.ensure_future(store.record(make_record(n, [(n, 1, f"queued {n}")])))
        for n in range(1, 201)
    ]
    await asyncio.sleep(0)  # every record is in the writer's queue now
    await asyncio.wait_for(asyncio.to_thread(store.close), 20)
    assert len(await asyncio.gather(*pending)) == 200
    with Store.open(tmp_path / "queued.sqlite3") as reopened:
        assert reopened.counts()["interactions"] == 200


async def test_recent_interactions_page_newest_first(store: Store) -> None:
    """The studio's store tab pages through this listing on either backend."""
    for trigger in (1, 2, 3):
        await store.record(
            make_record(trigger, [(trigger, 1, f"q{trigger}")], answer=f"a{trigger}")
        )
    first = store.recent_interactions(limit=2)
    assert [row.answer_excerpt for row in first] == ["a3", "a2"]
    rest = store.recent_interactions(limit=2, before_seq=first[-1].seq)
    assert [row.answer_excerpt for row in rest] == ["a1"]


def test_store_urls_in_messages_hide_every_password() -> None:
    from bot.storage.postgres import redact_url

    for url in (
        "postgresql://bot:hunter2@db:5432/threadwise",
        "postgresql://bot@db/threadwise?password=hunter2",
        "postgresql:///threadwise?host=/run&sslpassword=hunter2",
    ):
        shown = redact_url(url)
        assert "hunter2" not in shown and "threadwise" in shown


async def test_discord_explanations_leave_out_the_text_of_linked_messages(store: Store) -> None:
    """A link may bring in a message from a channel the person asking cannot read."""
    from bot.storage import render_text, without_linked_text

    rec = make_record(3, [(1, 1, "SECRET-MODS-TEXT"), (2, 2, "public words"), (3, 2, "see link")])
    linked = rec.context[1].model_copy(update={"reasons": ["link via 3"]})
    rec = rec.model_copy(update={"context": [rec.context[0], linked, *rec.context[2:]]})
    await store.record(rec)
    explanation = store.explain(3)
    assert "SECRET-MODS-TEXT" in render_text(explanation)  # the operator's explain shows it
    shown = render_text(without_linked_text(explanation), limit=2000)
    assert "SECRET-MODS-TEXT" not in shown
    assert "public words" in shown and "link via 3" in shown


CHLOE, BEN, DEV = 1300000000000000103, 1300000000000000104, 1300000000000000105
NAME_FIELD = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _turn(mid: int, author: int, name: str, text: str) -> tuple[dict, ContextEntry]:
    """A channel message as the bot sends and stores it: the speaker in the text and in an
    OpenAI-safe ``name``, as the materializer renders it."""
    message = {"role": "user", "content": f"{text}", "name": name}
    shown = text.split(":")[0].split(" (")[0]
    return message, ContextEntry(message_id=mid, author_id=author, name=shown)


async def _chloe_conversation(store: Store) -> None:
    """Chloé speaks; Dev replies to her (the reply target's name in his header, but not
    recorded by id); Ben asks the bot about her by name; the bot answers with "chloe"."""
    chloe = _turn(1, CHLOE, "Chloe", "Chloé: Ben, I think the hard link mode is fine")
    dev = _turn(2, DEV, "Dev", "Dev (replying to Chloé): agreed, Chloé tested it")
    ben = _turn(
        3, BEN, "Ben", "Ben: @Testbot Chloé says hard links are fine, do you agree with chloe?"
    )
    pairs = [chloe, dev, ben]
    record = make_record(3, [], author=BEN).model_copy(
        update={
            "request_messages": [SYSTEM, *(m for m, _ in pairs)],
            "context": [None, *(e for _, e in pairs)],
            "answer": "Yes, chloe is right: hard links are fine here.",
            "answer_message_ids": [600],
        }
    )
    await store.record(record)
    # Later, Dev's message is edited, still naming her; the bot's answer is context again.
    await store.record_edit(2, 10, DEV, "agreed, CHLOÉ tested it twice", NOW)
    later = make_record(9, [(9, DEV, "thanks all")])
    answer = "Yes, chloe is right: hard links are fine here."
    await store.record(after_answer(later, answer, 600))


def after_answer(record: InteractionRecord, answer: str, message_id: int) -> InteractionRecord:
    """``record`` with the bot's earlier answer (message ``message_id``) first in its context."""
    turn = {"role": "assistant", "content": answer}
    return record.model_copy(
        update={
            "request_messages": [SYSTEM, turn, *record.request_messages[1:]],
            "context": [
                None,
                ContextEntry(message_id=message_id, author_id=BOT_ID),
                *record.context[1:],
            ],
        }
    )


async def test_forget_takes_their_name_out_of_every_message_answer_and_edit(
    store: Store, backend: Backend
) -> None:
    await _chloe_conversation(store)
    untouched = make_record(20, [(20, BEN, "unrelated words")], channel=77, answer="fine")
    await store.record(untouched)
    before = list(store.export_lines(channel_id=77))
    assert b"Chlo" in backend.raw_bytes()
    await store.forget_user(CHLOE)
    exported = "\n".join(store.export_lines())
    assert not re.search("chlo", exported, re.IGNORECASE), exported
    assert "hard links are fine" in exported  # Ben's question stays, without her name
    versions = json.dumps([v.model_dump(mode="json") for v in store.message_versions(2)])
    assert not re.search("chlo", versions, re.IGNORECASE), versions
    assert not re.search(rb"chlo", backend.raw_bytes(), re.IGNORECASE)
    assert list(store.export_lines(channel_id=77)) == before  # byte for byte


async def test_forget_leaves_their_name_as_a_common_word_in_others_conversations(
    store: Store,
) -> None:
    # Someone called Will: "will" in conversations they were never in is just a word.
    theirs = make_record(31, [(30, 7, "Hi, Will here"), (31, BEN, "hi Will")], names={7: "Will"})
    await store.record(theirs)
    elsewhere = make_record(41, [(41, BEN, "I will try that, it will work")], channel=78)
    await store.record(elsewhere)
    before = list(store.export_lines(channel_id=78))
    await store.forget_user(7)
    assert list(store.export_lines(channel_id=78)) == before
    assert "Will" not in "\n".join(store.export_lines(channel_id=10))


async def test_forgotten_turns_export_as_valid_openai_messages(store: Store) -> None:
    await _chloe_conversation(store)
    await store.forget_user(CHLOE)
    for line in store.export():
        for message in line["messages"]:
            assert "name" not in message or NAME_FIELD.match(message["name"]), message
    first = next(iter(store.export()))
    assert first["messages"][1] == {"role": "user", "content": REMOVED}


async def test_a_store_forgotten_before_names_were_left_out_still_exports_valid_names(
    backend: Backend,
) -> None:
    """Older versions wrote the placeholder into the ``name`` field; the export leaves it out."""
    with backend.open() as store:
        legacy = {"role": "user", "content": REMOVED, "name": REMOVED}
        record = make_record(3, [(3, BEN, "hi")])
        await store.record(
            record.model_copy(
                update={
                    "request_messages": [SYSTEM, legacy, *record.request_messages[1:]],
                    "context": [
                        None,
                        ContextEntry(message_id=1, author_id=CHLOE),
                        *record.context[1:],
                    ],
                }
            )
        )
        (line,) = store.export()
    assert line["messages"][1] == {"role": "user", "content": REMOVED}


async def test_a_short_name_goes_where_it_names_them_but_not_from_common_words(store: Store):
    """ "Al" is removed from a reply header that names him by id and from the bot's words,
    but a member's "al dente" keeps its word: ignoring case, two letters are everywhere."""
    al, eve = 41, 42
    reply = {"role": "user", "content": "Eve (replying to Al): pasta al dente?", "name": "Eve"}
    entry = ContextEntry(message_id=2, author_id=eve, name="Eve", named={al: "Al"})
    record = make_record(2, [(1, al, "hi")], names={al: "Al"}, author=eve).model_copy(
        update={
            "request_messages": [SYSTEM, user_msg(1, al, "hi", "Al"), reply],
            "context": [None, ContextEntry(message_id=1, author_id=al, name="Al"), entry],
            "answer": "Al means al dente, Eve.",
        }
    )
    await store.record(record)
    await store.forget_user(al)
    (line,) = store.export()
    assert line["messages"][2]["content"] == f"Eve (replying to {REMOVED}): pasta al dente?"
    assert line["messages"][-1]["content"] == f"{REMOVED} means al dente, Eve."


async def test_forget_user_takes_their_name_out_of_a_follow_up_explanation(store: Store) -> None:
    alice, bob = 1, 2
    names = {alice: "Alicia", bob: "Bob"}
    # Bob joined the bot's conversation with Alicia without a mention; the bot followed him.
    record = make_record(5, [(1, alice, "how do I upgrade?"), (5, bob, "and the indexes?")],
                         names=names)  # fmt: skip
    followed = "followed: no mention, continues the conversation with Alicia, score 0.81"
    work_log = [WorkLogEntry(action="followed", detail=followed), *record.work_log]
    await store.record(record.model_copy(update={"work_log": work_log}))
    assert followed in render_text(store.explain(5))
    await store.forget_user(alice)
    shown = render_text(store.explain(5))
    assert "Alicia" not in shown
    assert f"followed: no mention, continues the conversation with {REMOVED}, score 0.81" in shown


async def test_forget_reaches_a_follow_up_that_holds_the_answer_to_their_conversation(
    store: Store,
) -> None:
    """A follow-up question carries the conversation on through the bot's answer, though the
    selection left their message out of its context: their name goes from it in any case."""
    theirs = make_record(
        31, [(30, 7, "Hi, Will here"), (31, BEN, "what did WILL mean?")], names={7: "Will"},
        answer="He meant the cache.", answer_ids=(32,),
    )  # fmt: skip
    await store.record(theirs)
    follow_up = make_record(33, [(31, BEN, "what did WILL mean?"), (33, DEV, "and will's idea?")])
    await store.record(after_answer(follow_up, "He meant the cache.", 32))
    await store.forget_user(7)
    assert not re.search("will", "\n".join(store.export_lines()), re.IGNORECASE)


async def test_forget_leaves_the_word_in_a_context_that_only_shares_another_message(
    store: Store,
) -> None:
    """Another request that holds a message of their conversation as a recent message, but not
    the bot's answer in it, is elsewhere: "will" there is a word."""
    theirs = make_record(
        31, [(30, 7, "Hi, Will here"), (31, BEN, "hi Will")], names={7: "Will"},
        answer="Hello both.", answer_ids=(32,),
    )  # fmt: skip
    await store.record(theirs)
    talk = [(31, BEN, "hi Will"), (50, 55, "I will try that, it will work"), (51, DEV, "will?")]
    other = make_record(51, talk, answer="It will work.")
    await store.record(other)
    await store.forget_user(7)
    exported = "\n".join(store.export_lines())
    assert "I will try that, it will work" in exported and "It will work." in exported


async def test_a_trigger_is_known_answered_and_its_request_found_by_its_messages(
    store: Store,
) -> None:
    """What answering once and a follow-up after a restart read: whether a message triggered an
    interaction, and the latest successful one in a channel a message belongs to (its trigger
    or an answer message)."""
    await store.record(make_record(3, [(1, 1, "hello"), (3, 2, "hi")], answer_ids=(600,)))
    await store.record(make_record(7, [(5, 1, "later"), (7, 2, "again")], answer_ids=(700,)))
    await store.record(make_record(9, [(9, 2, "failed")], outcome="failure"))
    assert store.answered(3) and store.answered(9) and not store.answered(600)
    assert await store.answered_async(7)
    assert store.latest_answered(10, [600]).trigger_message_id == 3  # an answer message
    assert store.latest_answered(10, [3, 700]).trigger_message_id == 7  # the latest of them
    assert store.latest_answered(10, [9]) is None  # a failed answer is no turn to go on from
    assert store.latest_answered(11, [3]) is None  # another channel
    assert store.latest_answered(10, []) is None


async def test_forget_user_leaves_who_and_when_and_a_deleted_seal_unseals(tmp_path: Path) -> None:
    """What running bot processes read (issue 53): the people forgotten, polled from the
    latest one seen; the channel's latest standing /fresh seal."""
    async with Store.open(tmp_path / "s.sqlite3") as store:
        await store.record(make_record(3, [(1, 1, "hello"), (3, 2, "hi")]))
        assert store.forgotten_since() == []
        await store.forget_user(2)
        rows = store.forgotten_since()
        assert [user for user, _ in rows] == [2]
        assert store.forgotten_since(rows[0][1]) == rows  # a poll from the latest seen
        assert store.latest_seal(10) is None
        await store.record_seal(10, 500)
        await store.record_seal(10, 600)
        assert store.latest_seal(10) == 600 and store.latest_seal(11) is None
        await store.record_delete(600)  # a moderator deletes the latest seal
        assert store.latest_seal(10) == 500
        await store.record_delete(500)
        assert store.latest_seal(10) is None
