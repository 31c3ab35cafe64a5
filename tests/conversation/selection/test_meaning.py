"""How close in meaning a candidate is, as the score reads it, and the score chosen with it."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from conversation.selection.clues import Clue, words_of
from conversation.selection.features import MEANING_FEATURES, NO_MEANING, meaning_rows

np = pytest.importorskip("numpy")

ASKER, HELPER, OTHER = 1, 2, 3


def unit(*values: float):
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def clue(i: int, author: int, meaning=None) -> Clue:
    return Clue(
        id=i,
        at_ms=i * 60_000,
        author=author,
        mentions=frozenset(),
        reference=None,
        words=words_of("text"),
        question=False,
        size=1,
        meaning=meaning,
    )


def test_each_similarity_is_a_cosine_and_a_message_is_not_compared_with_itself():
    trigger = clue(10, ASKER, unit(1, 0, 0))
    own = clue(9, ASKER, unit(1, 1, 0))
    helper = clue(8, HELPER, unit(0, 1, 0))
    other = clue(7, OTHER, unit(0, 0, 1))
    rows = meaning_rows(trigger, [own, helper, other], anchors={own.id, helper.id})
    assert len(rows[0]) == len(MEANING_FEATURES)
    # To the trigger.
    assert rows[0][0] == pytest.approx(math.sqrt(0.5), abs=1e-6)
    assert rows[2][0] == pytest.approx(0.0, abs=1e-6)
    # To the asker's closest other message: the asker's own message has no other.
    assert rows[0][1] == NO_MEANING
    assert rows[1][1] == pytest.approx(math.sqrt(0.5), abs=1e-6)
    # To the conversation (the trigger and the anchors, the candidate itself left out).
    rest = unit(1, 0, 0) + unit(0, 1, 0)  # the trigger and the helper, for ``own``
    assert rows[0][2] == pytest.approx(float(unit(1, 1, 0) @ rest / np.linalg.norm(rest)), 1e-5)
    assert rows[2][2] == pytest.approx(0.0, abs=1e-6)
    assert rows[1][2] > rows[2][2]


def test_an_unknown_meaning_is_missing_not_far():
    trigger = clue(10, ASKER)  # not embedded
    known = clue(9, HELPER, unit(1, 0))
    unknown = clue(8, HELPER)
    rows = meaning_rows(trigger, [known, unknown], anchors=set())
    assert rows[1] == [NO_MEANING] * len(MEANING_FEATURES)
    assert rows[0][0] == NO_MEANING  # nothing to compare with: the trigger has no meaning
    assert rows[0][2] == NO_MEANING  # the conversation is the trigger alone
    assert meaning_rows(trigger, [unknown], set()) == [[NO_MEANING] * len(MEANING_FEATURES)]


def test_only_the_asked_candidates_get_rows():
    trigger = clue(10, ASKER, unit(1, 0))
    candidates = [clue(i, HELPER, unit(1, i)) for i in range(5)]
    every = meaning_rows(trigger, candidates, {2})
    some = meaning_rows(trigger, candidates, {2}, only=[1, 3])
    assert some == [every[1], every[3]]


def test_meanings_never_make_two_clues_differ():
    a = clue(1, ASKER, unit(1, 0))
    assert a == replace(a, meaning=unit(0, 1))
    assert hash(a) == hash(replace(a, meaning=None))


class CountingEmbedder:
    """A stand-in for the sentence model (an optional extra): a unit vector from the text's
    length, and every batch it was asked for."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return np.stack([unit(1.0, float(len(text))) for text in texts])


class Message:
    def __init__(
        self, message_id: int, content: str, author: int = ASKER, mentions: tuple[int, ...] = ()
    ) -> None:
        self.id = message_id
        self.content = content
        self.author = SimpleNamespace(id=author)
        self.mentions = [SimpleNamespace(id=user) for user in mentions]
        self.reference = None


