"""What the article pipeline costs, against the original design's way of doing it, in the same run.

1. Ten article links served by a local aiohttp server that holds each page 200 ms: the
   sequential, on-loop way (download, then goose3 on the event loop, one link after the other)
   against ``ArticleService.fetch_many`` (concurrent downloads, goose3 in workers).
2. The same ten links again: served from the cache, so the server must see 0 requests.
3. The event loop's worst stall while a 1 MB page is extracted: on the loop, in a thread, in a
   process. A ticker coroutine sleeps 1 ms at a time and records the longest gap.
4. What the defences against hostile pages cost and save: goose3 on the page as served against
   goose3 on the trimmed page (``trim_for_goose``), for the 1 MB page and for a page of
   ``<meta>`` tags; a ``punycode`` page decoded as it declares against ``decode_html``.

Run: ``python bench/articles.py`` (from the repository root). Figures vary with the machine;
the ratios are the point.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goose3 import Goose  # noqa: E402

from conversation.articles import (  # noqa: E402
    ArticleService,
    Extractor,
    WorkerKind,
    decode_html,
    extract_article,
)
from conversation.common import ArticleSettings  # noqa: E402

PAGE_DELAY = 0.2
LINKS = 10
TEMPLATE = (ROOT / "tests" / "pages" / "garden_rainwater.html").read_text(encoding="utf-8")
PARAGRAPH = (
    "<p>The committee met again on Tuesday to go through the proposal line by line, and after a "
    "long debate the members agreed that the budget for the new reading room would grow by a "
    "tenth over the next three years, provided the volunteers kept the old building open.</p>\n"
)


def big_page(size: int = 1_000_000) -> str:
    body = PARAGRAPH * (size // len(PARAGRAPH))
    head = "<html><head><title>A very long report</title></head>"
    return f"{head}<body><article>{body}</article></body></html>"


def make_app(hits: list[str]) -> web.Application:
    async def article(request: web.Request) -> web.Response:
        hits.append(request.path)
        await asyncio.sleep(PAGE_DELAY)
        n = request.match_info["n"]
        html = TEMPLATE.replace("Keep Its Rain", f"Keep Its Rain, part {n}")
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/article/{n}", article)
    return app


async def sequential_on_loop(urls: list[str]) -> int:
    """The original design's way: one link after another, goose3 right on the event loop."""
    extracted = 0
    async with aiohttp.ClientSession() as session:
        for url in urls:
            async with session.get(url) as response:
                html = await response.text()
            if extract_article(html).text:
                extracted += 1
    return extracted


