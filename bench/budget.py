"""Fitting a 30-message context with 10 articles of 20,000 characters into 4k, 8k and 32k windows.

For each window: the prompt's tokens against its budget (window minus the answer's 1024-token
reserve) by our conservative estimate and by a word-piece count standing in for the server's
tokenizer (the fake model server's, which answers "context too long" past its window), whether
the prompt would overflow, what was cut, and the time to fit (median of many runs). The
baseline in the same process: one pass of that word-piece count over the same prompt, i.e.
what merely *counting* with a regex tokenizer would cost.

    python -m bench.budget
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.demo.openai_server import count_tokens
from conversation.articles import ArticleResult, ArticleStatus, render_embeddings
from conversation.graph import MessageNode, to_openai
from conversation.prompt import Budget, MaterializeOptions, Materializer, TokenCounter, fit_prompt
from conversation.replay import LogSource, parse_export
from conversation.selection import ContextSelection, Reason
from tests.fakes.synthetic import busy_channel

MESSAGES, ARTICLES, ARTICLE_CHARS, RESERVE = 30, 10, 20_000, 1024
WINDOWS = (4096, 8192, 32768)
RUNS = 200

PROSE = (
    "The upgrade tool rewrites the system catalogs and keeps the data files, so a terabyte "
    "moves in minutes; dumping and restoring rewrites every row and rebuilds every index. "
    "Take a base backup first, check that it restores, then run the check option. "
)


def article(number: int) -> ArticleResult:
    text = (f"Part {number}. " + PROSE * (ARTICLE_CHARS // len(PROSE) + 1))[:ARTICLE_CHARS]
    return ArticleResult(
        url=f"https://docs.example.org/guide/{number}",
        status=ArticleStatus.OK,
        title=f"Guide {number}",
        text=text,
    )


async def context() -> tuple[MessageNode, list[MessageNode], list[ArticleResult]]:
    """30 messages and a trigger of a busy channel; every third message links an article."""
    source = LogSource(parse_export(busy_channel(seed=5, messages=MESSAGES + 1)))
    *earlier, trigger = source.messages
    selection = ContextSelection(
        trigger=trigger,
        messages=earlier,
        reasons={m.id: [Reason(kind="linear")] for m in earlier},
    )
    materialized = await Materializer(MaterializeOptions()).materialize(selection)
    articles = [article(n) for n in range(ARTICLES)]
    nodes = list(materialized.nodes)
    for index, result in enumerate(articles):
        at = index * 3
        nodes[at] = nodes[at].model_copy(
            update={"content": f"{nodes[at].content} {render_embeddings([result])}"}
        )
    system = MessageNode(role="system", content="You are threadwise, a helpful assistant. " * 6)
    return system, nodes, articles


def main() -> None:
    system, nodes, articles = asyncio.run(context())
    whole = to_openai([system, *nodes])
    started = time.perf_counter()
    for _ in range(20):
        whole_tokens = count_tokens(whole)
    count_seconds = (time.perf_counter() - started) / 20
    chars = sum(len(m["content"]) for m in whole)
    print(
        f"{MESSAGES}-message context + trigger, {ARTICLES} articles of {ARTICLE_CHARS:,} "
        f"characters: {chars:,} characters, {whole_tokens:,} word-piece tokens untrimmed; "
        f"answer reserve {RESERVE}\n"
    )
    print(
        "| window | budget | prompt (our estimate) | prompt (word-piece count) | overflows | "
        "cut | time to fit (median) | vs counting once |"
    )
    print("|---|---|---|---|---|---|---|---|")
    counter = TokenCounter()
    for window in WINDOWS:
        budget = Budget(window=window, reserve=RESERVE)
        times = []
        for _ in range(RUNS):
            began = time.perf_counter()
            fitted = fit_prompt(system, nodes, budget, counter, articles=articles)
            times.append(time.perf_counter() - began)
        sent = to_openai(fitted.nodes)
        real = count_tokens(sent)
        overflow = real + RESERVE > window or fitted.total > budget.limit
        shortened = sum(1 for c in fitted.cuts if c.action == "shortened")
        dropped = sum(1 for c in fitted.cuts if c.what == "message")
        median = statistics.median(times)
        print(
            f"| {window:,} | {budget.limit:,} | {fitted.total:,} | {real:,} | "
            f"{int(overflow)} | {shortened} articles shortened, {dropped} messages dropped | "
            f"{median * 1000:.2f} ms | {median / count_seconds:.2f}x |"
        )
    print(f"\ncounting once with the word-piece regex: {count_seconds * 1000:.2f} ms")


if __name__ == "__main__":
    main()