async def test_the_store_embeds_off_the_loop_and_a_build_never_waits():
    from conversation.selection.meaning import MeaningStore

    embedder = CountingEmbedder()
    store = MeaningStore(embedder, kept=3)  # type: ignore[arg-type]
    first = Message(1, "hello <@123> there")
    assert store(first) is None  # not embedded yet: queued, the build does without
    await store.settled()
    assert embedder.batches == [["hello there"]]  # markup left out
    assert store(first) is not None
    edited = Message(1, "hello again")
    assert store(edited) is None  # an edit is a new text
    for i in range(2, 6):
        store.add(Message(i, f"message {i}"))
    store.add(Message(6, "   "))  # nothing to embed
    await store.settled()
    assert store(Message(5, "message 5")) is not None
    assert store(first) is None  # the oldest went past the bound
    assert sum(len(batch) for batch in embedder.batches) == 6


async def test_an_edit_drops_the_old_texts_meaning():
    """The meaning of words edited away is a trace of them: it goes when the edit arrives."""
    from conversation.selection.meaning import MeaningStore

    store = MeaningStore(CountingEmbedder())  # type: ignore[arg-type]
    store.add(Message(1, "my address is 12 Elm Street"))
    await store.settled()
    store.add(Message(1, "never mind"))
    await store.settled()
    assert [key for key in store._vectors] == [(1, "never mind")]
    assert len(store) == 1


async def test_forgetting_a_person_drops_every_meaning_of_theirs_or_naming_them():
    """forget-user reaches the meanings of all the person's messages and of those naming
    them (mentioned in the text or as Discord's mentions, replied to), embedded or queued,
    whether or not a build ever scored them; the others stay."""
    from conversation.selection.meaning import MeaningStore

    store = MeaningStore(CountingEmbedder())  # type: ignore[arg-type]
    replied = Message(5, "a reply to them", author=OTHER)
    replied.reference = SimpleNamespace(resolved=SimpleNamespace(author=SimpleNamespace(id=HELPER)))
    for message in [
        Message(1, "theirs", author=HELPER),
        Message(2, "naming <@2> in the text", author=OTHER),
        Message(3, "mentioning them", author=OTHER, mentions=(HELPER,)),
        Message(4, "nothing of them", author=OTHER),
        replied,
    ]:
        store.add(message)
    await store.settled()
    store.add(Message(6, "queued, theirs", author=HELPER))  # not embedded yet
    store.forget_people({HELPER})
    await store.settled()
    assert [key[0] for key in store._vectors] == [4]


def test_the_meaning_weights_ship_beside_the_plain_ones():
    from conversation.selection.features import MEANING_SECOND_FEATURES, SECOND_FEATURES
    from conversation.selection.weights import load_meaning_model, load_model

    plain, meaning = load_model(), load_meaning_model()
    assert plain.second.features == SECOND_FEATURES and not plain.reads_meaning
    assert meaning is not None and meaning.second.features == MEANING_SECOND_FEATURES
    assert meaning.reads_meaning and "irc-train" in meaning.trained_on


def test_the_builder_reads_meaning_only_where_it_is_known():
    """The score fitted with meanings decides when the trigger's and nearly every candidate's
    are known; otherwise the plain one, as without the sentence model."""
    from conversation.common.settings import ContextSettings
    from conversation.selection.builder import ContextBuilder
    from conversation.selection.scored_build import scoring_model
    from conversation.selection.weights import load_meaning_model, load_model

    plain = load_model()
    builder = ContextBuilder(ContextSettings(), meanings=lambda message: None)
    assert builder.meaning_model is load_meaning_model()
    meaning = builder.meaning_model
    known = [clue(i, HELPER, unit(1, i)) for i in range(20)]
    trigger = clue(30, ASKER, unit(1, 0))
    assert scoring_model(plain, meaning, trigger, known) is meaning
    one_missing = [*known[:19], clue(19, HELPER)]  # 5% unknown (a message of no text)
    assert scoring_model(plain, meaning, trigger, one_missing) is meaning
    page_waiting = [*known[:10], *(clue(i, HELPER) for i in range(10, 20))]
    assert scoring_model(plain, meaning, trigger, page_waiting) is plain
    assert scoring_model(plain, meaning, clue(30, ASKER), known) is plain
    assert ContextBuilder(ContextSettings()).meaning_model is None  # no sentence model
    # A model given (a fold's weights in the lab) decides alone: the shipped meaning score was
    # fitted on every training log, held-out ones too.
    assert ContextBuilder(ContextSettings(), plain, meanings=lambda m: None).meaning_model is None


