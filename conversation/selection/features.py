"""The features the relevance score weighs, and the words an explanation uses for them.

The first look describes each candidate against the trigger alone (``feature_rows``): time gaps
and position, who speaks to whom (mentions, replies, participation), and lexical overlap whose
word weights come from the candidates themselves (a word rare in this stretch of channel counts
more), never from a fixed vocabulary of the training channel. The second look adds how a
candidate relates to the conversation the first look found (``relative_rows``) and how far it
reaches into it by its links (``conversation.selection.reach``). Feature names double as the
words of an explanation, so they say what was seen.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from conversation.selection.addressing import (
    name_key,
    named_people,
    with_written_addresses,
)
from conversation.selection.clues import Clue
from conversation.selection.reach import REACH_FEATURES

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


CHAIN = FEATURES.index("in the trigger's reply chain")


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

# How close in meaning a candidate is (``conversation.selection.meaning``: the cosine of two
# sentence embeddings) to the trigger, to the asker's closest other message, and to the
# conversation the first look found (the mean of its members, the candidate itself left out).
MEANING_FEATURES: tuple[str, ...] = (
    "meaning close to the trigger",
    "meaning close to the asker",
    "meaning close to the conversation",
)
# A similarity that cannot be known (no sentence model, or no embedding yet): below any cosine
# two sentences of the model reach, so a tree tells it apart.
NO_MEANING = -1.0

# What the second look reads: the first look's features, the relative ones, and how far each
# candidate reaches into the conversation by its links (``conversation.selection.reach``).
SECOND_FEATURES: tuple[str, ...] = FEATURES + RELATIVE_FEATURES + REACH_FEATURES
# ... and, in the model fitted with the sentence model's embeddings, how close it is in meaning.
MEANING_SECOND_FEATURES: tuple[str, ...] = SECOND_FEATURES + MEANING_FEATURES
# An optional third look reads the same again, the conversation now the one the second found.
LATER = ", second look"
THIRD_FEATURES: tuple[str, ...] = SECOND_FEATURES + tuple(
    name + LATER for name in RELATIVE_FEATURES + REACH_FEATURES
)
# The answer ranking reads the deciding look's row and, last, the score it gave.
ANSWER_SCORE = "score"


# Measures, worded for a value above and below the training mean.
MEASURES: dict[str, tuple[str | None, str | None]] = {
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
    "meaning close to the trigger": ("close in meaning to the trigger", None),
    "meaning close to the asker": ("close in meaning to the asker", None),
    "meaning close to the conversation": ("close in meaning to the conversation", None),
    "first-look score": (None, None),  # a restatement of the other features: says nothing
    "first-look rank": (None, "among the likeliest"),
    "its author's other messages": ("its author's other messages belong", None),
    "linked to a likely message": ("linked to a likely message", None),
    "silence before it": (None, "right after the message before"),
    "its author's next message": (None, "its author speaks again soon"),
}


# Measures that are zero when their condition is absent: nothing to say then.
ONLY_WHEN_PRESENT = frozenset({"messages back, trigger unlinked", "minutes back, asker's own"})


def _similarity(a: frozenset[str], b: frozenset[str], idf: dict[str, float]) -> float:
    """Overlap of two word sets, each word weighed by its rarity in the candidates (0..1)."""
    shared = a & b
    if not shared:
        return 0.0
    return sum(map(idf.__getitem__, shared)) / math.sqrt(_weight(a, idf) * _weight(b, idf))


def _weight(words: frozenset[str], idf: dict[str, float]) -> float:
    return sum(map(idf.__getitem__, words))


def word_weights(everyone: Sequence[Clue]) -> dict[str, float]:
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
        idf = word_weights(everyone)
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


def meaning_rows(
    trigger: Clue,
    candidates: Sequence[Clue],
    anchors: set[int],
    only: Sequence[int] | None = None,
) -> list[list[float]]:
    """One row of ``MEANING_FEATURES`` per candidate (per index in ``only`` when given), each
    ``NO_MEANING`` where the candidate or what it is compared with has no embedding.

    numpy is imported only when an embedding is there: the sentence model brings it, and a bot
    without the model never gets here with one."""
    indices = range(len(candidates)) if only is None else only
    known = [i for i in indices if candidates[i].meaning is not None]
    rows = {i: [NO_MEANING] * len(MEANING_FEATURES) for i in indices}
    if not known:
        return list(rows.values())
    import numpy as np

    matrix = np.stack([candidates[i].meaning for i in known])
    if trigger.meaning is not None:
        for i, value in zip(known, (matrix @ trigger.meaning).tolist(), strict=True):
            rows[i][0] = value
    # The asker's closest other message (a message is not compared with itself).
    asker = {
        k: column
        for column, k in enumerate(
            k
            for k, c in enumerate(candidates)
            if c.author == trigger.author and c.meaning is not None
        )
    }
    if asker:
        theirs = np.stack([candidates[k].meaning for k in asker])
        # einsum, not ``@``: a matrix product goes to BLAS, whose threads cost milliseconds
        # on a busy small machine for a product of microseconds.
        close = np.einsum("ij,kj->ik", matrix, theirs)
        for row, i in enumerate(known):
            if i in asker:
                close[row, asker[i]] = -np.inf
        best = close.max(axis=1)
        for i, value in zip(known, best.tolist(), strict=True):
            if value > -np.inf:
                rows[i][1] = value
    # The conversation: the trigger and the anchors, as the mean of their vectors; a member is
    # compared with the others' mean.
    members = [c.meaning for c in candidates if c.id in anchors and c.meaning is not None]
    if trigger.meaning is not None:
        members.append(trigger.meaning)
    if members:
        total = np.sum(members, axis=0)
        inside = np.array([candidates[i].id in anchors for i in known])
        rest = np.where(inside[:, None], total[None, :] - matrix, total[None, :])
        norms = np.linalg.norm(rest, axis=1)
        dots = (matrix * rest).sum(axis=1)
        for i, dot, norm in zip(known, dots.tolist(), norms.tolist(), strict=True):
            if norm > 1e-6:
                rows[i][2] = dot / norm
    return list(rows.values())
