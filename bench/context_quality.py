"""Context quality on the IRC disentanglement logs, scored as ../shared/data/README.md defines.

For every trigger T (an annotated message with an earlier message in its gold conversation) the
gold context G is the earlier messages of that conversation and C the selected context (T
excluded). Prints micro precision, recall, F1 and parent recall for our builder and, in the same
run, for the baselines: last 30, last 10, reply chain only, and the original design's algorithm read
literally.

    python -m bench.context_quality [DATA_DIR] [--set key=value ...] [--by-domain] [--all-replies]

``--all-replies`` scores the logs as a Discord server where people always use the reply button:
every annotated message that has a gold parent replies to it (the logs carry a reference for
about 30% of them), to check the builder where reply references are the rule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench import baselines
from conversation.builder import ContextBuilder
from conversation.cache import ChannelCache
from conversation.dce import parse_export
from conversation.gold import Score, load_gold
from conversation.log_source import LogSource
from conversation.reader import ChannelReader
from conversation.settings import ContextSettings
from conversation.source import MessageLike

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "irc-dev"

Selector = Callable[[MessageLike, ChannelReader], Awaitable[list[MessageLike]]]


def gold_triggers(gold_path: Path) -> dict[int, tuple[set[int], set[int]]]:
    """Trigger id -> (gold context, gold parents), per the data README."""
    return {t: (set(g.context), set(g.parents)) for t, g in load_gold(gold_path).items()}


def _selector(settings: ContextSettings) -> Selector:
    builder = ContextBuilder(settings)

    async def select(trigger: MessageLike, reader: ChannelReader) -> list[MessageLike]:
        return (await builder.build(trigger, reader)).messages

    return select


def selectors(settings: ContextSettings) -> dict[str, Selector]:
    # The original design and the rules-only builder as they were before the learned score:
    # 10 recent messages always in.
    before = settings.model_copy(update={"min_linear": 10, "learned_relevance": False})
    ablation = settings.model_copy(update={"learned_relevance": False})
    return {
        "threadwise builder": _selector(settings),
        "rules only, min_linear 10 (before the score)": _selector(before),
        "rules only, same min_linear (score off)": _selector(ablation),
        "last 30 messages": lambda t, r: baselines.last_n(t, r, 30),
        "last 10 messages": lambda t, r: baselines.last_n(t, r, 10),
        "reply chain only": baselines.reply_chain,
        "original tik/tok, literal": lambda t, r: baselines.original_literal(t, r, before),
    }


def with_all_replies(log_path: Path) -> LogSource:
    """The log with a reply reference from every annotated message to its latest gold parent."""
    export = json.loads(log_path.read_text(encoding="utf-8"))
    labels = json.loads(log_path.with_suffix(".gold.json").read_text(encoding="utf-8"))["messages"]
    by_id = {message["id"]: message for message in export["messages"]}
    for message_id, label in labels.items():
        message = by_id.get(message_id)
        parents = [int(p) for p in label["parents"] if str(p) in by_id and int(p) < int(message_id)]
        if message is None or not parents or message.get("reference"):
            continue
        message["type"] = "Reply"
        message["reference"] = {
            "messageId": str(max(parents)),
            "channelId": export["channel"]["id"],
        }
    return LogSource(parse_export(export, source=str(log_path)))


def domain_of(log_path: Path) -> str:
    """The community a log comes from: Ubuntu unless its name says otherwise."""
    for name in ("rust", "mediawiki"):
        if name in log_path.stem:
            return name
    return "ubuntu"


async def score_all(
    data_dir: Path,
    settings: ContextSettings,
    only: set[str] | None = None,
    *,
    by_domain: bool = False,
    all_replies: bool = False,
):
    """Scores per selector (per ``selector [domain]`` too with ``by_domain``)."""
    scores: dict[str, Score] = {}
    chosen = {k: v for k, v in selectors(settings).items() if not only or k in only}
    for log_path in sorted(data_dir.glob("*.json")):
        if log_path.name.endswith(".gold.json"):
            continue
        source = with_all_replies(log_path) if all_replies else LogSource.from_file(log_path)
        triggers = gold_triggers(log_path.with_suffix(".gold.json"))
        for name, select in chosen.items():
            score = scores.setdefault(name, Score())
            part = scores.setdefault(f"{name} [{domain_of(log_path)}]", Score())
            started = time.perf_counter()
            for trigger_id, (gold, parents) in triggers.items():
                trigger = source.message(trigger_id)
                reader = ChannelReader(source, ChannelCache(source.channel_id))
                context = {m.id for m in await select(trigger, reader)}
                context.discard(trigger_id)
                for counted in (score, part):
                    counted.triggers += 1
                    counted.hits += len(context & gold)
                    counted.selected += len(context)
                    counted.gold += len(gold)
                    counted.rest_calls += reader.rest_calls
                    if parents:
                        counted.with_parent += 1
                        counted.parent_found += bool(context & parents)
            score.seconds += time.perf_counter() - started
    if not by_domain:
        scores = {name: score for name, score in scores.items() if not name.endswith("]")}
    return scores


def print_table(scores: dict[str, Score], settings: ContextSettings) -> None:
    baseline = scores.get("original tik/tok, literal")
    first = next(iter(scores.values()))
    print(
        f"context quality, min_linear={settings.min_linear} max_total={settings.max_total} "
        f"threshold={settings.time_threshold_minutes} min; "
        f"{first.triggers} triggers"
    )
    print(
        "| selector | precision | recall | F1 | parent recall | F1 vs original "
        "| REST/trigger (cold) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, s in scores.items():
        original = baseline
        if name.endswith("]"):
            original = scores.get("original tik/tok, literal " + name[name.rindex("[") :])
        ratio = f"{s.f1 / original.f1:.2f}x" if original and original.f1 else "-"
        print(
            f"| {name} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | "
            f"{s.parent_recall:.3f} | {ratio} | {s.rest_calls / max(s.triggers, 1):.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a [context] setting, e.g. --set max_total=40",
    )
    parser.add_argument("--only", action="append", help="run only these selectors")
    parser.add_argument(
        "--by-domain", action="store_true", help="also score Ubuntu, rust, mediawiki apart"
    )
    parser.add_argument(
        "--all-replies",
        action="store_true",
        help="every annotated message replies to its gold parent (a server that always replies)",
    )
    args = parser.parse_args()
    if not any(Path(args.data).glob("*.gold.json")):
        parser.exit(
            2,
            f"error: {args.data}: no scored logs here (*.json with a .gold.json beside each); "
            "pass the folder of the converted IRC logs as DATA_DIR\n",
        )
    overrides = dict(item.split("=", 1) for item in args.set)
    settings = ContextSettings.model_validate(overrides)
    scores = asyncio.run(
        score_all(
            args.data,
            settings,
            set(args.only or []),
            by_domain=args.by_domain,
            all_replies=args.all_replies,
        )
    )
    print_table(scores, settings)


if __name__ == "__main__":
    main()