async def test_a_full_queue_drops_its_oldest_instead_of_growing():
    from conversation.selection.meaning import MeaningStore

    embedder = CountingEmbedder()
    store = MeaningStore(embedder, queued=3)  # type: ignore[arg-type]
    for i in range(1, 6):  # queued without a pause: the worker has not run yet
        store.add(Message(i, f"message {i}"))
    assert store.dropped == 2
    await store.settled()
    assert [store(Message(i, f"message {i}")) is not None for i in (3, 4, 5)] == [True] * 3
    assert sum(len(batch) for batch in embedder.batches) == 3


async def test_the_selection_tells_the_threshold_of_the_score_that_chose():
    """The prompt's layout reads the threshold of the score that decided (the one that reads
    meaning has its own), so the two never disagree about who belongs to the conversation."""
    from conversation.common.settings import ContextSettings
    from conversation.replay.dce import parse_export
    from conversation.replay.log_source import LogSource
    from conversation.selection.builder import ContextBuilder
    from conversation.sources.cache import ChannelCache
    from conversation.sources.reader import ChannelReader
    from tests.fakes.synthetic import busy_channel

    source = LogSource(parse_export(busy_channel(seed=4, messages=200)))
    trigger = source.messages[150]
    vectors = {m.id: unit(1.0, float(m.id % 7), float(m.id % 5)) for m in source.messages}
    reading = ContextBuilder(ContextSettings(), meanings=lambda m: vectors[m.id])
    plain = ContextBuilder(ContextSettings())
    assert reading.meaning_model is not None
    assert reading.meaning_model.threshold != plain.model.threshold
    for builder, model in ((reading, reading.meaning_model), (plain, plain.model)):
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        selection = await builder.build(trigger, reader)
        assert selection.threshold == model.threshold
    custom = ContextBuilder(ContextSettings(relevance_threshold=0.5), meanings=lambda m: None)
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    assert (await custom.build(trigger, reader)).threshold == 0.5


async def test_forgotten_meanings_go_kept_queued_or_being_embedded():
    from conversation.selection.meaning import MeaningStore

    store = MeaningStore(CountingEmbedder())  # type: ignore[arg-type]
    store.add(Message(1, "kept then deleted"))
    store.add(Message(2, "stays"))
    await store.settled()
    store.forget([1])
    assert len(store) == 1 and store._vectors and all(k[0] == 2 for k in store._vectors)
    store.add(Message(3, "deleted while queued"))
    store.forget([3])
    await store.settled()
    assert {key[0] for key in store._vectors} == {2}


async def test_a_meaning_forgotten_while_it_is_embedded_is_not_kept():
    import asyncio
    import threading

    from conversation.selection.meaning import MeaningStore

    started, release = threading.Event(), threading.Event()

    class HeldEmbedder(CountingEmbedder):
        def embed(self, texts):
            started.set()
            release.wait(5)
            return super().embed(texts)

    store = MeaningStore(HeldEmbedder())  # type: ignore[arg-type]
    store.add(Message(4, "deleted while the model reads it"))
    while not started.is_set():
        await asyncio.sleep(0.01)
    store.forget([4])  # the worker holds it in its batch
    release.set()
    await store.settled()
    assert len(store) == 0
