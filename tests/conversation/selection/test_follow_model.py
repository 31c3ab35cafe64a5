"""The follow decision's rules, its weights file checked at load, and a broken file stopping
``run`` and ``follow`` with one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from conversation.selection.addressing import name_keys, opening_of
from conversation.selection.clues import Clue, words_of
from conversation.selection.follow_model import (
    FOLLOW_WEIGHTS_FILE,
    decide,
    load_follow_model,
    load_follow_model_from,
    relevance_fingerprint,
)
from conversation.selection.weights import WeightsError
from tests.fakes.code_copy import code_copy_with, run_bot_in
from tests.fakes.harness import EXAMPLE, ROOT

SHIPPED = ROOT / "conversation" / "selection" / FOLLOW_WEIGHTS_FILE
BOT, ANA, BEN = 1, 2, 3
NAMES = {BOT: "threadwise", ANA: "ana", BEN: "ben"}
MINUTE = 60_000


def clue(
    message_id: int,
    author: int,
    text: str,
    *,
    minute: float,
    mentions: tuple[int, ...] = (),
    reference: int | None = None,
) -> Clue:
    return Clue(
        id=message_id,
        at_ms=int(minute * MINUTE),
        author=author,
        mentions=frozenset(mentions),
        reference=reference,
        words=words_of(text),
        question="?" in text,
        size=len(text.split()),
        opening=opening_of(text),
        author_keys=frozenset({NAMES[author]}),
    )


CHAT = [
    clue(10, ANA, "how do I upgrade the database to version 16?", minute=0, mentions=(BOT,)),
    clue(11, BOT, "use pg_upgrade with the link mode, it takes minutes", minute=1, reference=10),
]


@pytest.mark.parametrize(
    ("candidate", "answer", "why"),
    [
        (clue(12, BEN, "hey", minute=2, mentions=(BOT,)), True, "mentions the bot"),
        (clue(12, BEN, "and then?", minute=2, reference=11), True, "replies to the bot"),
        (clue(12, BEN, "and then?", minute=2, reference=10), False, "replies to someone else"),
        (clue(12, ANA, "and then?", minute=2, mentions=(BEN,)), False, "mentions someone else"),
        (clue(12, ANA, "and the link mode?", minute=45), False, "the bot spoke 44 minutes ago"),
        # A name written as an address: the bot's is followed, someone else's never is...
        (clue(12, BEN, "Threadwise: and the indexes?", minute=2), True, "followed: names the bot"),
        (clue(12, BEN, "ana, did the upgrade work?", minute=2), False, "names someone else"),
        # ... and the bot's only while it follows the channel.
        (clue(12, BEN, "threadwise: and then?", minute=45), False, "the bot spoke 44 minutes ago"),
    ],
)
def test_the_rules_decide_without_a_score(candidate, answer, why):
    decision = decide(load_follow_model(), BOT, CHAT, candidate)
    assert (decision.answer, decision.score, decision.why) == (answer, None, why)


def test_one_word_of_a_spaced_display_name_is_someone_else_named():
    """Ana shows as "Ana Lima": "lima, ..." names her, so the bot does not take the message
    for itself (before, only the whole name run together, "analima", was hers)."""
    ana_lima = name_keys(["ana_l", "Ana Lima"])
    chat = [replace(CHAT[0], author_keys=ana_lima), CHAT[1]]
    candidate = clue(12, BEN, "lima, did the upgrade work?", minute=2)
    decision = decide(load_follow_model(), BOT, chat, candidate)
    assert (decision.answer, decision.why) == (False, "names someone else")


def test_nothing_is_followed_before_the_bot_speaks():
    decision = decide(load_follow_model(), BOT, CHAT[:1], clue(12, ANA, "so?", minute=2))
    assert not decision.answer and decision.why == "the bot has not spoken here"


def test_a_follow_up_is_scored_and_named():
    follow_up = clue(12, ANA, "does the link mode keep the old cluster usable?", minute=2)
    decision = decide(load_follow_model(), BOT, CHAT, follow_up)
    assert decision.answer and decision.kind == "followed" and decision.partner == ANA
    assert decision.describe({ANA: "Ana"}.get) == (
        f"followed: no mention, continues the conversation with Ana, score {decision.score:.2f}"
    )
    stricter = decide(load_follow_model(), BOT, CHAT, follow_up, threshold=1.0)
    assert not stricter.answer and stricter.score == decision.score


def _weights(change: Callable[[dict], None]) -> str:
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    change(data)
    return json.dumps(data)


def _loop_tree(data: dict) -> None:
    tree = data["stage"]["trees"][0]
    inner = next(node for node, feature in enumerate(tree["feature"]) if feature >= 0)
    tree["left"][inner] = inner


BROKEN = {
    "missing": (None, "cannot be read"),
    "truncated": ('{"parent": {"features": [', "not valid JSON"),
    "not-utf8": (b"\xff\xfe{}", "not UTF-8"),
    "no-stage": (_weights(lambda data: data.pop("stage")), "stage: Field required"),
    "threshold-above-one": (_weights(lambda data: data.update(threshold=1.5)), "threshold"),
    "other-features": (
        _weights(lambda data: data["stage"]["features"].reverse()),
        "fitted for other features",
    ),
    "short-parent": (_weights(lambda data: data["parent"]["weights"].pop()), "differ in length"),
    "looping-tree": (_weights(_loop_tree), "stage.trees.0: node"),
    "not-a-number": (
        _weights(lambda data: data["parent"]["weights"].__setitem__(0, float("nan"))),
        "not finite",
    ),
}


@pytest.mark.parametrize(("content", "fault"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_follow_weights_file_is_one_line_naming_it(tmp_path, content, fault):
    path = tmp_path / FOLLOW_WEIGHTS_FILE
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(WeightsError) as error:
        load_follow_model_from(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and fault in message
    assert "\n" not in message


def test_the_shipped_follow_weights_load():
    model = load_follow_model_from(SHIPPED)
    assert 0 < model.threshold < 1 and model.trained_on.startswith("irc-train")


def test_the_follow_weights_were_fitted_over_the_shipped_relevance_weights():
    """Its features are the relevance model's scores: refit both together."""
    assert load_follow_model_from(SHIPPED).relevance_sha256 == relevance_fingerprint(), (
        "conversation/selection/relevance_weights.json changed: run python -m lab.train_follow"
    )


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A copy of the code whose follow weights file is cut short, imported ahead of the real."""
    return code_copy_with(tmp_path, f"conversation/selection/{FOLLOW_WEIGHTS_FILE}", '{"stage": ')


@pytest.mark.parametrize(
    "command",
    [["run"], ["follow", str(EXAMPLE), "--bot-id", "1300000000000000100"]],
    ids=["run", "follow"],
)
def test_commands_stop_with_one_line_on_broken_follow_weights(broken_package, command):
    result = run_bot_in(broken_package, *command)
    weights = broken_package / "conversation" / "selection" / FOLLOW_WEIGHTS_FILE
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {weights}: not valid JSON (Expecting value, line 1); "
        "restore it or run python -m lab.train_follow"
    ]
