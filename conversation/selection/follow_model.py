"""Following: whether a message that calls no one continues the bot's conversation, for the bot.

After the bot answers in a channel, members go on without a mention ("and what about the
indexes?"). Answering every message would interrupt the channel's other conversations; answering
none makes people repeat the mention. The decision here reads only the messages *before* the one
decided (so a replayed log gives the same decisions as the live bot, cut anywhere), and weighs:

- the relevance model's conversation evidence with the message as the trigger: how well the
  bot's latest (and best) message belongs to its conversation, against the best message of
  someone else (another conversation pulling it away);
- who is addressed: time and messages since the bot spoke, whether the author is the bot's last
  interlocutor or talked with it, other people speaking in between, a question, words shared with
  the bot's answer.

A message that mentions or replies to someone else is never followed; one that mentions or replies
to the bot is an explicit trigger (answered, no score). A name written as an address
(``conversation.selection.addressing``: "ben: try this") counts the same way where the bot follows:
the bot's own name is followed without a score, someone else's is not. The weights are a logistic
model fitted on the IRC training split with active speakers standing in for the bot (``python -m
lab.train_follow``), shipped as ``follow_weights.json`` and validated at load. Pure Python over
``relevance.Clue`` views, like the relevance score.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from conversation.selection.addressing import with_written_addresses, written_addressee
from conversation.selection.clues import Clue
from conversation.selection.features import SECOND_FEATURES, _similarity, word_weights
from conversation.selection.follow_meaning import FOLLOW_MEANING_FEATURES, follow_meaning_row
from conversation.selection.relevance import RelevanceModel
from conversation.selection.stages import LogisticStage, TreeStage
from conversation.selection.weights import (
    WEIGHTS_FILE,
    WeightsError,
    load_model,
    read_weights,
    stages_fault,
)

# Feature names double as the words of an explanation.
FOLLOW_FEATURES: tuple[str, ...] = (
    "belongs with the bot's latest message",
    "belongs with one of the bot's messages",
    "belongs with someone else's message",
    "the bot's message against the others'",
    "minutes since the bot spoke",
    "messages since the bot spoke",
    "its author is the bot's last interlocutor",
    "its author talked with the bot",
    "the bot addressed its author last",
    "others spoke since the bot",
    "its author spoke since the bot",
    "someone else addressed its author since the bot spoke",
    "its author's previous message addressed someone else",
    "its author's previous message addressed the bot",
    "the bot's latest message addressed someone else",
    "the bot asked a question",
    "minutes since its author spoke",
    "its author spoke right before the bot",
    "the bot's messages lately",
    "minutes since the previous message",
    "likely answers the bot's latest message",
    "likely answers one of the bot's messages",
    "likely answers someone else",
    "the bot's share of what it likely answers",
    "the bot's message is what it likely answers",
    "someone else addressed the bot since",
    "right after the bot",
    "right after someone else",
    "a question",
    "words shared with the bot's answer",
    "length",
)
# ... and, in a decision fitted with the sentence model's embeddings, how close in meaning.
MEANING_FOLLOW_FEATURES: tuple[str, ...] = FOLLOW_FEATURES + FOLLOW_MEANING_FEATURES

# How many earlier messages the relevance evidence reads (newest first); the bot's latest
# message is added when it lies further back.
WINDOW_MESSAGES = 24
DEFAULT_MINUTES = 30.0
_NEVER = math.log1p(120.0)  # "minutes since" for what is not in the window


@dataclass(frozen=True, slots=True)
class FollowDecision:
    """One message decided: answer or not, the score when the model was asked, and why.

    ``partner`` is whom the bot's conversation is with (for "continues the conversation with
    <name>"): the author when they talked with the bot, else the bot's last interlocutor.
    """

    answer: bool
    score: float | None
    why: str
    kind: str  # "mention", "reply", "followed", or "no" (kept silent)
    partner: int | None = None

    def describe(self, name_of: Callable[[int], str]) -> str:
        """The explanation line, e.g. "followed: no mention, continues the conversation with
        Ana, score 0.83"."""
        if self.kind != "followed" or self.score is None:
            return self.why
        if self.partner is None:
            return f"followed: no mention, continues the bot's conversation, score {self.score:.2f}"
        who = name_of(self.partner)
        return (
            f"followed: no mention, continues the conversation with {who}, score {self.score:.2f}"
        )


