"""How far a candidate reaches into the conversation: the first look's scores carried one link."""

from __future__ import annotations

import math

import pytest

from conversation.selection.clues import Clue, words_of
from conversation.selection.reach import REACH_FEATURES, reach_rows

MINUTE = 60_000
ASKER, HELPER, OTHER = 1, 2, 3


def clue(i: int, author: int, minute: int, *, mentions=(), reference=None) -> Clue:
    return Clue(
        id=i,
        at_ms=minute * MINUTE,
        author=author,
        mentions=frozenset(mentions),
        reference=reference,
        words=words_of("text"),
        question=False,
        size=1,
    )


def rows_by_id(trigger: Clue, history: list[Clue], first: dict[int, float]):
    candidates = list(reversed(history))  # newest first, as the walk finds them
    rows = reach_rows(trigger, candidates, [first[c.id] for c in candidates])
    return {
        c.id: dict(zip(REACH_FEATURES, row, strict=True))
        for c, row in zip(candidates, rows, strict=True)
    }


def test_a_reply_or_an_addressing_carries_the_likelier_score_across():
    history = [
        clue(10, HELPER, 0),  # likely at first look
        clue(11, OTHER, 1, reference=10),  # replies to it
        clue(12, OTHER, 2),  # an unlinked aside by the same person
        clue(13, ASKER, 3, mentions=[OTHER]),  # addresses OTHER: their latest is 12
    ]
    trigger = clue(14, ASKER, 4)
    rows = rows_by_id(trigger, history, {10: 0.9, 11: 0.1, 12: 0.2, 13: 0.4})
    assert rows[11]["linked to a likely message"] == 0.9  # what it replies to
    assert rows[10]["linked to a likely message"] == 0.1  # and the other way round
    assert rows[12]["linked to a likely message"] == 0.4  # addressed by 13
    assert rows[13]["linked to a likely message"] == 0.2
    assert rows[10]["first-look score"] == 0.9
    assert rows[10]["first-look rank"] == 0.0
    assert rows[11]["first-look rank"] == math.log1p(3)


def test_an_authors_other_messages_and_the_silences_around_a_message():
    history = [
        clue(10, HELPER, 0),
        clue(11, OTHER, 50),  # after a fifty-minute silence
        clue(12, HELPER, 52),
        clue(13, OTHER, 53),
    ]
    trigger = clue(14, ASKER, 60)
    rows = rows_by_id(trigger, history, {10: 0.8, 11: 0.1, 12: 0.6, 13: 0.3})
    assert rows[10]["its author's other messages"] == pytest.approx(0.6)
    assert rows[12]["its author's other messages"] == pytest.approx(0.8)
    assert rows[11]["its author's other messages"] == pytest.approx(0.3)
    assert rows[11]["silence before it"] == math.log1p(50)
    assert rows[12]["silence before it"] == math.log1p(2)
    assert rows[10]["its author's next message"] == math.log1p(52)  # back after a long break
    assert rows[13]["its author's next message"] == 5.0  # never again: past any gap seen


def test_the_askers_own_messages_count_as_the_trigger_does():
    history = [clue(10, ASKER, 0), clue(11, HELPER, 1)]
    trigger = clue(12, ASKER, 2)
    rows = rows_by_id(trigger, history, {10: 0.2, 11: 0.5})
    assert rows[10]["its author's other messages"] == 1.0
    assert rows[10]["its author's next message"] == math.log1p(2)  # the trigger itself