async def worst_stall(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(seconds the work took, longest gap between two 1 ms ticks of the event loop)."""
    stop = asyncio.Event()
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)
    start = time.perf_counter()
    await work()
    elapsed = time.perf_counter() - start
    stop.set()
    await task
    return elapsed, max(gaps)


async def timed(work: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await work()
    return time.perf_counter() - start, result


async def bench_fetching(kind: WorkerKind, base: str, hits: list[str]) -> float:
    urls = [f"{base}/article/{i}" for i in range(LINKS)]
    settings = ArticleSettings(allow_private_networks=True, extract_workers=kind)
    async with ArticleService(settings) as service:
        await service.fetch(f"{base}/article/warm-up")  # workers spawned, as in a running bot
        hits.clear()
        (cold, results), cold_stall = await _with_stall(lambda: service.fetch_many(urls))
        cold_hits = len(hits)
        hits.clear()
        (warm, again), _ = await _with_stall(lambda: service.fetch_many(urls))
    ok = sum(result.ok for result in results.values())
    assert all(result.ok for result in again.values())
    print(
        f"  service, {kind:7} workers: {cold * 1000:6.0f} ms for {ok}/{LINKS} articles"
        f" ({cold_hits} requests, worst loop stall {cold_stall * 1000:.0f} ms);"
        f" cached pass {warm * 1000:.1f} ms, {len(hits)} requests"
    )
    return cold


async def _with_stall(work: Callable[[], Awaitable[Any]]) -> tuple[tuple[float, Any], float]:
    box: list[Any] = []

    async def run() -> None:
        box.append(await timed(work))

    _, stall = await worst_stall(run)
    return box[0], stall


async def bench_stalls(rounds: int) -> None:
    html = big_page()
    print(
        f"\nEvent loop's worst stall while goose3 extracts a {len(html) / 1e6:.1f} MB page"
        f" ({rounds} rounds each):"
    )

    async def on_loop() -> None:
        extract_article(html)

    rows: dict[str, list[tuple[float, float]]] = {"on-loop": [], "thread": [], "process": []}
    kinds: tuple[WorkerKind, ...] = ("thread", "process")
    extractors = {kind: Extractor(kind, 1, 60) for kind in kinds}
    try:
        for extractor in extractors.values():
            await extractor.extract("<p>warm-up</p>")
        for _ in range(rounds):
            rows["on-loop"].append(await worst_stall(on_loop))
            for kind, extractor in extractors.items():
                rows[kind].append(await worst_stall(lambda e=extractor: e.extract(html)))
    finally:
        for extractor in extractors.values():
            await extractor.aclose()
    for kind, figures in rows.items():
        elapsed = statistics.median(f[0] for f in figures)
        worst = max(f[1] for f in figures)
        typical = statistics.median(f[1] for f in figures)
        print(
            f"  {kind:8} extraction {elapsed * 1000:6.0f} ms; worst stall {worst * 1000:7.1f} ms"
            f" (median round {typical * 1000:.1f} ms)"
        )


def _goose_as_served(html: str) -> None:
    with Goose({"enable_image_fetching": False}) as goose:
        goose.extract(raw_html=html)


def _seconds(work: Callable[[], Any], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_hostile() -> None:
    print("\nHostile pages: goose3 on the page as served vs trimmed first (median of 3):")
    big = big_page()
    metas = big_page(20_000).replace("<head>", "<head>" + "<meta name='x' content='y'>" * 2000)
    for name, html in (("1.0 MB article", big), ("2000 <meta> tags", metas)):
        served = _seconds(lambda h=html: _goose_as_served(h))
        trimmed = _seconds(lambda h=html: extract_article(h))
        print(
            f"  {name:16}: as served {served * 1000:7.0f} ms, trimmed {trimmed * 1000:6.0f} ms"
            f" ({served / trimmed:.2f}x)"
        )
    body = b'<meta charset="punycode"><p>-' + b"9" * 100_000
    declared = _seconds(lambda: body.decode("punycode", errors="replace"), rounds=1)
    guarded = _seconds(lambda: decode_html(body, None))
    print(
        f"  100 kB 'punycode' page: decoded as declared {declared * 1000:.0f} ms,"
        f" decode_html (UTF-8 instead) {guarded * 1000:.2f} ms"
    )


async def main() -> None:
    hits: list[str] = []
    kinds: tuple[WorkerKind, ...] = ("process", "thread")
    runner = web.AppRunner(make_app(hits))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    print(
        f"Python {sys.version.split()[0]}; {LINKS} links, each page held {PAGE_DELAY * 1000:.0f} ms"
    )
    try:
        urls = [f"{base}/article/{i}" for i in range(LINKS)]
        await sequential_on_loop(urls[:1])  # warm goose3's imports and caches
        hits.clear()
        seq_time, seq_ok = await timed(lambda: sequential_on_loop(urls))
        (_, seq_stall) = await worst_stall(lambda: sequential_on_loop(urls))
        print(
            f"  sequential, on the loop : {seq_time * 1000:6.0f} ms for {seq_ok}/{LINKS} articles"
            f" (worst loop stall {seq_stall * 1000:.0f} ms)"
        )
        pages = [
            TEMPLATE.replace("Keep Its Rain", f"Keep Its Rain, part {i}") for i in range(LINKS)
        ]
        start = time.perf_counter()
        for page in pages:
            extract_article(page)
        goose_time = time.perf_counter() - start
        print(
            f"  (goose3 alone on these {LINKS} pages, one after another:"
            f" {goose_time * 1000:.0f} ms)"
        )
        for kind in kinds:
            took = await bench_fetching(kind, base, hits)
            print(
                f"    -> {seq_time / took:.1f}x faster than sequential;"
                f" {took / PAGE_DELAY:.2f} page delays for the lot"
            )
    finally:
        await runner.cleanup()
    await bench_stalls(rounds=5)
    bench_hostile()


if __name__ == "__main__":  # required: process workers are spawned and re-import this module
    asyncio.run(main())