class FollowModel(BaseModel):
    """The fitted decision: which earlier message a message likely answers (logistic, over the
    relevance rows), boosted trees over ``FOLLOW_FEATURES`` (that evidence among them), and the
    default threshold (chosen on the training split, favouring precision)."""

    model_config = ConfigDict(frozen=True)

    parent: LogisticStage  # over the relevance rows: is this the message it answers?
    stage: TreeStage  # boosted trees over FOLLOW_FEATURES (or MEANING_FOLLOW_FEATURES)
    threshold: float = Field(ge=0.0, le=1.0)
    window_messages: int = Field(WINDOW_MESSAGES, ge=1, le=200)
    trained_on: str = ""
    # SHA-256 of the relevance weights file it was fitted over: its features are that model's
    # scores and rows, so a refitted relevance score needs a refitted follow decision.
    relevance_sha256: str = ""

    @property
    def reads_meaning(self) -> bool:
        """Whether its trees read how close in meaning the message is
        (``MEANING_FOLLOW_FEATURES``)."""
        return self.stage.features == MEANING_FOLLOW_FEATURES

    def score(self, row: Sequence[float]) -> float:
        return self.stage.probability(row)


def explicit(
    candidate: Clue, bot_id: int, author_of: Callable[[int], int | None]
) -> FollowDecision | None:
    """The decision the rules make alone: the bot called (answered) or someone else (never)."""
    if bot_id in candidate.mentions:
        return FollowDecision(True, None, "mentions the bot", "mention")
    if candidate.reference is not None:
        parent = author_of(candidate.reference)
        if parent == bot_id:
            return FollowDecision(True, None, "replies to the bot", "reply")
        return FollowDecision(False, None, "replies to someone else", "no")
    if candidate.mentions - {candidate.author}:
        return FollowDecision(False, None, "mentions someone else", "no")
    return None


def written(candidate: Clue, bot_id: int, window: Sequence[Clue]) -> FollowDecision | None:
    """The rules for a name written as an address to someone in ``window``: the bot's name
    is followed (the member called it, without the mention), another's never is."""
    named = written_addressee(candidate, window)
    if named is None:
        return None
    if named == bot_id:
        return FollowDecision(True, None, "followed: names the bot", "followed", candidate.author)
    return FollowDecision(False, None, "names someone else", "no")


def _addressed(clue: Clue, author_of: Callable[[int], int | None]) -> set[int]:
    people = set(clue.mentions)
    if clue.reference is not None:
        parent = author_of(clue.reference)
        if parent is not None:
            people.add(parent)
    people.discard(clue.author)
    return people


@dataclass(frozen=True, slots=True)
class FollowEvidence:
    """What the decision weighs: the feature row, whom the bot talks with, and the relevance
    rows of the earlier messages (newest first; what the parent stage is fitted on)."""

    row: list[float]
    partner: int | None
    earlier: list[Clue]
    relevance_rows: list[tuple[float, ...]]


def conversation_partners(
    bot_id: int, recent: Sequence[Clue], author_of: Callable[[int], int | None]
) -> tuple[int | None, set[int]]:
    """The bot's last interlocutor and everyone it talked with in ``recent``: people its
    messages address (mention, reply to), people whose messages address it (latest wins)."""
    partner: int | None = None
    talked: set[int] = set()
    for clue in recent:
        if clue.author == bot_id:
            people = _addressed(clue, author_of) - {bot_id}
            talked |= people
            if people:
                parent = author_of(clue.reference) if clue.reference is not None else None
                partner = parent if parent in people else min(people)
        elif bot_id in _addressed(clue, author_of):
            talked.add(clue.author)
            partner = clue.author
    return partner, talked


