"""A learned score: how likely a candidate message belongs to the trigger's conversation.

The tik/tok walk proposes candidates (the temporal neighbourhood under sealing, the trigger's
reply chain); this module describes each candidate by what a Discord bot can see and weighs the
description with models fitted on the IRC disentanglement training split
(``python -m lab.train_relevance``). The features are meant to hold in any community: time
gaps and position, who speaks to whom (mentions, replies, participation), and lexical overlap
whose word weights come from the candidates themselves (a word rare in this stretch of channel
counts more), never from a fixed vocabulary of the training channel.

Everything here is pure Python over small frozen ``Clue`` views, so the same code scores
replayed logs, live messages and the training data.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import operator
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from conversation.selection.addressing import (
    name_key,
    name_keys,
    named_people,
    opening_of,
    with_written_addresses,
)
from conversation.selection.reach import REACH_FEATURES, reach_rows
from conversation.sources.source import MessageLike, created_ms, reference_id

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


# Feature names double as the words of an explanation, so they say what was seen.
FEATURES: tuple[str, ...] = (
    "messages back",
    "minutes back",
    "asker's own message",
    "in the trigger's reply chain",
    "its author is addressed by the trigger",
    "latest message of someone the trigger addresses",
    "addresses the asker",
    "replies to the asker",
    "its author and the asker talk",
    "its author takes part",
    "addresses a participant",
    "addresses only outsiders",
    "answered by a participant",
    "its author's latest message",
    "its author's activity",
    "words shared with the trigger",
    "words shared with the asker",
    "words shared with the reply chain",
    "a question",
    "length",
    "its author spoke last",
    "messages back, trigger unlinked",
    "minutes back, asker's own",
)


_CHAIN = FEATURES.index("in the trigger's reply chain")


# Features relative to the conversation as the first look found it (the candidates it scored
# at least ``anchor``, with the trigger): who is in it, who it addresses, what it is about.
RELATIVE_FEATURES: tuple[str, ...] = (
    "its author is in the conversation",
    "addresses someone in the conversation",
    "addressed by the conversation",
    "reply link with the conversation",
    "words shared with the conversation",
    "messages to the conversation",
    "minutes to the conversation",
)

# What the second look reads: the first look's features, the relative ones, and how far each
# candidate reaches into the conversation by its links (``conversation.selection.reach``).
SECOND_FEATURES: tuple[str, ...] = FEATURES + RELATIVE_FEATURES + REACH_FEATURES
# An optional third look reads the same again, the conversation now the one the second found.
LATER = ", second look"
THIRD_FEATURES: tuple[str, ...] = SECOND_FEATURES + tuple(
    name + LATER for name in RELATIVE_FEATURES + REACH_FEATURES
)
# The answer ranking reads the deciding look's row and, last, the score it gave.
ANSWER_SCORE = "score"


# Measures, worded for a value above and below the training mean.
_MEASURES: dict[str, tuple[str | None, str | None]] = {
    # None: the model leans that way only to correct a correlated feature (long ago is not a
    # reason to belong); an explanation would mislead, so it stays silent.
    "messages back": (None, "few messages back"),
    "minutes back": (None, "recent"),
    "its author's activity": ("its author speaks often", "its author speaks rarely"),
    "words shared with the trigger": ("words shared with the trigger", "few words in common"),
    "words shared with the asker": ("words shared with the asker", "few words in common"),
    "words shared with the reply chain": ("words shared with the reply chain", "few words"),
    "length": ("long", "short"),
    "messages back, trigger unlinked": ("far back, trigger unlinked", "just before the trigger"),
    "minutes back, asker's own": ("the asker's, long ago", "the asker's, recent"),
    "its author is in the conversation": ("its author is in the conversation", "new voice"),
    "words shared with the conversation": ("on the conversation's topic", "off topic"),
    "messages to the conversation": (None, "next to the conversation"),
    "minutes to the conversation": (None, "close in time"),
    "first-look score": (None, None),  # a restatement of the other features: says nothing
    "first-look rank": (None, "among the likeliest"),
    "its author's other messages": ("its author's other messages belong", None),
    "linked to a likely message": ("linked to a likely message", None),
    "silence before it": (None, "right after the message before"),
    "its author's next message": (None, "its author speaks again soon"),
}


# Measures that are zero when their condition is absent: nothing to say then.
_ONLY_WHEN_PRESENT = frozenset({"messages back, trigger unlinked", "minutes back, asker's own"})


def _similarity(a: frozenset[str], b: frozenset[str], idf: dict[str, float]) -> float:
    """Overlap of two word sets, each word weighed by its rarity in the candidates (0..1)."""
    shared = a & b
    if not shared:
        return 0.0
    return sum(map(idf.__getitem__, shared)) / math.sqrt(_weight(a, idf) * _weight(b, idf))


def _weight(words: frozenset[str], idf: dict[str, float]) -> float:
    return sum(map(idf.__getitem__, words))


def _idf(everyone: Sequence[Clue]) -> dict[str, float]:
    """Word weights from this stretch of channel: a word few candidates use weighs more."""
    df = Counter(itertools.chain.from_iterable(clue.words for clue in everyone))
    n = len(everyone)
    # Few distinct counts among thousands of words: one logarithm per count.
    weights = {count: math.log((n + 1) / (count + 0.5)) for count in set(df.values())}
    return {word: weights[count] for word, count in df.items()}


def with_addresses(trigger: Clue, candidates: Sequence[Clue]) -> tuple[Clue, list[Clue]]:
    """``trigger`` and ``candidates`` as the score reads them: a name written as an address
    (``with_written_addresses``) is a mention, and so is a whole name the trigger writes
    anywhere ("what about mireille's idea?"): whom it talks about is whom it talks with.

    Only the trigger's: reading every candidate's names the same way moved no figure on the
    folds beyond the trigger's (parent recall 0.984 warm either way) and costs a look-up per
    word of every candidate. The names are read from the content words (``words_of``), so a
    name in a script other than Latin letters and digits is read only as an address.
    """
    trigger, candidates = with_written_addresses(trigger, candidates)
    named = named_people(map(name_key, trigger.words), candidates, trigger.author)
    if not named <= trigger.mentions:
        trigger = replace(trigger, mentions=trigger.mentions | named)
    return trigger, candidates


def feature_rows(
    trigger: Clue,
    candidates: Sequence[Clue],
    chain: set[int],
    idf: dict[str, float] | None = None,
) -> list[list[float]]:
    """One row of ``FEATURES`` per candidate (candidates newest first, as the walk found them).

    ``chain`` holds the ids of the trigger's reply chain (its parent, the parent's parent...).
    The builder asks this of two hundred candidates per build: what depends on the author alone
    is worked out once per author (``_author_columns``), a word overlap only when words are shared.
    """
    everyone = [trigger, *candidates]
    by_id = {clue.id: clue for clue in everyone}
    if idf is None:
        idf = _idf(everyone)
    core = {trigger.author, *trigger.mentions}
    core.update(by_id[i].author for i in chain if i in by_id)
    pairs: set[tuple[int, int]] = set()
    referenced_by: dict[int, set[int]] = {}
    for clue in everyone:
        for user in clue.mentions:
            pairs.add((clue.author, user))
        if clue.reference is not None:
            referenced_by.setdefault(clue.reference, set()).add(clue.author)
            parent = by_id.get(clue.reference)
            if parent is not None:
                pairs.add((clue.author, parent.author))
    authors = _author_columns(trigger, candidates, core, pairs)
    last_speaker = candidates[0].author if candidates else None
    asker_messages = [clue for clue in candidates if clue.author == trigger.author]
    asker_words = frozenset().union(*(clue.words for clue in asker_messages))
    asker_counts = Counter(itertools.chain.from_iterable(m.words for m in asker_messages))
    chain_words = frozenset().union(*(by_id[i].words for i in chain if i in by_id))
    unlinked = not trigger.mentions and trigger.reference is None

    trigger_weight = _weight(trigger.words, idf)
    asker_weight = _weight(asker_words, idf)
    chain_weight = _weight(chain_words, idf)
    trigger_words, asker, at_ms = trigger.words, trigger.author, trigger.at_ms
    weigh = idf.__getitem__
    log1p, sqrt = math.log1p, math.sqrt
    rows: list[list[float]] = []
    for rank, clue in enumerate(candidates):
        back = log1p(rank)
        minutes = log1p((at_ms - clue.at_ms if at_ms > clue.at_ms else 0) / 60_000)
        author, words, addressed = clue.author, clue.words, clue.mentions
        own = author == asker
        if not own:
            others, others_weight = asker_words, asker_weight
        elif any(asker_counts[word] > 1 for word in words):
            # The asker's other messages, joined as one set only when this one shares a word
            # with them (the set's weight is summed in its own order: the same float).
            others = frozenset().union(*(m.words for m in asker_messages if m is not clue))
            others_weight = _weight(others, idf)
        else:
            others, others_weight = frozenset(), 0.0
        # The three overlaps of ``_similarity``, the candidate's own weight summed only when one
        # of them shares a word (most candidates share none).
        in_chain = clue.id in chain
        with_trigger = None if words.isdisjoint(trigger_words) else words & trigger_words
        with_others = None if words.isdisjoint(others) else words & others
        with_chain = None if in_chain or words.isdisjoint(chain_words) else words & chain_words
        if with_trigger or with_others or with_chain:
            weight = sum(map(weigh, words))
        trigger_overlap = (
            sum(map(weigh, with_trigger)) / sqrt(weight * trigger_weight) if with_trigger else 0.0
        )
        others_overlap = (
            sum(map(weigh, with_others)) / sqrt(weight * others_weight) if with_others else 0.0
        )
        chain_overlap = (
            sum(map(weigh, with_chain)) / sqrt(weight * chain_weight) if with_chain else 0.0
        )
        parent = by_id.get(clue.reference) if clue.reference is not None else None
        answered = referenced_by.get(clue.id)
        named, talks, in_core, activity, newest_id = authors[author]
        newest_of_author = newest_id == clue.id
        rows.append(
            [
                back,
                minutes,
                1.0 if own else 0.0,
                1.0 if in_chain else 0.0,
                named,
                named if newest_of_author else 0.0,
                1.0 if asker in addressed else 0.0,
                1.0 if parent is not None and parent.author == asker else 0.0,
                talks,
                in_core,
                0.0 if addressed.isdisjoint(core) else 1.0,
                1.0 if addressed and addressed.isdisjoint(core) else 0.0,
                1.0 if answered is not None and not answered.isdisjoint(core) else 0.0,
                1.0 if newest_of_author else 0.0,
                activity,
                trigger_overlap,
                others_overlap,
                chain_overlap,
                1.0 if clue.question else 0.0,
                log1p(clue.size),
                1.0 if author == last_speaker else 0.0,
                back if unlinked else 0.0,
                minutes if own else 0.0,
            ]
        )
    return rows


# What ``feature_rows`` reads of a candidate's author: addressed by the trigger, talks with the
# asker, takes part, the log of its activity, and the id of its latest message.
_AuthorColumns = tuple[float, float, float, float, int]


def _author_columns(
    trigger: Clue, candidates: Sequence[Clue], core: set[int], pairs: set[tuple[int, int]]
) -> dict[int, _AuthorColumns]:
    """The columns of ``feature_rows`` that depend on a candidate's author alone, worked out
    once per author (a handful of people write two hundred candidates)."""
    activity = Counter(clue.author for clue in candidates)
    latest = {clue.author: clue.id for clue in reversed(candidates)}  # the newest wins
    asker = trigger.author
    return {
        author: (
            1.0 if author in trigger.mentions else 0.0,
            1.0 if (author, asker) in pairs or (asker, author) in pairs else 0.0,
            1.0 if author in core else 0.0,
            math.log1p(count),
            latest[author],
        )
        for author, count in activity.items()
    }


def relative_rows(
    trigger: Clue,
    candidates: Sequence[Clue],
    anchors: set[int],
    idf: dict[str, float],
    only: Sequence[int] | None = None,
) -> list[list[float]]:
    """One row of ``RELATIVE_FEATURES`` per candidate (per index in ``only`` when given: the
    conversation is still found among them all); ``anchors`` are the confident ones."""
    members = [(-1, trigger)] + [(r, c) for r, c in enumerate(candidates) if c.id in anchors]
    authors: Counter[int] = Counter(clue.author for _, clue in members)
    addressed: Counter[int] = Counter(user for _, clue in members for user in clue.mentions)
    member_ids = {clue.id for _, clue in members}
    referenced = {clue.reference for _, clue in members if clue.reference is not None}
    words: Counter[str] = Counter(itertools.chain.from_iterable(c.words for _, c in members))
    member_words = words.keys()
    total = sum(idf.get(word, 0.0) for word in words)
    member_ranks = sorted(r for r, _ in members)
    member_times = sorted(clue.at_ms for _, clue in members)
    weigh, log1p, sqrt = idf.__getitem__, math.log1p, math.sqrt
    rows = []
    for rank in range(len(candidates)) if only is None else only:
        clue = candidates[rank]
        author, mentions = clue.author, clue.mentions
        inside = clue.id in member_ids
        own_authors = authors[author] - (1 if inside else 0)
        own_addressed = addressed[author]
        if inside and author in mentions:
            own_addressed -= 1
        if inside:
            unique = [w for w in clue.words if words[w] == 1]
            rest_total = total - sum(idf[w] for w in unique)
            shared = sum(idf[w] for w in clue.words if words[w] > 1)
        elif member_words.isdisjoint(clue.words):
            rest_total, shared = total, 0.0
        else:
            rest_total, shared = total, sum(map(weigh, member_words & clue.words))
        mine = sum(map(weigh, clue.words))
        similarity = shared / sqrt(mine * rest_total) if mine > 0 and rest_total > 0 else 0.0
        distance = _nearest(member_ranks, rank, inside)
        gap = _nearest(member_times, clue.at_ms, inside)
        speaks_to_member = bool(mentions) and any(
            authors[user] > 0 for user in mentions if user != author
        )
        rows.append(
            [
                log1p(own_authors),
                1.0 if speaks_to_member else 0.0,
                1.0 if own_addressed > 0 else 0.0,
                float(
                    (clue.reference is not None and clue.reference in member_ids)
                    or clue.id in referenced
                ),
                similarity,
                log1p(distance) if distance is not None else 5.0,
                log1p(gap / 60_000) if gap is not None else 5.0,
            ]
        )
    return rows


def _nearest(values: list[int], x: int, among: bool) -> int | None:
    """The smallest distance from ``x`` to the sorted ``values`` (``x`` itself left out once
    when it is ``among`` them), by bisection: the candidates are many, so no full scan."""
    i = bisect.bisect_left(values, x)
    below = abs(values[i - 1] - x) if i > 0 else None
    j = i + 1 if among else i
    if j >= len(values):
        return below
    above = abs(values[j] - x)
    return above if below is None or above < below else below


class LogisticStage(BaseModel):
    """One logistic model over standardised features."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def contributions(self, row: Sequence[float]) -> list[float]:
        return [
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, row, self.means, self.scales, strict=True)
        ]

    def score(self, row: Sequence[float]) -> tuple[float, list[float]]:
        """Probability that the candidate belongs, and each feature's share of the log-odds."""
        parts = self.contributions(row)
        z = max(-30.0, min(30.0, self.bias + sum(parts)))
        return 1.0 / (1.0 + math.exp(-z)), parts

    @functools.cached_property
    def _folded(self) -> tuple[float, tuple[float, ...]]:
        """The standardisation folded into the weights: log-odds = bias + sum(x * weight)."""
        weights = tuple(w / s for w, s in zip(self.weights, self.scales, strict=True))
        bias = self.bias - sum(w * m for w, m in zip(weights, self.means, strict=True))
        return bias, weights

    def probability(self, row: Sequence[float]) -> float:
        """The probability alone, in one pass (the builder scores every candidate this way)."""
        return self.probabilities((row,))[0]

    def probabilities(self, rows: Iterable[Sequence[float]]) -> list[float]:
        """``probability`` of each row, in one loop (the first look reads two hundred)."""
        bias, weights = self._folded
        mul, exp = operator.mul, math.exp
        probabilities: list[float] = []
        for row in rows:
            z = bias + sum(map(mul, row, weights))
            # max(-30, min(30, z)) without two calls per row (a NaN clips to 30 alike).
            z = z if -30.0 <= z <= 30.0 else (-30.0 if z < -30.0 else 30.0)
            probabilities.append(1.0 / (1.0 + exp(-z)))
        return probabilities


