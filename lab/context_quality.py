"""Context quality on the IRC disentanglement logs, scored as ../shared/data/README.md defines.

For every trigger T (an annotated message with an earlier message in its gold conversation) the
gold context G is the earlier messages of that conversation and C the selected context (T
excluded). Prints micro precision, recall, F1 and parent recall for our builder and, in the same
run, for the baselines: last 30, last 10, reply chain only, and the original design's algorithm read
literally.

    python -m lab.context_quality [DATA_DIR] [--set key=value ...] [--by-domain] [--all-replies]
        [--per-log] [--folds MANIFEST] [--warm]

``--folds`` scores each fold's held-out logs with that fold's weights and prints each log, the
folds' mean and spread.

Each build starts from an empty cache (cold, as after a restart: REST calls counted), or with
``--warm`` from the cache a bot watching the channel since the log began holds.

``--all-replies`` scores the logs as a Discord server where people always use the reply button:
every annotated message that has a gold parent replies to it (the logs carry a reference for
about 30% of them), to check the builder where reply references are the rule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from conversation.common import ContextSettings
from conversation.replay import (
    LogSource,
    ReplayCaches,
    Score,
    labelled_from,
    load_gold,
    parse_export,
)
from conversation.selection import ContextBuilder, WeightsError, load_model_from
from conversation.sources import ChannelReader, MessageLike
from lab import baselines
from lab.options import lab_options

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "irc-dev"

Selector = Callable[[MessageLike, ChannelReader], Awaitable[list[MessageLike]]]


def gold_triggers(gold_path: Path) -> dict[int, tuple[set[int], set[int]]]:
    """Trigger id -> (gold context, gold parents), per the data README."""
    return {t: (set(g.context), set(g.parents)) for t, g in load_gold(gold_path).items()}


class LogMeanings:
    """The embeddings of the log being scored (``lab.meanings``' cache), for the builder's
    meaning features: one table, swapped log by log (message ids repeat across logs)."""

    def __init__(self, cache: Path | None) -> None:
        self.cache = cache
        self.table: dict = {}

    def read(self, log_path: Path) -> None:
        if self.cache is not None:
            from lab.meanings import read_meanings

            self.table = read_meanings(self.cache, log_path)

    def __call__(self, message: MessageLike):
        return self.table.get(message.id)

    @property
    def hook(self) -> LogMeanings | None:
        """What the builder is given: nothing without a cache (the score reads no meaning)."""
        return self if self.cache is not None else None


def _selector(settings: ContextSettings, meanings: LogMeanings | None = None) -> Selector:
    builder = ContextBuilder(settings, meanings=meanings.hook if meanings else None)

    async def select(trigger: MessageLike, reader: ChannelReader) -> list[MessageLike]:
        return (await builder.build(trigger, reader)).messages

    return select


def selectors(
    settings: ContextSettings, meanings: LogMeanings | None = None
) -> dict[str, Selector]:
    # The original design and the rules-only builder as they were before the learned score:
    # 10 recent messages always in.
    before = settings.model_copy(update={"min_linear": 10, "learned_relevance": False})
    ablation = settings.model_copy(update={"learned_relevance": False})
    return {
        "threadwise builder": _selector(settings, meanings),
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
    warm: bool = False,
    meanings: Path | None = None,
):
    """Scores per selector (per ``selector [domain]`` too with ``by_domain``)."""
    scores: dict[str, Score] = {}
    log_meanings = LogMeanings(meanings)
    chosen = {k: v for k, v in selectors(settings, log_meanings).items() if not only or k in only}
    for log_path in sorted(data_dir.glob("*.json")):
        if log_path.name.endswith(".gold.json"):
            continue
        log_meanings.read(log_path)
        source = with_all_replies(log_path) if all_replies else LogSource.from_file(log_path)
        triggers = gold_triggers(log_path.with_suffix(".gold.json"))
        for name, select in chosen.items():
            score = scores.setdefault(name, Score())
            part = scores.setdefault(f"{name} [{domain_of(log_path)}]", Score())
            started = time.perf_counter()
            caches = ReplayCaches(source, warm=warm)
            for trigger_id, (gold, parents) in sorted(triggers.items()):
                trigger = source.message(trigger_id)
                reader = ChannelReader(source, caches.for_trigger(trigger_id))
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


async def score_logs(
    data_dir: Path,
    settings: ContextSettings,
    names: list[str] | None = None,
    model=None,
    *,
    warm: bool = False,
    labelled_only: bool = False,
    meanings: Path | None = None,
) -> dict[str, Score]:
    """The builder's score on each log (all of them, or those named), with ``model`` if given;
    ``labelled_only``: contexts and labels cut at the log's first annotated message
    (``gold.labelled_from``), a diagnostic of what the label gap before it costs."""
    log_meanings = LogMeanings(meanings)
    builder = ContextBuilder(settings, model, meanings=log_meanings.hook)
    scores: dict[str, Score] = {}
    for log_path in sorted(data_dir.glob("*.json")):
        if log_path.name.endswith(".gold.json") or (names and log_path.stem not in names):
            continue
        log_meanings.read(log_path)
        source = LogSource.from_file(log_path)
        score = scores[log_path.stem] = Score()
        started = time.perf_counter()
        caches = ReplayCaches(source, warm=warm)
        gold_path = log_path.with_suffix(".gold.json")
        first = labelled_from(gold_path) if labelled_only else 0
        for trigger_id, gold in sorted(load_gold(gold_path).items()):
            reader = ChannelReader(source, caches.for_trigger(trigger_id))
            selection = await builder.build(source.message(trigger_id), reader)
            picked = {m for m in selection.ids if m >= first}
            score.add(trigger_id, picked, gold.from_message(first))
            score.rest_calls += reader.rest_calls
        score.seconds = time.perf_counter() - started
    return scores


class FoldError(ValueError):
    """A folds manifest that cannot be used, as one line naming the file and the fault."""


def read_manifest(manifest: Path, settings: ContextSettings) -> list[tuple[Path, list[str], int]]:
    """Each fold of a ``lab.relevance_folds`` manifest: its weights file, its held-out logs and
    the ``min_linear`` chosen with them; a broken manifest is one FoldError line."""
    try:
        folds = json.loads(manifest.read_text(encoding="utf-8"))["folds"]
        plan = [
            (
                manifest.parent / fold["weights"],
                list(fold["held_out"]),
                int(fold.get("min_linear", settings.min_linear)),
            )
            for fold in folds
        ]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise FoldError(
            f"{manifest}: not a folds manifest (run python -m lab.relevance_folds): "
            f"{type(error).__name__}: {error}"
        ) from None
    return plan


def score_folds(
    data_dir: Path,
    manifest: Path,
    settings: ContextSettings,
    *,
    warm: bool = False,
    labelled_only: bool = False,
    meanings: Path | None = None,
) -> list[dict[str, Score]]:
    """Each fold's held-out logs scored with that fold's weights (``lab.relevance_folds``)
    and the ``min_linear`` chosen with them."""
    results = []
    for weights, held_out, min_linear in read_manifest(manifest, settings):
        model = load_model_from(weights)
        # The recent messages always in, as the fold chose them with its threshold.
        fold_settings = settings.model_copy(update={"min_linear": min_linear})
        scored = score_logs(
            data_dir,
            fold_settings,
            held_out,
            model,
            warm=warm,
            labelled_only=labelled_only,
            meanings=meanings,
        )
        results.append(asyncio.run(scored))
    return results


def _total(scores: Iterable[Score]) -> Score:
    total = Score()
    for s in scores:
        for name in ("hits", "selected", "gold", "triggers", "with_parent", "parent_found"):
            setattr(total, name, getattr(total, name) + getattr(s, name))
        total.rest_calls += s.rest_calls
        total.seconds += s.seconds
    return total


def print_per_log(scores: dict[str, Score], fold: int | None = None) -> None:
    """One row per log: precision, recall, F1, parent recall, how many it picks per trigger."""
    for name, s in scores.items():
        where = f" | {fold}" if fold is not None else ""
        print(
            f"| {name}{where} | {s.triggers} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} "
            f"| {s.parent_recall:.3f} | {s.selected / max(s.triggers, 1):.1f} |"
        )


def logged_f1(text: str) -> dict[str, float]:
    """Each log's F1 in an earlier output of this command (its ``--folds`` or ``--per-log``
    rows), by log name: what ``--against`` compares with."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        # A log row: its name, then (with --folds) the fold, then the triggers, all whole
        # numbers but the name; the selector and fold tables' rows are not.
        counts = 2 if len(cells) == 8 else 1 if len(cells) == 7 else 0
        if counts and not cells[0].isdigit() and all(c.isdigit() for c in cells[1 : 1 + counts]):
            found[cells[0]] = float(cells[counts + 3])
    return found


