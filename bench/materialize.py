"""Materializing a 30-message context with 10 article links, against the original design's way.

A local aiohttp server holds each page 200 ms. The original design's way fetches each link after
the other and runs goose3 on the event loop; ours materializes the whole context at once (all links
concurrently, goose3 in worker processes). Then a second pass, served from the cache (0
requests), and the event loop's worst stall during each. For the stall on a 1 MB page in a
thread, a process or on the loop, see ``bench/articles.py``.

    python -m bench.materialize
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.articles import PAGE_DELAY, make_app, sequential_on_loop, worst_stall
from conversation.articles import ArticleService
from conversation.common import ArticleSettings
from conversation.prompt import MaterializeOptions, Materializer
from conversation.replay import LogSource, parse_export
from conversation.selection import ContextSelection, Reason
from tests.fakes.synthetic import busy_channel

MESSAGES, LINKS = 30, 10


def context_with_links(base: str) -> tuple[ContextSelection, list[str]]:
    export = busy_channel(seed=5, messages=MESSAGES + 1)
    urls = [f"{base}/article/{n}" for n in range(LINKS)]
    for index, url in enumerate(urls):
        export["messages"][index * 3]["content"] += f" see {url}"
    source = LogSource(parse_export(export))
    *context, trigger = source.messages
    selection = ContextSelection(
        trigger=trigger,
        messages=context,
        reasons={m.id: [Reason(kind="linear")] for m in context},
    )
    return selection, urls


async def main() -> None:
    hits: list[str] = []
    runner = web.AppRunner(make_app(hits))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    base = f"http://127.0.0.1:{port}"
    selection, urls = context_with_links(base)
    try:
        original_time, original_stall = await worst_stall(lambda: sequential_on_loop(urls))
        settings = ArticleSettings(allow_private_networks=True)
        async with ArticleService(settings) as articles:
            await articles.fetch(f"{base}/article/warm-up")  # workers up, as in a running bot
            materializer = Materializer(MaterializeOptions(), articles)
            hits.clear()
            box: list = []
            ours_time, ours_stall = await worst_stall(
                lambda: _collect(box, materializer.materialize(selection))
            )
            first_requests = len(hits)
            hits.clear()
            cached_time, _ = await worst_stall(lambda: materializer.materialize(selection))
            cached_requests = len(hits)
        read = sum(article.ok for article in box[0].articles)
    finally:
        await runner.cleanup()
    print(f"{MESSAGES}-message context, {LINKS} links, each page held {PAGE_DELAY * 1000:.0f} ms\n")
    print("| way | time | page delays | worst loop stall | requests |")
    print("|---|---|---|---|---|")
    print(
        f"| original: sequential, goose3 on the loop | {original_time * 1000:.0f} ms | "
        f"{original_time / PAGE_DELAY:.1f} | {original_stall * 1000:.0f} ms | {LINKS} |"
    )
    print(
        f"| threadwise: concurrent, goose3 in processes ({read}/{LINKS} read) | "
        f"{ours_time * 1000:.0f} ms ({original_time / ours_time:.1f}x faster) | "
        f"{ours_time / PAGE_DELAY:.1f} | {ours_stall * 1000:.0f} ms | {first_requests} |"
    )
    print(
        f"| threadwise, second pass (cache) | {cached_time * 1000:.1f} ms | - | - "
        f"| {cached_requests} |"
    )


async def _collect(box: list, work) -> None:
    box.append(await work)


if __name__ == "__main__":
    asyncio.run(main())