class Tree(BaseModel):
    """One regression tree as flat node arrays; a node with feature -1 is a leaf.

    ``values`` holds every node's value (a leaf's is what it adds to the log-odds; an inner
    node's is what its leaves add on average), so a walk down the tree can say which feature
    moved the score by how much.
    """

    model_config = ConfigDict(frozen=True)

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    values: tuple[float, ...]

    def expression(self, node: int = 0) -> str:
        """The tree as one Python expression giving the leaf's value, feature ``i`` read from
        the local ``x{i}`` (compiled once, evaluated fast)."""
        if self.feature[node] < 0:
            return repr(float(self.values[node]))
        left = self.expression(self.left[node])
        right = self.expression(self.right[node])
        return (
            f"({left} if x{int(self.feature[node])} < {float(self.threshold[node])!r} else {right})"
        )

    def walk_lines(self, indent: str, node: int = 0) -> list[str]:
        """The tree as statements that add, at each split taken, the change of value it made to
        the local ``p{feature}``: a row's contributions in one compiled walk, with no leaf
        lookup."""
        feature = self.feature[node]
        if feature < 0:
            return [f"{indent}pass"]
        lines = [f"{indent}if x{int(feature)} < {float(self.threshold[node])!r}:"]
        for child, head in ((self.left[node], None), (self.right[node], f"{indent}else:")):
            if head is not None:
                lines.append(head)
            change = float(self.values[child] - self.values[node])
            lines.append(f"{indent}    p{int(feature)} += {change!r}")
            lines.extend(self.walk_lines(indent + "    ", child))
        return lines


