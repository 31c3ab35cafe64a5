"""The real sentence model of the meaning extra: it loads from installed packages, embeds, and
a builder given its store reads meaning once the messages are embedded, never before.

Skipped where the extra is not installed (the default install); ``.ci/run`` installs it and sets
``THREADWISE_REQUIRE_MEANING``, which turns the skip into a failure (the ``sentence_model``
fixture, ``tests/conftest.py``)."""

from __future__ import annotations

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.selection.meaning import Embedder, MeaningStore, meaning_store
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.synthetic import busy_channel

pytestmark = pytest.mark.meaning


def test_the_model_puts_close_meanings_close(sentence_model: Embedder):
    rows = sentence_model.embed(
        [
            "how do I install python on windows",
            "what's the way to set up python on a windows machine",
            "the weather is lovely at the beach today",
            "",
        ]
    )
    assert rows.shape == (4, 384)
    norms = (rows**2).sum(axis=1) ** 0.5
    assert norms[:3] == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    assert norms[3] == 0.0  # nothing to embed: a zero row, no similarity
    same, other = float(rows[0] @ rows[1]), float(rows[0] @ rows[2])
    assert same > 0.6 and other < 0.2, (same, other)


async def test_a_build_reads_meaning_once_embedded_and_never_waits(sentence_model: Embedder):
    store = meaning_store()
    assert isinstance(store, MeaningStore) and store.embedder is sentence_model
    source = LogSource(parse_export(busy_channel(seed=11, messages=300)))
    trigger = source.messages[250]
    plain = ContextBuilder(ContextSettings())
    reading = ContextBuilder(ContextSettings(), meanings=store)
    assert reading.meaning_model is not None

    async def scores(builder: ContextBuilder) -> dict[int, float | None]:
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        selection = await builder.build(trigger, reader)
        return {i: reasons[0].score for i, reasons in selection.reasons.items()}

    # Nothing embedded yet: the build asks, does not wait, and scores as the plain score does.
    before = await scores(reading)
    assert before == await scores(plain)
    await store.settled()  # the asked messages were embedded in a worker thread meanwhile
    after = await scores(reading)
    assert after != before  # the score that reads meaning decided this time
