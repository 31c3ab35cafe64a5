"""Slim cached messages give the model exactly the context the full nextcord messages give."""

from __future__ import annotations

from pathlib import Path

import pytest

from conversation.prompt.materialize import MaterializeOptions, Materializer
from conversation.replay.dce import load_export, parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.result import ContextSelection, Reason
from conversation.sources.slim import CachedMessage, Slimmer
from tests.conversation.prompt.test_materialize import (
    ALICE,
    BOB,
    CHANNEL,
    ROLE,
    export,
    message,
    user,
)

ROOT = Path(__file__).resolve().parents[3]
LOGS = [ROOT / "examples" / "support-channel.json", *sorted((ROOT / "tests" / "logs").glob("*"))]


def selection(messages: list) -> ContextSelection:
    *context, trigger = messages
    return ContextSelection(
        trigger=trigger,
        messages=context,
        reasons={m.id: [Reason(kind="linear")] for m in context},
    )


def rich_log() -> dict:
    """Embeds, attachments, user/role/channel mentions, a nickname change, a global display
    name change (Bob, who has no nickname) and a reply."""
    alice, bob = user(ALICE, "alice", "Alice"), user(BOB, "bob") | {"globalName": "Bobby"}
    renamed = user(ALICE, "alice", "Alice the Second")
    bob_renamed = bob | {"globalName": "Robert"}
    first = message(
        0,
        alice,
        "see https://example.org/x",
        embeds=[{"title": "An Example", "url": "https://example.org/x", "description": "A page."}],
        attachments=[
            {"id": "1", "url": "https://cdn.example/cat.png", "fileName": "cat.png",
             "fileSizeBytes": 2048},
            {"id": "2", "url": "https://cdn.example/a.zip", "fileName": "a.zip",
             "fileSizeBytes": 3000},
        ],
    )  # fmt: skip
    second = message(
        1,
        bob,
        f"<@{ALICE}> ask <@&{ROLE}> in <#{CHANNEL}> <:party_parrot:123>",
        mentions=[alice],
        reference={"messageId": first["id"]},
        type="Reply",
    )
    return export(
        [
            first,
            second,
            message(2, renamed, "new name, same person"),
            message(3, bob_renamed, "and another"),
        ]
    )


@pytest.mark.parametrize("log", [*LOGS, "rich"], ids=lambda path: getattr(path, "stem", path))
async def test_slim_messages_materialize_exactly_like_full_ones(log: Path | str) -> None:
    parsed = parse_export(rich_log()) if log == "rich" else load_export(log)
    messages = LogSource(parsed).messages
    slimmer = Slimmer()
    slim = [slimmer(message) for message in messages]
    assert all(isinstance(message, CachedMessage) for message in slim)
    materializer = Materializer(MaterializeOptions(bot_user_id=1100000000000000001, vision=True))
    full_nodes = (await materializer.materialize(selection(messages))).nodes
    slim_nodes = (await materializer.materialize(selection(slim))).nodes
    assert [n.model_dump() for n in slim_nodes] == [n.model_dump() for n in full_nodes]
    for before, after in zip(messages, slim, strict=True):
        assert after.created_at == before.created_at
        if before.reference is not None:
            assert after.reference is not None
            assert after.reference.message_id == before.reference.message_id


def test_one_author_object_per_person_while_their_names_stay():
    messages = LogSource(load_export(ROOT / "examples" / "support-channel.json")).messages
    slimmer = Slimmer()
    slim = [slimmer(message) for message in messages]
    people = {m.author.id for m in messages}
    assert len({id(m.author) for m in messages}) > len(people)  # nextcord: one per message
    assert len({id(m.author) for m in slim}) == len(people)