def _unpacked(name: str, count: int) -> str:
    """``x0, x1, ..., = x``: a row's features as locals, which the compiled trees read faster
    than subscripts (about a third of their time)."""
    return ", ".join(f"{name}{i}" for i in range(count)) + ","


class TreeStage(BaseModel):
    """Gradient-boosted trees over the features, evaluated in pure Python.

    Trees see what a linear model cannot: a word overlap that matters only for a recent
    message, a participant's message that counts only when it does not address outsiders.
    """

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    means: tuple[float, ...]  # training means, to word a measure as high or low
    base: float
    trees: tuple[Tree, ...]

    @functools.cached_property
    def _compiled(self):
        body = " + ".join([repr(float(self.base))] + [tree.expression() for tree in self.trees])
        count = len(self.features)
        source = f"def score(x):\n    {_unpacked('x', count)} = x\n    return {body}\n"
        # The source is built from validated ints and floats only (no text from the file).
        scope: dict = {}
        exec(compile(source, "<relevance trees>", "exec"), scope)
        return scope["score"]

    @functools.cached_property
    def _compiled_walk(self):
        # Explanations ask this of every chosen message: one unrolled walk over all the trees
        # costs about a fifth less than finding each leaf and then replaying its path. Built, like
        # ``_compiled``, from validated ints and floats only.
        count = len(self.features)
        lines = [
            "def walk(x):",
            f"    {_unpacked('x', count)} = x",
            f"    {_unpacked('p', count)} = {(0.0,) * count!r}",
        ]
        for tree in self.trees:
            lines.extend(tree.walk_lines("    "))
        lines.append(f"    return [{_unpacked('p', count)}]")
        scope: dict = {}
        exec(compile("\n".join(lines), "<relevance walk>", "exec"), scope)
        return scope["walk"]

    def probability(self, row: Sequence[float]) -> float:
        z = self._compiled(row)
        z = z if -30.0 <= z <= 30.0 else (-30.0 if z < -30.0 else 30.0)  # as in LogisticStage
        return 1.0 / (1.0 + math.exp(-z))

    def contributions(self, row: Sequence[float]) -> list[float]:
        """Each feature's share of the log-odds: the value changes along the path it decided."""
        return self._compiled_walk(row)


