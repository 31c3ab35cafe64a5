"""A learned score: how likely a candidate message belongs to the trigger's conversation.

The tik/tok walk proposes candidates (the temporal neighbourhood under sealing, the trigger's
reply chain); ``RelevanceModel`` describes each by its features (``conversation.selection.features``
over ``clues``), weighs the description with the stages fitted on the IRC disentanglement
training split (``python -m lab.train_relevance``; ``stages``), and decides which enter and which
the trigger likely answers. The weights file is read and checked in ``weights``.

Everything here is pure Python over small frozen ``Clue`` views, so the same code scores
replayed logs, live messages and the training data.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from conversation.selection.clues import Clue
from conversation.selection.features import (
    CHAIN,
    FEATURES,
    LATER,
    MEANING_SECOND_FEATURES,
    MEASURES,
    ONLY_WHEN_PRESENT,
    feature_rows,
    meaning_rows,
    relative_rows,
    with_addresses,
    word_weights,
)
from conversation.selection.reach import reach_rows
from conversation.selection.stages import LogisticStage, TreeStage


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
    def reads_meaning(self) -> bool:
        """Fitted with the sentence model's embeddings: its second look reads how close each
        candidate is in meaning (``features.MEANING_FEATURES``)."""
        return self.second.features == MEANING_SECOND_FEATURES

    @property
    def deciding(self) -> TreeStage:
        """The last look: its scores decide, its trees explain."""
        return self.third if self.third is not None else self.second

    def first_look(
        self, trigger: Clue, candidates: Sequence[Clue], chain: set[int]
    ) -> tuple[list[list[float]], list[float], dict[str, float]]:
        idf = word_weights([trigger, *candidates])
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
        meaning = self.reads_meaning
        rows = _with_conversation(base, trigger, candidates, first, self.anchor, idf, meaning)
        if looks < 3:
            return rows
        second = [self.second.probability(row) for row in rows]
        return _with_conversation(rows, trigger, candidates, second, self.anchor, idf, False)

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
        rows = _with_conversation(
            base, trigger, candidates, first, self.anchor, idf, self.reads_meaning, looked
        )
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
            words.append(FEATURES[CHAIN] if row[CHAIN] else "in the trigger's reply thread")
        # Only a share above 0.05 explains; the largest first, on a tie the earlier feature.
        raising = [i for i, part in enumerate(parts) if part > 0.05]
        for i in sorted(raising, key=parts.__getitem__, reverse=True):
            if len(words) >= count:
                break
            name = stage.features[i].removesuffix(LATER)
            if name in words:
                continue
            above = row[i] > stage.means[i]
            if name in ONLY_WHEN_PRESENT and not row[i]:
                continue
            if name in MEASURES:
                more, less = MEASURES[name]
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
    meaning: bool,
    only: Sequence[int] | None = None,
) -> list[tuple[float, ...]]:
    """``rows`` extended by how each candidate relates to the conversation ``scores`` found
    (of the candidates at the indices ``only``, when given; the conversation is found among
    them all), and with ``meaning``, how close it is to it in meaning."""
    anchors = {c.id for c, p in zip(candidates, scores, strict=True) if p >= anchor}
    relative = relative_rows(trigger, candidates, anchors, idf, only)
    reach = reach_rows(trigger, candidates, scores, only)
    base = rows if only is None else [rows[i] for i in only]
    if not meaning:
        return [
            (*row, *extra, *linked)
            for row, extra, linked in zip(base, relative, reach, strict=True)
        ]
    close = meaning_rows(trigger, candidates, anchors, only)
    return [
        (*row, *extra, *linked, *near)
        for row, extra, linked, near in zip(base, relative, reach, close, strict=True)
    ]
