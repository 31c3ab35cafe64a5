"""The follow decision's meaning features: the cosines they are, missing where an embedding is,
and the plain decision untouched by embeddings it does not read."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conversation.selection.features import NO_MEANING
from conversation.selection.follow_meaning import FOLLOW_MEANING_FEATURES, follow_meaning_row
from conversation.selection.follow_model import (
    FOLLOW_FEATURES,
    MEANING_FOLLOW_FEATURES,
    decide,
    follow_row,
    load_follow_model,
)
from conversation.selection.weights import load_model
from tests.conversation.selection.test_follow_model import ANA, BEN, BOT, clue


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


ASKED = clue(10, ANA, "how do I upgrade the database to version 16?", minute=0, mentions=(BOT,))
ANSWER = clue(11, BOT, "use pg_upgrade with the link mode", minute=1, reference=10)
ASIDE = clue(12, BEN, "anyone up for lunch", minute=2)
FOLLOW_UP = clue(13, ANA, "and the replicas, do they follow along?", minute=3)


def embedded() -> tuple[list, object]:
    vectors = {10: unit(1, 1, 0), 11: unit(1, 0, 0), 12: unit(0, 0, 1), 13: unit(3, 1, 1)}
    chat = [replace(c, meaning=vectors[c.id]) for c in (ASKED, ANSWER, ASIDE)]
    return chat, replace(FOLLOW_UP, meaning=vectors[13])


def test_the_features_are_the_cosines_with_what_it_may_continue():
    chat, candidate = embedded()
    row = follow_meaning_row(candidate, BOT, chat, chat[1], {ANA})
    mine = candidate.meaning
    conversation = chat[0].meaning + chat[1].meaning  # the bot's and Ana's (its interlocutor)
    expected = [
        chat[1].meaning @ mine,
        chat[1].meaning @ mine,
        chat[2].meaning @ mine,
        chat[0].meaning @ mine,
        conversation @ mine / np.linalg.norm(conversation),
    ]
    assert row == pytest.approx(expected, abs=1e-6)
    assert row[0] > row[2]  # closer to the bot's answer than to Ben's lunch


def test_a_cosine_without_an_embedding_is_missing():
    chat, candidate = embedded()
    assert follow_meaning_row(FOLLOW_UP, BOT, chat, chat[1], {ANA}) == [NO_MEANING] * 5
    unembedded_bot = [chat[0], ANSWER, chat[2]]
    row = follow_meaning_row(candidate, BOT, unembedded_bot, ANSWER, {ANA})
    assert row[:2] == [NO_MEANING, NO_MEANING]
    assert all(value != NO_MEANING for value in row[2:])
    alone = follow_meaning_row(candidate, BOT, [chat[1]], chat[1], set())
    assert alone[2:4] == [NO_MEANING, NO_MEANING]  # no one else, no earlier message of Ana's


def test_the_bots_message_before_the_window_is_read():
    chat, candidate = embedded()
    row = follow_meaning_row(candidate, BOT, chat[2:], chat[1], set())
    assert row[0] == pytest.approx(float(chat[1].meaning @ candidate.meaning))


def test_the_row_goes_on_with_meaning_only_when_asked():
    chat, candidate = embedded()
    relevance = load_model()
    plain = follow_row(BOT, chat, candidate, relevance)
    read = follow_row(BOT, chat, candidate, relevance, meaning=True)
    assert plain is not None and read is not None
    assert len(plain.row) == len(FOLLOW_FEATURES)
    assert len(read.row) == len(MEANING_FOLLOW_FEATURES) == len(FOLLOW_FEATURES) + 5
    assert read.row[: len(FOLLOW_FEATURES)] == plain.row
    assert read.row[len(FOLLOW_FEATURES) :] == follow_meaning_row(
        candidate, BOT, chat, chat[1], {ANA}
    )
    assert MEANING_FOLLOW_FEATURES[len(FOLLOW_FEATURES) :] == FOLLOW_MEANING_FEATURES


def test_the_plain_decision_does_not_read_embeddings():
    """The shipped decision (what the bot without the extra runs) decides the same with and
    without embeddings on the messages."""
    model = load_follow_model()
    assert not model.reads_meaning
    chat, candidate = embedded()
    with_meaning = decide(model, BOT, chat, candidate)
    without = decide(model, BOT, [ASKED, ANSWER, ASIDE], FOLLOW_UP)
    assert with_meaning == without
    assert with_meaning.score is not None


@pytest.mark.meaning
def test_a_follow_up_in_other_words_is_close_to_the_bots_answer(sentence_model):
    texts = [
        "how do I upgrade postgres to version 16?",
        "run pg_upgrade with --link, it only takes a few minutes",
        "anyone up for lunch at the noodle place?",
        "will my postgres extensions survive the migration?",
    ]
    vectors = sentence_model.embed(texts)
    chat = [replace(c, meaning=vectors[i]) for i, c in enumerate((ASKED, ANSWER, ASIDE, FOLLOW_UP))]
    row = follow_meaning_row(chat[3], BOT, chat[:3], chat[1], {ANA})
    assert row[0] > row[2] + 0.1  # the answer about upgrading, not the lunch
    assert row[4] > row[2]