@dataclass(frozen=True, slots=True)
class Scored:
    score: float
    row: tuple[float, ...]
    # Joined to the trigger by reply references: in whatever its score (see ``thread_scores``).
    in_thread: bool = False


def reply_thread(trigger: Clue, candidates: Sequence[Clue]) -> set[int]:
    """The candidates reply references join to the trigger, in either direction and any depth:
    its parent, the parent's parent, another reply to either, what that one replies to..."""
    neighbours: dict[int, set[int]] = {}
    known = {clue.id for clue in candidates} | {trigger.id}
    for clue in (trigger, *candidates):
        if clue.reference is not None and clue.reference in known:
            neighbours.setdefault(clue.id, set()).add(clue.reference)
            neighbours.setdefault(clue.reference, set()).add(clue.id)
    joined = {trigger.id}
    frontier = [trigger.id]
    while frontier:
        for other in neighbours.get(frontier.pop(), ()):
            if other not in joined:
                joined.add(other)
                frontier.append(other)
    joined.discard(trigger.id)
    return joined


def thread_scores(
    trigger: Clue, candidates: Sequence[Clue], scored: Sequence[Scored]
) -> list[Scored]:
    """The trigger's reply thread scored 1: it is in, whatever its age or words.

    A reply and what it answers share a conversation, in every community; the score weighs
    replies little because the training logs hold few, so on a server where people reply a lot
    the older links of a thread would hang on their score. Other threads keep their own scores:
    lifting a whole thread to its likeliest message gained a little on the training logs as they
    are, but lost where every answer is a reply (one stray high score then pulls in a whole
    other conversation).
    """
    joined = reply_thread(trigger, candidates)
    return [
        Scored(1.0, result.row, True) if clue.id in joined else result
        for clue, result in zip(candidates, scored, strict=True)
    ]