def follow_row(
    bot_id: int,
    earlier: Sequence[Clue],
    candidate: Clue,
    relevance: RelevanceModel,
    window: int = WINDOW_MESSAGES,
    parent: LogisticStage | None = None,
    meaning: bool = False,
) -> FollowEvidence | None:
    """``FOLLOW_FEATURES`` of ``candidate`` given the messages before it (oldest first), and
    whom the bot's conversation is with; None when the bot has not spoken in ``earlier``.

    ``parent`` scores each earlier message as the one ``candidate`` answers, from its
    relevance row (without it, as when that stage is being fitted, those features are 0).
    With ``meaning``, the row goes on with ``FOLLOW_MEANING_FEATURES`` (``NO_MEANING`` where a
    message has no embedding yet).
    """
    last_bot = next(
        (i for i in range(len(earlier) - 1, -1, -1) if earlier[i].author == bot_id), None
    )
    if last_bot is None:
        return None
    start = max(0, len(earlier) - window)
    # Names written as addresses count as mentions here too (whom the bot and others called),
    # in the window. The row reads no further back than the window, or than the message
    # before the bot's last one: only that much of ``earlier`` is copied.
    candidate, recent = with_written_addresses(candidate, earlier[start:])
    keep = min(start, max(0, last_bot - 1))
    earlier = [*earlier[keep:start], *recent]
    start, last_bot = start - keep, last_bot - keep
    bot_clue = earlier[last_bot]
    by_id = {clue.id: clue for clue in recent}
    by_id.setdefault(bot_clue.id, bot_clue)

    def author_of(message_id: int) -> int | None:
        clue = by_id.get(message_id)
        return clue.author if clue is not None else None

    partner, talked = conversation_partners(bot_id, recent, author_of)
    bot_addressed = _addressed(bot_clue, author_of)

    candidates = list(reversed(recent))  # newest first, as the walk proposes them
    if last_bot < start:
        candidates.append(bot_clue)
    scored = relevance.score_all(candidate, candidates, set())
    bot_scores = [s.score for c, s in zip(candidates, scored, strict=True) if c.author == bot_id]
    other_scores = [
        s.score
        for c, s in zip(candidates, scored, strict=True)
        if c.author not in (bot_id, candidate.author)
    ]
    latest_score = next(
        s.score for c, s in zip(candidates, scored, strict=True) if c.id == bot_clue.id
    )
    best_bot = max(bot_scores)
    best_other = max(other_scores, default=0.0)
    since = earlier[last_bot + 1 :]
    others_since = {c.author for c in since} - {bot_id, candidate.author}
    previous = earlier[-1]
    called_by_others = any(
        candidate.author in _addressed(c, author_of) for c in since if c.author != bot_id
    )
    own = next((c for c in reversed(recent) if c.author == candidate.author), None)
    own_addressed = _addressed(own, author_of) if own is not None else set()
    before_bot = earlier[last_bot - 1] if last_bot > 0 else None
    others_called_bot = any(
        bot_id in _addressed(c, author_of) for c in since if c.author != candidate.author
    )
    idf = word_weights([candidate, *candidates])
    answers = [0.0] * 5
    if parent is not None:
        likely = [parent.score(s.row)[0] for s in scored]
        mine = [p for c, p in zip(candidates, likely, strict=True) if c.author == bot_id]
        theirs = [
            p
            for c, p in zip(candidates, likely, strict=True)
            if c.author not in (bot_id, candidate.author)
        ]
        best_theirs = max(theirs, default=0.0)
        answers = [
            next(p for c, p in zip(candidates, likely, strict=True) if c.id == bot_clue.id),
            max(mine),
            best_theirs,
            sum(mine) / (sum(mine) + sum(theirs)),
            float(max(mine) >= best_theirs),
        ]
    row = [
        latest_score,
        best_bot,
        best_other,
        best_bot - best_other,
        math.log1p(max(0, candidate.at_ms - bot_clue.at_ms) / 60_000),
        math.log1p(len(since)),
        float(partner == candidate.author),
        float(candidate.author in talked),
        float(candidate.author in bot_addressed),
        math.log1p(len(others_since)),
        float(any(c.author == candidate.author for c in since)),
        float(called_by_others),
        float(bool(own_addressed - {bot_id})),
        float(bot_id in own_addressed),
        float(bool(bot_addressed - {candidate.author, bot_id})),
        float(bot_clue.question),
        math.log1p((candidate.at_ms - own.at_ms) / 60_000) if own is not None else _NEVER,
        float(before_bot is not None and before_bot.author == candidate.author),
        math.log1p(sum(c.author == bot_id for c in recent)),
        math.log1p(max(0, candidate.at_ms - previous.at_ms) / 60_000),
        *answers,
        float(others_called_bot),
        float(previous.author == bot_id),
        float(previous.author not in (bot_id, candidate.author)),
        float(candidate.question),
        _similarity(candidate.words, bot_clue.words, idf),
        math.log1p(candidate.size),
    ]
    if meaning:
        row += follow_meaning_row(candidate, bot_id, recent, bot_clue, talked)
    who = candidate.author if candidate.author in talked else partner
    return FollowEvidence(row, who, candidates, [s.row for s in scored])


