"""``python -m bot replay``: what the bot would send the model for one message of a channel log.

Operators use it to see *why* the bot answered as it did, and to tune ``[context]``: every
message is shown with the reason it was selected and the message it came through. The prompt is
the one the bot would have sent at the time of the trigger (``{now}`` is the trigger's time).
Exit code 1 when the model was asked and did not answer, so scripts can tell.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.answering.asking import cache_hints
from bot.answering.notices import bot_notices
from bot.answering.prompt_budget import PromptBudgeter
from bot.config.export_settings import settings_for_export
from bot.config.schema import Config
from bot.errors import CommandError
from bot.model.client import ModelClient
from bot.model.errors import ModelError
from conversation.articles import ArticleService
from conversation.memory import BoundedMemory, Continuity, remembered_prompt, sent_prompt
from conversation.prompt import (
    SHORTENED,
    MaterializeOptions,
    Materializer,
    PreparedPrompt,
    is_others_label,
    persona_for,
    prepare_prompt,
)
from conversation.replay import LogSource, ReplayCaches
from conversation.selection import ContextBuilder
from conversation.sources import ChannelReader


def replay(args: argparse.Namespace, config: Config) -> int:
    source = LogSource.from_file(args.log)
    if not source.messages:
        raise CommandError(f"{args.log}: the log has no messages")
    trigger = source.messages[-1] if args.trigger is None else source.message(args.trigger)
    if trigger is None:
        raise CommandError(f"{args.log}: no message {args.trigger} in the log")
    pages = offline_pages(args.log)
    config = settings_for_export(config, source.export)  # the channel's own table, if any
    prepared, answer = asyncio.run(
        _prepare(source, trigger, config, pages, not args.no_model, warm=args.warm)
    )
    if args.format == "json":
        print(json.dumps(_as_json(prepared, answer), indent=2, ensure_ascii=False))
    else:
        _print_text(prepared, answer, source, pages, warm=args.warm)
    return 1 if answer.failed else 0


@dataclass(frozen=True)
class ModelAnswer:
    text: str
    failed: bool = False


def offline_pages(log: Path) -> dict[str, Path]:
    """Bundled copies of linked pages beside the log (``pages/index.json``: url -> file)."""
    index = log.parent / "pages" / "index.json"
    if not index.exists():
        return {}
    try:
        mapping = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise CommandError(f"{index}: not a readable JSON index of pages ({error})") from error
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise CommandError(f"{index}: expected an object mapping URLs to file names")
    pages = {url: index.parent / name for url, name in mapping.items()}
    for url, page in pages.items():
        if not page.is_file():
            raise CommandError(f"{index}: the page for {url} is missing ({page})")
    return pages


async def _prepare(
    source: LogSource,
    trigger: Any,
    config: Config,
    pages: dict[str, Path],
    ask_model: bool,
    *,
    warm: bool = False,
) -> tuple[PreparedPrompt, str]:
    async for prepared in log_prompts(source, [trigger], config, pages, warm=warm):
        if not ask_model:
            return prepared, ModelAnswer("(not asked: --no-model shows only the prompt)")
        return prepared, await _ask_model(prepared, config)
    raise AssertionError("one trigger gives one prompt")


async def log_prompts(
    source: LogSource,
    triggers: Iterable[Any],
    config: Config,
    pages: dict[str, Path],
    *,
    warm: bool = False,
    answered: bool = False,
) -> AsyncIterator[PreparedPrompt]:
    """The prompt of each trigger as the bot would send it at the time (``{now}`` is the
    trigger's time), each built from a cold cache (``warm``: the cache of a bot that saw the
    log's messages arrive); one article service for them all.

    ``answered``: each trigger counts as answered by the bot, in order, so a trigger that
    continues an earlier one's conversation gets the request that starts with that one's
    (``conversation.memory``; the log holds no answers, so none follows it)."""
    options = MaterializeOptions(
        bot_user_id=source.bot_user_id,
        vision=config.model.vision,
        max_text_chars=config.attachments.max_text_chars,
        max_text_attachments=config.attachments.max_text_attachments,
        notices=bot_notices(),
    )
    builder = ContextBuilder(config.context)
    async with ArticleService(config.articles, offline_pages=pages) as articles:
        materializer = Materializer(options, articles)
        persona = persona_for(config.model.system_prompt, source.bot_name, source.channel)
        budgeter = PromptBudgeter(config.model)  # the conservative count: no store here
        caches = ReplayCaches(source, warm=warm)
        memory = BoundedMemory() if answered else None
        continuity = Continuity(max_total=config.context.max_total)
        for trigger in triggers:
            reader = ChannelReader(source, caches.for_trigger(trigger.id))
            prepared = await prepare_prompt(
                trigger,
                reader,
                builder,
                materializer,
                persona,
                budget=budgeter.budget(),
                counter=budgeter.counter(),
                now=trigger.created_at,
            )
            if memory is not None:
                prepared, previous = await remembered_prompt(
                    prepared, memory, source.channel_id, continuity=continuity,
                    budget=budgeter.budget(), counter=budgeter.counter(),
                )  # fmt: skip
                memory.remember_now(sent_prompt(prepared, source.channel_id, previous=previous))
            yield prepared


async def _ask_model(prepared: PreparedPrompt, config: Config) -> ModelAnswer:
    settings = config.model.model_copy(
        update={"max_retries": 0, "connect_timeout_seconds": 3.0, "stream": False}
    )
    async with ModelClient(settings) as client:
        try:
            completion = await client.complete(
                prepared.request_messages, cache=cache_hints(prepared)
            )
        except ModelError as error:
            return ModelAnswer(
                f"(no model answered at {settings.base_url}: {error.detail}; "
                "point [model] base_url and name at a running model to see its answer, or "
                "pass --no-model to show only the prompt)",
                failed=True,
            )
    return ModelAnswer(completion.text)


def _reason_label(kind: str, via: int | None, numbers: dict[int, int]) -> str:
    if via is None:
        return kind
    return f"{kind} via #{numbers[via]}" if via in numbers else f"{kind} via {via}"


def _as_json(prepared: PreparedPrompt, answer: ModelAnswer) -> dict[str, Any]:
    selection = prepared.selection
    fitted = prepared.fitted
    return {
        "trigger": str(selection.trigger.id),
        "messages": prepared.request_messages,
        "tokens": fitted.tokens if fitted else None,
        "budget": {
            "prompt_tokens": fitted.total,
            "limit": fitted.budget.limit,
            "window": fitted.budget.window,
            "reserve": fitted.budget.reserve,
            "cuts": [cut.describe() for cut in fitted.cuts],
        }
        if fitted
        else None,
        "reasons": selection.report().reasons,
        "rest_calls": selection.rest_calls,
        "articles": [
            {"url": r.url, "status": str(r.status), "reason": r.reason}
            for r in prepared.materialized.articles
        ],
        "problems": selection.problems + prepared.materialized.problems,
        "answer": answer.text,
        "model_failed": answer.failed,
    }


def _print_text(
    prepared: PreparedPrompt,
    answer: ModelAnswer,
    source: LogSource,
    pages: dict[str, Path],
    *,
    warm: bool = False,
) -> None:
    out = sys.stdout
    selection = prepared.selection
    earlier = sum(1 for message in source.messages if message.id < selection.trigger.id)
    out.write(
        f"Context for message {selection.trigger.id} of {source.export.path} "
        f"({len(selection.messages)} of {earlier} earlier messages selected, "
        f"{selection.rest_calls} REST call(s) with a {'warm' if warm else 'cold'} cache)\n"
    )
    if pages:
        out.write(
            f"Linked pages read from the offline copies in {next(iter(pages.values())).parent}\n"
        )
    out.write("\n")
    nodes = prepared.graph.snapshot().nodes()
    numbers = {int(n.message_id): i for i, n in enumerate(nodes) if n.message_id is not None}
    fitted = prepared.fitted
    if fitted is not None:
        out.write(f"Token budget: {fitted.summary()}\n\n")
    for number, node in enumerate(nodes):
        if node.metadata and node.metadata.get("trigger"):
            label = "trigger"
        elif node.role == "system":
            label = "system prompt"
        elif is_others_label(node):
            label = "label: the other recent messages follow"
        else:
            reasons = selection.reasons.get(int(node.message_id or 0), [])
            label = (
                ", ".join(
                    _reason_label(r.kind, r.via, numbers) + r.describe_score() for r in reasons
                )
                or "-"
            )
        if node.metadata and node.metadata.get("budget") == "shortened":
            label += f", {SHORTENED}"
        when = node.created_at.strftime("%Y-%m-%d %H:%M") if node.created_at else ""
        tokens = f"  ~{fitted.tokens[number]} tokens" if fitted is not None else ""
        out.write(f"#{number:<3} {node.role:<9} {when:<16}  [{label}]{tokens}\n")
        for line in node.content.splitlines() or [""]:
            out.write(f"     {line}\n")
    for article in prepared.materialized.articles:
        status = "read" if article.ok else f"not used ({article.reason})"
        out.write(f"\narticle {article.url}: {status}")
    for cut in fitted.cuts if fitted is not None else ():
        out.write(f"\n{cut.describe()}")
    for problem in [*selection.problems, *prepared.materialized.left_out]:
        out.write(f"\nnote: {problem}")
    out.write(f"\n\nModel answer:\n{answer.text}\n")