def print_against(
    scores: dict[str, Score], earlier: dict[str, float], source: str, tolerance: float
) -> None:
    """Which logs gained and which lost F1 against ``earlier``, naming those that lost more
    than ``tolerance``: a change that helps one channel and hurts another shows."""
    both = sorted(set(scores) & set(earlier))
    change = {name: round(scores[name].f1, 3) - earlier[name] for name in both}
    worse = sorted((c, name) for name, c in change.items() if c < -tolerance - 1e-9)
    better = sum(c > tolerance + 1e-9 for c in change.values())
    print(
        f"against {source} ({len(both)} logs in both): {sum(c > 0 for c in change.values())} "
        f"gain, {sum(c < 0 for c in change.values())} lose; {better} gain and {len(worse)} lose "
        f"more than {tolerance:g}"
    )
    for c, name in worse:
        print(
            f"  {name} ({scores[name].triggers} triggers): {earlier[name]:.3f} -> "
            f"{scores[name].f1:.3f} ({c:+.3f})"
        )
    missing = sorted(set(earlier) - set(scores))
    if missing:
        print(f"  not scored here: {', '.join(missing)}")


def print_folds(folds: list[dict[str, Score]], *, warm: bool = False) -> None:
    """Per-log figures, each fold's micro figures, and the folds' mean and spread."""
    print("| log | fold | triggers | precision | recall | F1 | parent recall | picked |")
    print("|---|---|---|---|---|---|---|---|")
    for k, scores in enumerate(folds):
        print_per_log(scores, k + 1)
    print()
    print("| fold | triggers | precision | recall | F1 | parent recall | picked |")
    print("|---|---|---|---|---|---|---|")
    totals = [_total(scores.values()) for scores in folds]
    for k, s in enumerate(totals):
        print(
            f"| {k + 1} | {s.triggers} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} "
            f"| {s.parent_recall:.3f} | {s.selected / max(s.triggers, 1):.1f} |"
        )
    for label, measure in (
        ("precision", lambda s: s.precision),
        ("recall", lambda s: s.recall),
        ("F1", lambda s: s.f1),
        ("parent recall", lambda s: s.parent_recall),
    ):
        values = [measure(s) for s in totals]
        print(
            f"{label}: mean {statistics.fmean(values):.3f}, spread {min(values):.3f} to "
            f"{max(values):.3f} (sd {statistics.pstdev(values):.3f})"
        )
    everything = _total(totals)
    print(
        f"all held-out triggers: P {everything.precision:.3f} R {everything.recall:.3f} "
        f"F1 {everything.f1:.3f} parent recall {everything.parent_recall:.3f}; "
        f"REST/trigger ({_mode(warm)}) {everything.rest_calls / max(everything.triggers, 1):.2f}"
    )


def _mode(warm: bool) -> str:
    return "warm" if warm else "cold"


def print_table(scores: dict[str, Score], settings: ContextSettings, *, warm: bool = False) -> None:
    baseline = scores.get("original tik/tok, literal")
    first = next(iter(scores.values()))
    print(
        f"context quality, min_linear={settings.min_linear} max_total={settings.max_total} "
        f"threshold={settings.time_threshold_minutes} min; "
        f"{first.triggers} triggers"
    )
    print(
        "| selector | precision | recall | F1 | parent recall | F1 vs original "
        f"| REST/trigger ({_mode(warm)}) |"
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
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[lab_options(DEFAULT_DATA, fold_weights=True)],
    )
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
    parser.add_argument(
        "--per-log", action="store_true", help="also print the builder's figures on each log"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="each build starts from the cache a bot watching the channel holds (the log up to "
        "the trigger), not an empty one",
    )
    parser.add_argument(
        "--labelled-only",
        action="store_true",
        help="with --folds: score only from each log's first annotated message on (before it, "
        "a message of the trigger's conversation is labelled only when a label links it; a "
        "diagnostic, not the data README's figure)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="OUTPUT",
        help="with --folds or --per-log: compare each log's F1 with an earlier output of this "
        "command and name the logs that lost more than --tolerance",
    )
    parser.add_argument("--tolerance", type=float, default=0.02, help="for --against")
    parser.add_argument(
        "--meanings",
        type=Path,
        metavar="CACHE",
        help="the logs' embeddings (python -m lab.meanings): the builder reads what each "
        "message means; without it, the meaning features are missing",
    )
    args = parser.parse_args()
    if args.labelled_only and args.folds is None:
        parser.exit(2, "error: --labelled-only: only with --folds\n")
    earlier: dict[str, float] = {}
    if args.against is not None:
        if args.folds is None and not args.per_log:
            parser.exit(2, "error: --against: only with --folds or --per-log\n")
        try:
            earlier = logged_f1(args.against.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            parser.exit(2, f"error: --against: {args.against}: {error}\n")
        if not earlier:
            parser.exit(2, f"error: --against: {args.against}: no log rows in it\n")
    if not any(Path(args.data).glob("*.gold.json")):
        parser.exit(
            2,
            f"error: {args.data}: no scored logs here (*.json with a .gold.json beside each); "
            "pass the folder of the converted IRC logs as DATA_DIR\n",
        )
    overrides = dict(item.split("=", 1) for item in args.set)
    settings = ContextSettings.model_validate(overrides)
    if args.folds is not None:
        try:
            folds = score_folds(
                args.data,
                args.folds,
                settings,
                warm=args.warm,
                labelled_only=args.labelled_only,
                meanings=args.meanings,
            )
        except (FoldError, WeightsError) as error:
            parser.exit(2, f"error: {error}\n")
        print_folds(folds, warm=args.warm)
        if earlier:
            print()
            print_against(
                {name: s for fold in folds for name, s in fold.items()},
                earlier,
                str(args.against),
                args.tolerance,
            )
        return
    scores = asyncio.run(
        score_all(
            args.data,
            settings,
            set(args.only or []),
            by_domain=args.by_domain,
            all_replies=args.all_replies,
            warm=args.warm,
            meanings=args.meanings,
        )
    )
    print_table(scores, settings, warm=args.warm)
    if args.per_log:
        print()
        print("| log | triggers | precision | recall | F1 | parent recall | picked |")
        print("|---|---|---|---|---|---|---|")
        per_log = asyncio.run(
            score_logs(args.data, settings, warm=args.warm, meanings=args.meanings)
        )
        print_per_log(per_log)
        if earlier:
            print()
            print_against(per_log, earlier, str(args.against), args.tolerance)


if __name__ == "__main__":
    main()