def decide(
    model: FollowModel,
    bot_id: int,
    earlier: Sequence[Clue],
    candidate: Clue,
    *,
    minutes: float = DEFAULT_MINUTES,
    threshold: float | None = None,
    relevance: RelevanceModel | None = None,
) -> FollowDecision:
    """Whether the bot answers ``candidate``, from ``earlier`` (oldest first) only."""
    window = earlier[-model.window_messages :]
    by_author = {clue.id: clue.author for clue in window}

    def author_of(message_id: int) -> int | None:
        if message_id in by_author:
            return by_author[message_id]
        # A reply to an older message: look further back (rare, still causal).
        return next((c.author for c in reversed(earlier) if c.id == message_id), None)

    ruled = explicit(candidate, bot_id, author_of)
    if ruled is not None:
        return ruled
    named = written(candidate, bot_id, window)
    if named is not None and not named.answer:
        return named
    last_bot = next((c for c in reversed(earlier) if c.author == bot_id), None)
    if last_bot is None:
        return FollowDecision(False, None, "the bot has not spoken here", "no")
    gap = (candidate.at_ms - last_bot.at_ms) / 60_000
    if gap > minutes:
        return FollowDecision(False, None, f"the bot spoke {gap:.0f} minutes ago", "no")
    if named is not None:  # its name, while it follows (as the live bot checks first)
        return named
    found = follow_row(
        bot_id,
        earlier,
        candidate,
        relevance or load_model(),
        model.window_messages,
        model.parent,
        model.reads_meaning,
    )
    assert found is not None  # the bot spoke (checked above)
    partner = found.partner
    score = model.score(found.row)
    limit = model.threshold if threshold is None else threshold
    if score >= limit:
        return FollowDecision(
            True, score, f"continues the bot's conversation, score {score:.2f}", "followed", partner
        )
    why = f"not meant for the bot, score {score:.2f} under {limit:.2f}"
    return FollowDecision(False, score, why, "no", partner)


FOLLOW_WEIGHTS_FILE = "follow_weights.json"


def relevance_fingerprint() -> str:
    """SHA-256 of the shipped relevance weights file (``FollowModel.relevance_sha256``)."""
    data = resources.files("conversation.selection").joinpath(WEIGHTS_FILE).read_bytes()
    return hashlib.sha256(data).hexdigest()


_REFIT = "restore it or run python -m lab.train_follow"


@functools.cache
def load_follow_model() -> FollowModel:
    """The model shipped with the package (fitted on the IRC training split)."""
    path = Path(str(resources.files("conversation.selection").joinpath(FOLLOW_WEIGHTS_FILE)))
    return load_follow_model_from(path)


def load_follow_model_from(path: Path) -> FollowModel:
    """The model in ``path``; a missing, unreadable or malformed file is one WeightsError line."""
    model = read_weights(path, FollowModel, _REFIT)
    fault = _shape_fault(model)
    if fault is not None:
        raise WeightsError(f"{path}: {fault}; {_REFIT}")
    return model


def _shape_fault(model: FollowModel) -> str | None:
    """What would break a decision mid-channel, said once at load (like the relevance
    weights): other features, arrays of different lengths, numbers that are not finite, tree
    nodes that lead outside their tree, back up it, or too deep."""
    follow = (FOLLOW_FEATURES, MEANING_FOLLOW_FEATURES)
    if model.parent.features != SECOND_FEATURES or model.stage.features not in follow:
        return "fitted for other features"
    return stages_fault("parent", model.parent, {"stage": model.stage})
