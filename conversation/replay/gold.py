"""Scoring a context against hand-labelled conversations (a ``.gold.json`` beside a channel log).

One definition, shared by the benchmark and the studio page, so that their figures agree: a
trigger T is an annotated message with at least one earlier message in its gold conversation; its
gold context G is those earlier messages; its context C is what the builder selected, T excluded.
Precision and recall are micro-averaged over triggers (sums of hits over sums of sizes), and
parent recall is the share of triggers with a gold parent whose context holds one of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class GoldError(ValueError):
    """A gold file that cannot be read as labels, as one line naming the file."""


@dataclass(frozen=True)
class GoldTrigger:
    """What a perfect context for one trigger holds."""

    context: frozenset[int]
    parents: frozenset[int]

    def from_message(self, first: int) -> GoldTrigger:
        """The labels from message ``first`` on (ids grow along a log), for scoring only the
        part of a log where every message is labelled (``labelled_from``)."""
        return GoldTrigger(
            frozenset(m for m in self.context if m >= first),
            frozenset(m for m in self.parents if m >= first),
        )


def gold_path_for(log_path: Path) -> Path:
    """``channel.json`` -> ``channel.gold.json``, where the labels of a log live."""
    return log_path.with_suffix(".gold.json")


def load_gold(gold_path: Path) -> dict[int, GoldTrigger]:
    """Trigger id -> its gold context and parents, per the scoring rules above."""
    try:
        labels = json.loads(gold_path.read_text(encoding="utf-8"))["messages"]
        by_conversation: dict[str, list[int]] = {}
        for message_id, label in labels.items():
            by_conversation.setdefault(str(label["conversation"]), []).append(int(message_id))
        triggers: dict[int, GoldTrigger] = {}
        for message_id, label in labels.items():
            if not label["annotated"]:
                continue
            trigger = int(message_id)
            earlier = {m for m in by_conversation[str(label["conversation"])] if m < trigger}
            if earlier:
                parents = {int(p) for p in label["parents"] if int(p) < trigger}
                triggers[trigger] = GoldTrigger(frozenset(earlier), frozenset(parents))
    except OSError as error:
        raise GoldError(f"{gold_path}: cannot read: {error.strerror}") from error
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise GoldError(
            f"{gold_path}: not a gold file (expected "
            '{"messages": {id: {"annotated", "parents", "conversation"}}}): '
            f"{type(error).__name__}: {error}"
        ) from error
    return triggers


def labelled_from(gold_path: Path) -> int:
    """The first annotated message of a log: from it on every message carries its conversation;
    before it, only those a label links to one do. An earlier message of a trigger's
    conversation that no label links is missing from its gold context, so a context reaching
    before this message is counted wrong for what may be right (about 0.04 to 0.08 of such
    picks count as right on irc-train, against 0.55 to 0.69 after it)."""
    try:
        labels = json.loads(gold_path.read_text(encoding="utf-8"))["messages"]
        return min(int(message_id) for message_id, label in labels.items() if label["annotated"])
    except OSError as error:
        raise GoldError(f"{gold_path}: cannot read: {error.strerror}") from error
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise GoldError(f"{gold_path}: no annotated message: {type(error).__name__}") from error


@dataclass
class Score:
    """Running micro-averaged counts over any number of triggers."""

    hits: int = 0
    selected: int = 0
    gold: int = 0
    triggers: int = 0
    with_parent: int = 0
    parent_found: int = 0
    rest_calls: int = 0
    seconds: float = 0.0

    def add(self, trigger_id: int, context: set[int], gold: GoldTrigger) -> None:
        chosen = context - {trigger_id}
        self.triggers += 1
        self.hits += len(chosen & gold.context)
        self.selected += len(chosen)
        self.gold += len(gold.context)
        if gold.parents:
            self.with_parent += 1
            self.parent_found += bool(chosen & gold.parents)

    @property
    def precision(self) -> float:
        return self.hits / self.selected if self.selected else 0.0

    @property
    def recall(self) -> float:
        return self.hits / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def parent_recall(self) -> float:
        return self.parent_found / self.with_parent if self.with_parent else 0.0
