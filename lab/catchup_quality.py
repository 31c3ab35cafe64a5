"""What ``/catchup`` would summarise on the IRC logs, scored against the gold conversations.

    python -m lab.catchup_quality [DATA_DIR] [--hours 1] [--most 5]

A speaker "returns" at each of their annotated messages when they did not speak in the hour
before it; what they missed is the hour before it (only its labelled messages: from a log's first
annotated message on, every message carries its gold conversation). The messages are grouped as
``/catchup`` groups them (``conversation.selection.group_conversations``), and the ``--most``
largest conversations of two messages or more are the ones it would summarise. For those:

- purity: of the messages a summary links, the share in its conversation's majority gold
  conversation (micro, over every summary);
- coverage: of the messages of each gold conversation of the hour (two messages or more), the
  share the summary that holds most of them links (micro, over every gold conversation);
- conversations: how many summaries, against how many gold conversations of two or more.

Beside the builder's grouping: the rules alone (``learned_relevance = false``: replies and
mentions) and one summary of the whole hour, as channel summarisers do. No model is called.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from conversation.common import ContextSettings
from conversation.replay import LogSource, gold_path_for, labelled_from
from conversation.selection import (
    ContextBuilder,
    Conversation,
    Join,
    group_conversations,
    worth_summarising,
)
from conversation.sources import MessageLike
from lab.follow import DATA
from lab.options import lab_options

MOST = 5
Grouping = Callable[[Sequence[MessageLike]], list[Conversation]]


@dataclass
class Tally:
    linked: int = 0
    pure: int = 0
    gold: int = 0
    covered: int = 0
    summaries: int = 0
    gold_conversations: int = 0
    returns: int = 0

    def line(self, name: str) -> str:
        purity = self.pure / self.linked if self.linked else 0.0
        coverage = self.covered / self.gold if self.gold else 0.0
        return (
            f"{name:<40} {purity:>6.3f} {coverage:>8.3f} "
            f"{self.summaries / max(self.returns, 1):>9.2f} "
            f"{self.gold_conversations / max(self.returns, 1):>6.2f}"
        )


def one_summary(messages: Sequence[MessageLike]) -> list[Conversation]:
    """The hour as one conversation: what a summary of the last messages reads."""
    return [Conversation(tuple(Join(m.id, None, "in the hour") for m in messages))]


def groupings() -> dict[str, Grouping]:
    scored = ContextBuilder(ContextSettings())
    rules = ContextBuilder(ContextSettings(learned_relevance=False))
    return {
        "threadwise grouping (reply, score)": lambda m: group_conversations(m, scored),
        "rules only (reply, mention)": lambda m: group_conversations(m, rules),
        "one summary of the hour": one_summary,
    }


def returns_in(
    messages: Sequence[MessageLike], first: int, hours: float
) -> list[tuple[int, list[MessageLike]]]:
    """(index of the returning message, the labelled messages of the hour before it)."""
    span = timedelta(hours=hours)
    found: list[tuple[int, list[MessageLike]]] = []
    last_spoke: dict[int, int] = {}
    for i, message in enumerate(messages):
        author = message.author.id
        before = last_spoke.get(author)
        last_spoke[author] = i
        if message.id < first:
            continue
        if before is not None and message.created_at - messages[before].created_at < span:
            continue
        start = message.created_at - span
        missed = [m for m in messages[:i] if m.created_at >= start and m.id >= first]
        if len(missed) >= 10:
            found.append((i, missed))
    return found


def score_return(
    tally: Tally,
    chosen: Sequence[Conversation],
    missed: Sequence[MessageLike],
    label: dict[int, str],
) -> None:
    tally.returns += 1
    tally.summaries += len(chosen)
    for conversation in chosen:
        labels = Counter(label[m] for m in conversation.message_ids)
        tally.linked += len(conversation.message_ids)
        tally.pure += labels.most_common(1)[0][1]
    gold = Counter(label[m.id] for m in missed)
    for name, size in gold.items():
        if size < 2:
            continue
        tally.gold_conversations += 1
        tally.gold += size
        tally.covered += max(
            (sum(label[m] == name for m in c.message_ids) for c in chosen), default=0
        )


def score_log(
    path: Path, hours: float, most: int, ways: dict[str, Grouping], tallies: dict[str, Tally]
) -> None:
    gold_path = gold_path_for(path)
    labels = json.loads(gold_path.read_text(encoding="utf-8"))["messages"]
    label = {int(k): str(v["conversation"]) for k, v in labels.items()}
    messages = LogSource.from_file(path).messages
    for _, missed in returns_in(messages, labelled_from(gold_path), hours):
        missed = [m for m in missed if m.id in label]
        for name, grouping in ways.items():
            chosen = worth_summarising(grouping(missed), most)
            score_return(tallies.setdefault(name, Tally()), chosen, missed, label)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], parents=[lab_options(DATA / "irc-dev")]
    )
    parser.add_argument("--hours", type=float, default=1.0, help="how long the speaker was away")
    parser.add_argument("--most", type=int, default=MOST, help="conversations summarised at most")
    args = parser.parse_args()
    tallies: dict[str, Tally] = {}
    logs = sorted(p for p in Path(args.data).glob("*.json") if not p.name.endswith(".gold.json"))
    ways = groupings()
    for path in logs:
        score_log(path, args.hours, args.most, ways, tallies)
    returns = next(iter(tallies.values())).returns if tallies else 0
    print(f"{len(logs)} logs, {returns} returns after {args.hours:g} h away, at most {args.most}")
    print(f"{'grouping':<40} {'purity':>6} {'coverage':>8} {'summaries':>9} {'gold':>6}")
    for name, tally in tallies.items():
        print(tally.line(name))


if __name__ == "__main__":
    main()