class RelevanceModel(BaseModel):
    """Two looks at the candidates, fitted on the IRC training split; loaded from package data.

    The first (logistic) scores each candidate against the trigger; the second (boosted trees)
    adds how it relates to the conversation the first look found (its confident candidates),
    so that people and topics joined through someone else count as well.
    """

    model_config = ConfigDict(frozen=True)

    first: LogisticStage
    second: TreeStage
    anchor: float  # first-look score that makes a candidate part of the conversation
    threshold: float  # the fitted default for [context] relevance_threshold
    # The best-scored candidates always in, whatever the threshold (the message the trigger
    # replies to counting as one): the message a trigger answers is nearly always among them,
    # so the threshold need not sink to catch it.
    always_best: int = 0
    always_best_floor: float = 0.05  # ... unless even the best is plainly elsewhere
    # A candidate the first look scores under this is not looked at again: its first-look score
    # stands (under ``always_best_floor``, so it cannot enter). Far back in a busy channel most
    # candidates are plainly elsewhere, and the second look costs the most; on the training
    # logs, what it skips almost never reached the threshold. 0 looks at every candidate.
    second_look_floor: float = 0.0
    trained_on: str = ""
    # A third look, when fitted: the conversation as the second look found it, so a message
    # two links from the trigger is judged with the one between them already in.
    third: TreeStage | None = None
    # Which candidate the trigger answers, ranked apart (trees over the deciding look's row and
    # its score, fitted on the gold parents): the message a trigger answers is the one its
    # context most needs, and a score fitted on the whole conversation ranks some of them low
    # (a short answer far back, with no word in common). The likeliest ``answer_best`` of those
    # looked at twice enter beside the rest, none under ``answer_floor``. None: no such step.
    answers: TreeStage | None = None
    answer_best: int = Field(0, ge=0)
    answer_floor: float = Field(0.0, ge=0.0, le=1.0)

    @property
    def deciding(self) -> TreeStage:
        """The last look: its scores decide, its trees explain."""
        return self.third if self.third is not None else self.second

    def first_look(
        self, trigger: Clue, candidates: Sequence[Clue], chain: set[int]
    ) -> tuple[list[list[float]], list[float], dict[str, float]]:
        idf = _idf([trigger, *candidates])
        rows = feature_rows(trigger, candidates, chain, idf)
        return rows, self.first.probabilities(rows), idf

    def rows(
        self,
        trigger: Clue,
        candidates: Sequence[Clue],
        chain: set[int],
        *,
        looks: int | None = None,
    ) -> list[tuple[float, ...]]:
        """The rows the deciding look reads, one per candidate: ``SECOND_FEATURES``, or
        ``THIRD_FEATURES`` with a third look (``looks`` asks for either, to fit the third)."""
        if looks is None:
            looks = 2 if self.third is None else 3
        trigger, candidates = with_addresses(trigger, candidates)
        base, first, idf = self.first_look(trigger, candidates, chain)
        rows = _with_conversation(base, trigger, candidates, first, self.anchor, idf)
        if looks < 3:
            return rows
        second = [self.second.probability(row) for row in rows]
        return _with_conversation(rows, trigger, candidates, second, self.anchor, idf)

    def score_all(self, trigger: Clue, candidates: Sequence[Clue], chain: set[int]) -> list[Scored]:
        probability = self.deciding.probability
        return [Scored(probability(row), row) for row in self.rows(trigger, candidates, chain)]

    def score_threads(
        self,
        trigger: Clue,
        candidates: Sequence[Clue],
        chain: set[int],
        keep: Collection[int] = (),
    ) -> list[Scored]:
        """The scores that decide: ``score_all``, the trigger's reply thread at 1; a candidate
        under ``second_look_floor`` keeps its first-look score and no row, unless ``keep``, the
        chain or the thread holds it (``keep``: those whose reasons are told whatever their
        score, the recent messages)."""
        if self.third is not None or self.second_look_floor <= 0.0:
            return thread_scores(trigger, candidates, self.score_all(trigger, candidates, chain))
        trigger, candidates = with_addresses(trigger, candidates)
        base, first, idf = self.first_look(trigger, candidates, chain)
        joined = reply_thread(trigger, candidates)
        floor = self.second_look_floor
        looked = [
            i
            for i, (clue, p) in enumerate(zip(candidates, first, strict=True))
            if p >= floor or clue.id in joined or clue.id in chain or clue.id in keep
        ]
        rows = _with_conversation(base, trigger, candidates, first, self.anchor, idf, looked)
        second = dict(zip(looked, rows, strict=True))
        probability = self.second.probability
        results: list[Scored] = []
        for i, (clue, p) in enumerate(zip(candidates, first, strict=True)):
            row = second.get(i)
            if row is None:
                results.append(Scored(p, ()))
            elif clue.id in joined:
                results.append(Scored(1.0, row, True))
            else:
                results.append(Scored(probability(row), row))
        return results

    def entering(
        self,
        ranked: Iterable[tuple[int, float]],
        inside: Collection[int],
        *,
        threshold: float,
        room: int,
        taken: int,
    ) -> list[int]:
        """The candidates that enter beside those ``inside`` already, best first (``ranked``:
        ids and scores, best first), at most ``room``: the best ``always_best`` whatever the
        threshold (``taken`` of them are in already; none under ``always_best_floor``), then
        those that reach it. The one rule of the builder and of the benches that replay it."""
        entered: list[int] = []
        for message_id, score in ranked:
            if len(entered) >= room:
                break
            if message_id in inside:
                continue
            if score < threshold and (taken >= self.always_best or score < self.always_best_floor):
                break
            entered.append(message_id)
            taken += 1
        return entered

    def answer_ranking(self, looked: Iterable[tuple[int, Scored]]) -> list[tuple[float, int]]:
        """``(chance, id)`` of each of ``looked`` (ids and scores) the answer ranking reads,
        likeliest first, on a tie the newest. Only a candidate looked at twice has the row it
        reads, and one the score puts under ``always_best_floor`` is plainly elsewhere, as for
        the best few: it is not ranked (half the candidates left out in a busy channel, and
        almost none of the parents). None without the ranking."""
        if self.answers is None:
            return []
        probability = self.answers.probability
        floor = self.always_best_floor
        return sorted(
            (
                (probability((*scored.row, scored.score)), message_id)
                for message_id, scored in looked
                if scored.row and scored.score >= floor
            ),
            reverse=True,
        )

    def likely_answered(self, looked: Iterable[tuple[int, Scored]], room: int) -> list[int]:
        """Of ``looked`` (ids and scores of the candidates not in yet), those the trigger likely
        answers, likeliest first (``answer_ranking``): at most ``answer_best`` and ``room``,
        none under ``answer_floor``. ``lab.train_relevance`` chooses the defaults by the same
        rule."""
        if self.answer_best <= 0 or room <= 0:
            return []
        chances = self.answer_ranking(looked)
        return [
            message_id
            for chance, message_id in chances[: min(self.answer_best, room)]
            if chance >= self.answer_floor
        ]

    def evidence(self, scored: Scored, count: int = 3) -> tuple[str, ...]:
        """What raised the score most, in words, for explanations (asked only of the chosen).

        A yes/no feature explains only when present; a measure says which way it went
        (``few messages back`` raises the score, ``many messages back`` would not).
        """
        stage = self.deciding
        row = scored.row
        if not row:  # not looked at twice (``second_look_floor``): nothing raised it
            return ()
        parts = stage.contributions(row)
        words: list[str] = []
        if scored.in_thread:  # in by that alone: it comes first
            words.append(FEATURES[_CHAIN] if row[_CHAIN] else "in the trigger's reply thread")
        # Only a share above 0.05 explains; the largest first, on a tie the earlier feature.
        raising = [i for i, part in enumerate(parts) if part > 0.05]
        for i in sorted(raising, key=parts.__getitem__, reverse=True):
            if len(words) >= count:
                break
            name = stage.features[i].removesuffix(LATER)
            if name in words:
                continue
            above = row[i] > stage.means[i]
            if name in _ONLY_WHEN_PRESENT and not row[i]:
                continue
            if name in _MEASURES:
                more, less = _MEASURES[name]
                label = more if above else less
                if label is not None:
                    words.append(label)
            elif above:
                words.append(name)
        return tuple(words)


