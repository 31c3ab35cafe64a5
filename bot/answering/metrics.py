"""The operator's dashboard: Prometheus metrics of the answers, served on ``[metrics] port``
(by ``bot.serve.metrics_server``).

An operator running the bot for real has no numbers to watch but logs. With ``[metrics] port``
set, ``run`` serves Prometheus' text format at ``http://HOST:PORT/metrics`` (127.0.0.1 by default:
the numbers name models and say how busy the bot is, which is nobody else's business). Each
client has its own ``CollectorRegistry`` (no global state), so two bots in one process, or two
tests, never count into each other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.answering.result import AnswerResult, Asked

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
STORE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class Metrics:
    """Every number the bot exports, in its own registry."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry
        from prometheus_client.process_collector import ProcessCollector

        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)  # process_resident_memory_bytes and friends
        self._declare_answers(registry)
        self._declare_work(registry)
        self._declare_load(registry)

    def _declare_answers(self, registry: CollectorRegistry) -> None:
        """The answers and the model that wrote them."""
        from prometheus_client import Counter, Histogram

        self.answers = Counter(
            "threadwise_answers",
            "Answers finished, by outcome (success, partial, failure) and trigger kind.",
            ["outcome", "trigger"],
            registry=registry,
        )
        self.model_latency = Histogram(
            "threadwise_model_latency_seconds",
            "Time from the model request to its whole answer (retries included), by model.",
            ["model"],
            buckets=SECONDS_BUCKETS,
            registry=registry,
        )
        self.first_token = Histogram(
            "threadwise_model_time_to_first_token_seconds",
            "Time from the model request to the first streamed text, by model.",
            ["model"],
            buckets=SECONDS_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "threadwise_model_tokens",
            "Tokens the model server reported, by model and kind (prompt, cached, completion).",
            ["model", "kind"],
            registry=registry,
        )
        self.model_errors = Counter(
            "threadwise_model_errors",
            "Answers the model failed (after retries), by model.",
            ["model"],
            registry=registry,
        )

    def _declare_work(self, registry: CollectorRegistry) -> None:
        """What went into the answers: Discord reads, linked pages, tools, summaries, refits."""
        from prometheus_client import Counter, Histogram

        self.rest_calls = Counter(
            "threadwise_discord_rest_calls",
            "Discord REST calls made to read the context of answers (history pages, messages).",
            registry=registry,
        )
        self.articles = Counter(
            "threadwise_article_reads",
            "Linked pages read for answers, by result (ok, failed).",
            ["result"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "threadwise_tool_calls",
            "Tool calls the model asked for, by tool and result (ok, error, timeout; reused: "
            "not run again after a refit; not_run: past the limits).",
            ["tool", "result"],
            registry=registry,
        )
        self.tool_seconds = Histogram(
            "threadwise_tool_call_seconds",
            "Time one tool call ran, by tool.",
            ["tool"],
            buckets=SECONDS_BUCKETS,
            registry=registry,
        )
        self.summaries = Counter(
            "threadwise_summaries",
            "Summaries asked for at a conversation's cut, by outcome (written, failed).",
            ["outcome"],
            registry=registry,
        )
        self.refits = Counter(
            "threadwise_prompt_refits",
            "Prompts the model server refused as too long, rebuilt smaller, by model.",
            ["model"],
            registry=registry,
        )

    def _declare_load(self, registry: CollectorRegistry) -> None:
        """How busy the bot is: the store's writes, the line, the caches."""
        from prometheus_client import Gauge, Histogram

        self.store_write = Histogram(
            "threadwise_store_write_seconds",
            "Time to record one answer in the store.",
            buckets=STORE_BUCKETS,
            registry=registry,
        )
        self.queue_length = Gauge(
            "threadwise_answer_queue_length",
            "Triggers waiting in line for an answer, across channels.",
            registry=registry,
        )
        self.cache_messages = Gauge(
            "threadwise_cache_messages",
            "Discord messages held in the channel caches.",
            registry=registry,
        )
        self.cache_channels = Gauge(
            "threadwise_cache_channels",
            "Channels with a cache.",
            registry=registry,
        )

    def watch(
        self,
        *,
        queue_length: Callable[[], float],
        cache_messages: Callable[[], float],
        cache_channels: Callable[[], float],
    ) -> None:
        """Gauges read when scraped, so they cost nothing between scrapes."""
        self.queue_length.set_function(queue_length)
        self.cache_messages.set_function(cache_messages)
        self.cache_channels.set_function(cache_channels)

    def observe_answer(self, result: AnswerResult) -> None:
        """Count one finished answer, by its trigger's kind and the model that answered."""
        asked, model = result.asked, result.model_settings.name
        self.answers.labels(result.ending.outcome, result.trigger.kind).inc()
        prepared = asked.prepared
        if prepared is not None:
            self.rest_calls.inc(prepared.selection.rest_calls)
            for article in prepared.materialized.articles:
                self.articles.labels("ok" if article.ok else "failed").inc()
            if prepared.summary_note is not None:
                written = prepared.summary_note[0] == "success"
                self.summaries.labels("written" if written else "failed").inc()
        self._observe_tools(asked)
        if asked.refits:
            self.refits.labels(model).inc(len(asked.refits))
        completion = asked.completion
        if completion is None:
            if result.ending.error is not None and asked.attempts:
                self.model_errors.labels(model).inc()
            return
        self.model_latency.labels(model).observe(completion.latency_seconds)
        if completion.time_to_first_token is not None:
            self.first_token.labels(model).observe(completion.time_to_first_token)
        usage = completion.usage
        if usage is not None:
            for kind, count in (
                ("prompt", usage.prompt_tokens),
                ("cached", usage.cached_prompt_tokens),
                ("completion", usage.completion_tokens),
            ):
                if count:
                    self.tokens.labels(model, kind).inc(count)

    def _observe_tools(self, asked: Asked) -> None:
        """Every call of the answer, those of prompts refused as too long included (they ran).
        A tool is named only when it was offered: the model may call any name, and each name
        would be a new time series."""
        for progress in (*(refused for _, refused in asked.refused_tool_use), asked.tool_use):
            if progress is None:
                continue
            offered = {spec.name for spec in progress.specs}
            for round_ in progress.rounds:
                for outcome in round_.outcomes:
                    tool = outcome.name if outcome.name in offered else "other"
                    ran = not outcome.reused and outcome.status != "not_run"
                    self.tool_calls.labels(
                        tool, "reused" if outcome.reused else outcome.status
                    ).inc()
                    if ran:
                        self.tool_seconds.labels(tool).observe(outcome.seconds)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST
