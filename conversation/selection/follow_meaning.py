"""How close in meaning a message is to the bot's conversation: the follow decision's optional
meaning features (issue 54).

Shared words miss a follow-up that answers in other words ("and the replicas?" after an answer
about backups); a sentence embedding (``conversation.selection.meaning``) may catch it. Each
feature is the cosine of the message's embedding with what it may continue: the bot's latest
message, the closest of the bot's messages, the closest message of someone else (another
conversation pulling it away), its author's closest earlier message, and the conversation the bot
is in (the mean of the bot's and its interlocutors' messages). A cosine that cannot be known (no
sentence model, or no embedding yet) is ``NO_MEANING``, as in the context score: the decision
never waits for an embedding.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from conversation.selection.clues import Clue
from conversation.selection.features import NO_MEANING

FOLLOW_MEANING_FEATURES: tuple[str, ...] = (
    "meaning close to the bot's latest message",
    "meaning close to one of the bot's messages",
    "meaning close to someone else's message",
    "meaning close to its author's earlier messages",
    "meaning close to the bot's conversation",
)


def follow_meaning_row(
    candidate: Clue,
    bot_id: int,
    recent: Sequence[Clue],
    bot_clue: Clue,
    talked: Collection[int],
) -> list[float]:
    """``FOLLOW_MEANING_FEATURES`` of ``candidate`` against the ``recent`` messages (the
    window, oldest first) and the bot's latest message ``bot_clue`` (which may lie before
    them); ``talked`` is whom the bot talked with there.

    numpy is imported only when an embedding is there: the sentence model brings it, and a bot
    without the model never gets here with one."""
    row = [NO_MEANING] * len(FOLLOW_MEANING_FEATURES)
    mine = candidate.meaning
    if mine is None:
        return row
    import numpy as np

    def closest(vectors: list[Any]) -> float:
        if not vectors:
            return NO_MEANING
        return float(np.einsum("ij,j->i", np.stack(vectors), mine).max())

    messages = list(recent) if any(c.id == bot_clue.id for c in recent) else [bot_clue, *recent]
    known = [c for c in messages if c.meaning is not None]
    bots = [c.meaning for c in known if c.author == bot_id]
    others = [c.meaning for c in known if c.author not in (bot_id, candidate.author)]
    own = [c.meaning for c in known if c.author == candidate.author]
    if bot_clue.meaning is not None:
        row[0] = float(bot_clue.meaning @ mine)
    row[1], row[2], row[3] = closest(bots), closest(others), closest(own)
    talk = [c.meaning for c in known if c.author == bot_id or c.author in talked]
    if talk:
        total = np.sum(talk, axis=0)
        norm = float(np.linalg.norm(total))
        if norm > 1e-6:
            row[4] = float(total @ mine) / norm
    return row