def _with_conversation(
    rows: Sequence[Sequence[float]],
    trigger: Clue,
    candidates: Sequence[Clue],
    scores: Sequence[float],
    anchor: float,
    idf: dict[str, float],
    only: Sequence[int] | None = None,
) -> list[tuple[float, ...]]:
    """``rows`` extended by how each candidate relates to the conversation ``scores`` found
    (of the candidates at the indices ``only``, when given; the conversation is found among
    them all)."""
    anchors = {c.id for c, p in zip(candidates, scores, strict=True) if p >= anchor}
    relative = relative_rows(trigger, candidates, anchors, idf, only)
    reach = reach_rows(trigger, candidates, scores, only)
    base = rows if only is None else [rows[i] for i in only]
    return [
        (*row, *extra, *linked) for row, extra, linked in zip(base, relative, reach, strict=True)
    ]


WEIGHTS_FILE = "relevance_weights.json"


class WeightsError(ValueError):
    """The weights file cannot be used; the message is one line naming the file and the fault."""


@functools.cache
def load_model() -> RelevanceModel:
    """The model shipped with the package (fitted on the IRC training split)."""
    return load_model_from(
        Path(str(resources.files("conversation.selection").joinpath(WEIGHTS_FILE)))
    )


WeightsT = TypeVar("WeightsT", bound=BaseModel)


