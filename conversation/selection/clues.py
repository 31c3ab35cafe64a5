"""What the relevance score reads of a message: its words, its people, its links.

A ``Clue`` is a small frozen view of one message, built once per message (``clue_of``) from a
nextcord ``Message``, a replayed one or a training row alike, so that the features
(``conversation.selection.features``) never touch a message object. Words are weighed later by
how rare they are among the candidates; here they are only cut out of the text, stopwords and
Discord markup dropped. A ``ClueCache`` keeps each message's clue while it is used: a busy
channel scores and decides every message against the same recent ones.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from conversation.selection.addressing import (
    name_keys,
    opening_of,
)
from conversation.sources.source import MessageLike, created_ms, reference_id

CLUES_KEPT = 20_000
"""How many clues a ``ClueCache`` keeps. A build scores at most ``cached_candidate_window`` + 1
messages (200 by default) and a follow decision walks back at most 200, and a bot in many
channels comes back to each: an LRU smaller than the clues of the channels busy at once keeps
none of them (each is pushed out before its channel comes back). 20,000 holds the windows of
100 busy channels; a clue weighs about 1.4 KB (measured on irc-dev), so at most about 28 MB, only
reached when that many channels are that busy."""

# Words too common in any English chat to say anything about the topic.
_STOPWORD_TEXT = """the and for you your that this with have has had are was were but not can
    cant don dont
    just what when where which who why how all any its it's i'm im get got out now then than there
    they them their our ours yes yeah yep nope okay too also use using used one some from about
    would could should will want need know like think see try tried does did doing been being
    here more much very well sure thanks thank please hello hey only into over his her she him
    let lets maybe still way thing things something anyone someone there's that's what's"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+#/-]*[a-z0-9+#]|[a-z0-9]")
_MARKUP = re.compile(r"<[@#!&:a-z0-9_]*\d+>")


@dataclass(frozen=True, slots=True)
class Clue:
    """What the score reads of one message."""

    id: int
    at_ms: int
    author: int
    mentions: frozenset[int]
    reference: int | None
    words: frozenset[str]
    question: bool
    size: int
    # A name the message opens with as an address ("ben: ..."), and its author's names, as
    # ``conversation.selection.addressing`` compares them: a written address counts as a mention.
    opening: str | None = None
    author_keys: frozenset[str] = frozenset()
    # What the message means, as a unit sentence embedding (``conversation.selection.meaning``),
    # when one is known: a numpy row, compared by identity only.
    meaning: Any = field(default=None, compare=False, repr=False)


def words_of(content: str, names: Iterable[str] = ()) -> frozenset[str]:
    """Content words: lowercased, markup and addressed names dropped (they are mentions)."""
    text = _MARKUP.sub(" ", content.lower())
    dropped = {name.lower() for name in names if name}
    return frozenset(
        word
        for word in _WORD.findall(text)
        if len(word) >= 3 and word not in _STOPWORDS and word not in dropped
    )


def author_keys(author: object) -> frozenset[str]:
    """The keys of the names others may write for ``author``: username, server nickname, global
    display name (whichever it has)."""
    return name_keys(getattr(author, field, None) for field in ("name", "nick", "global_name"))


def clue_of(message: MessageLike) -> Clue:
    content = message.content or ""
    mentions = list(message.mentions)
    return Clue(
        id=message.id,
        at_ms=created_ms(message),
        author=message.author.id,
        mentions=frozenset(user.id for user in mentions),
        reference=reference_id(message),
        words=words_of(content, (getattr(user, "name", "") or "" for user in mentions)),
        question="?" in content,
        size=len(content.split()),
        opening=opening_of(content),
        author_keys=author_keys(message.author),
    )


class ClueCache:
    """Each message's clue, built once per text (an edit makes a new one), the least recently
    used dropped past ``size``.

    ``meanings`` (``conversation.selection.meaning``'s store, when the sentence model loads)
    gives a clue its meaning; a clue kept before its message was embedded asks again the next
    time it is used, so a build never waits for an embedding and a later one reads it."""

    def __init__(
        self, size: int = CLUES_KEPT, meanings: Callable[[MessageLike], Any] | None = None
    ) -> None:
        self.size = size
        self.meanings = meanings
        self._clues: OrderedDict[tuple[int, str], Clue] = OrderedDict()

    def clue(self, message: MessageLike) -> Clue:
        key = (message.id, message.content or "")
        found = self._clues.get(key)
        if found is None:
            found = self._clues[key] = self._with_meaning(clue_of(message), message)
            if len(self._clues) > self.size:
                self._clues.popitem(last=False)
        else:
            if found.meaning is None and self.meanings is not None:
                found = self._clues[key] = self._with_meaning(found, message)
            self._clues.move_to_end(key)
        return found

    def forget(self, message_ids: Collection[int] = (), people: Collection[int] = ()) -> set[int]:
        """Drop the clues of ``message_ids`` (deleted) and of every message by or mentioning
        one of ``people`` (forget-user): derived words are still the member's words. Returns
        the ids dropped, for what else keeps something of them (their meanings)."""
        gone, wanted = set(message_ids), set(people)
        dropped = {
            key
            for key, clue in self._clues.items()
            if clue.id in gone or clue.author in wanted or clue.mentions & wanted
        }
        for key in dropped:
            del self._clues[key]
        return {message_id for message_id, _ in dropped}

    def _with_meaning(self, clue: Clue, message: MessageLike) -> Clue:
        if self.meanings is None:
            return clue
        meaning = self.meanings(message)
        return clue if meaning is None else replace(clue, meaning=meaning)

    def __len__(self) -> int:
        return len(self._clues)