def read_weights(path: Path, model_type: type[WeightsT], refit: str) -> WeightsT:
    """A weights file read into its model; a missing, unreadable or malformed file is one
    WeightsError line ending with ``refit`` (what to do about it). Shared by every fitted model
    the package ships, so each says its faults the same way."""
    try:
        return model_type.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise WeightsError(f"{path}: cannot be read ({error.strerror}); {refit}") from None
    except UnicodeDecodeError:
        raise WeightsError(f"{path}: not UTF-8 text; {refit}") from None
    except json.JSONDecodeError as error:
        raise WeightsError(
            f"{path}: not valid JSON ({error.msg}, line {error.lineno}); {refit}"
        ) from None
    except RecursionError:
        raise WeightsError(f"{path}: nested too deeply to be weights; {refit}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise WeightsError(f"{path}: {where}: {first['msg']}; {refit}") from None


def load_model_from(path: Path) -> RelevanceModel:
    """The model in ``path``; a missing, unreadable or malformed file is one WeightsError line."""
    refit = "restore it or run python -m lab.train_relevance"
    model = read_weights(path, RelevanceModel, refit)
    third = model.third.features if model.third is not None else THIRD_FEATURES
    if (
        model.first.features != FEATURES
        or model.second.features != SECOND_FEATURES
        or third != THIRD_FEATURES
    ):
        raise WeightsError(f"{path}: fitted for other features; run python -m lab.train_relevance")
    if model.answers is not None and model.answers.features != (
        *model.deciding.features,
        ANSWER_SCORE,
    ):
        raise WeightsError(
            f"{path}: answers: fitted for other features; run python -m lab.train_relevance"
        )
    if model.answers is None and model.answer_best > 0:
        # The operator asked for the likeliest answered messages and would silently get none.
        raise WeightsError(
            f"{path}: answer_best is {model.answer_best} but answers (the ranking it reads) "
            f"is missing; set answer_best to 0 or {refit}"
        )
    fault = _shape_fault(model)
    if fault is not None:
        raise WeightsError(f"{path}: {fault}; {refit}")
    if not 0.0 <= model.second_look_floor <= model.always_best_floor:
        # Above the floor of the best few, a skipped candidate could be forced in unexplained.
        raise WeightsError(
            f"{path}: second_look_floor must lie between 0 and always_best_floor; {refit}"
        )
    return model


# The explaining walk nests one indented block per level, and Python allows 100 levels of
# indentation (depth 98 at most); the scoring expression would take about 200.
MAX_TREE_DEPTH = 64


def _shape_fault(model: RelevanceModel) -> str | None:
    """What would break scoring mid-answer, said once, at load (see ``stages_fault``)."""
    stages = {"second": model.second}
    if model.third is not None:
        stages["third"] = model.third
    if model.answers is not None:
        stages["answers"] = model.answers
    return stages_fault("first", model.first, stages)


def stages_fault(label: str, first: LogisticStage, stages: dict[str, TreeStage]) -> str | None:
    """What would break a fitted model of a logistic look and tree stages (the relevance and
    the follow models alike): an array of the wrong length, a child index that leads outside
    its tree or back up it, a number that is not finite; messages name each part by label."""
    sizes = {len(first.features), len(first.means), len(first.scales), len(first.weights)}
    if len(sizes) != 1:
        return f"{label}: features, means, scales and weights differ in length"
    for label, stage in stages.items():
        if len(stage.means) != len(stage.features):
            return f"{label}: features and means differ in length"
    numbers = [*first.means, *first.scales, *first.weights, first.bias]
    for stage in stages.values():
        numbers.extend((*stage.means, stage.base))
    if not all(math.isfinite(number) for number in numbers) or 0.0 in first.scales:
        return "a number that is not finite (or a zero scale)"
    for label, stage in stages.items():
        for index, tree in enumerate(stage.trees):
            fault = tree_fault(tree, len(stage.features))
            if fault is not None:
                return f"{label}.trees.{index}: {fault}"
    return None


def tree_fault(tree: Tree, features: int) -> str | None:
    """What would break one tree mid-answer: arrays of other lengths, a number that is not
    finite, a node leading outside the tree, back up it, or too deep (shared with following)."""
    nodes = len(tree.feature)
    arrays = (tree.threshold, tree.left, tree.right, tree.values)
    if nodes == 0 or any(len(array) != nodes for array in arrays):
        return "node arrays empty or of different lengths"
    if not all(math.isfinite(number) for number in (*tree.threshold, *tree.values)):
        return "a number that is not finite"
    depth, parents = [0] * nodes, [0] * nodes
    for node, feature in enumerate(tree.feature):
        children = (tree.left[node], tree.right[node])
        if feature >= 0 and (feature >= features or not all(node < c < nodes for c in children)):
            return f"node {node} points outside the tree or its features"
        for child in children if feature >= 0 else ():
            depth[child], parents[child] = depth[node] + 1, parents[child] + 1
            if not math.isfinite(tree.values[child] - tree.values[node]):
                return f"node {child} changes the value by more than a float holds"
    # Trees compile to nested code: a shared node doubles it, depth is bounded.
    if max(parents) > 1 or max(depth) > MAX_TREE_DEPTH:
        return f"a node with two parents, or deeper than {MAX_TREE_DEPTH}"
    return None
