"""Pages built to hurt the article pipeline, served by a real aiohttp server on 127.0.0.1, read
by the real service with real goose3 in real worker processes.

Each test names the harm it guards against: a frozen event loop (a charset whose codec is
quadratic), jammed extraction workers (pages goose3 takes minutes over), a shutdown that
waits for them, and one channel's links holding up another's answer. Times are asserted only
as generous bounds on things that, unfixed, take many times longer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from goose3 import Goose

from conversation.articles import ArticleService, ArticleStatus
from conversation.articles.charset import codec_for, decode_html
from conversation.articles.extract import Extractor, extract_article
from conversation.articles.models import ArticleFailure
from conversation.articles.trim import trim_for_goose
from conversation.common.settings import ArticleSettings

PAGES = Path(__file__).resolve().parents[2] / "pages"
STOPWORDS = "the and of to in is it that was for on are with as his they be at one have this from "
ARTICLE = (
    "<html><head><title>Backups that work</title></head><body><article>"
    + "<p>A normal article about backups, and why the nightly copy is tested every week.</p>" * 30
    + "</article>"
)
# The part after the last "-" is what punycode decodes, in quadratic time: 150 000 digits
# take seconds (300 000 take half a minute).
PUNYCODE = (
    b'<html><head><meta charset="punycode"><title>Backups that work</title></head><body>'
    + ARTICLE.split("<body>", 1)[1].encode()
    + b"<div>-"
    + b"9" * 150_000
)
# goose3 rescans the rest of the line for every <meta>: 6000 of them take 20 s and more.
META_FLOOD = ARTICLE.replace(
    "<head>", "<head>" + "<meta name='description' content='x'>" * 6000
) + ("</body></html>")
# Tens of thousands of tiny elements: goose3 is quadratic in them (about half a minute).
SPANS = (
    "<html><body><div>" + ("<span>" + STOPWORDS[:20] + "</span>") * 60_000 + "</div></body></html>"
)


@dataclass
class Site:
    port: int = 0
    slow_started: int = 0
    served: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()

    async def page(request: web.Request) -> web.Response:
        site.served.append(request.path)
        body = {
            "punycode": PUNYCODE,
            "meta-flood": META_FLOOD.encode(),
            "spans": SPANS.encode(),
            "article": ARTICLE.encode(),
            "garden": (PAGES / "garden_rainwater.html").read_bytes(),
        }[request.match_info["name"]]
        return web.Response(body=body, headers={"Content-Type": "text/html"})

    async def slow(request: web.Request) -> web.Response:
        site.slow_started += 1
        await asyncio.sleep(30)
        return web.Response(text="<p>too late</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/page/{name}", page)
    app.router.add_get("/slow", slow)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.port = runner.addresses[0][1]
    try:
        yield site
    finally:
        await runner.cleanup()


def _settings(**overrides: Any) -> ArticleSettings:
    values: dict[str, Any] = {
        "allow_private_networks": True,
        "extract_workers": "process",
        "extract_max_workers": 1,
    }
    return ArticleSettings(**(values | overrides))


@contextmanager
def _loop_stalls() -> Iterator[list[float]]:
    """The event loop's longest stall while the block runs, as a one-element list."""
    worst = [0.0]

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            worst[0] = max(worst[0], now - last - 0.02)
            last = now

    ticker = asyncio.get_running_loop().create_task(tick())
    try:
        yield worst
    finally:
        ticker.cancel()


# --- charsets ---------------------------------------------------------------------------------


def test_only_web_charsets_are_used() -> None:
    assert codec_for(" Shift_JIS ") == "cp932"
    assert codec_for("latin1") == "cp1252"  # as browsers read it
    for refused in ("punycode", "idna", "utf-7", "unicode_escape", "rot13", "hz-gb-2312", None):
        assert codec_for(refused) is None
    assert decode_html(b"<p>\x93quoted\x94</p>", "iso-8859-1") == "<p>\u201cquoted\u201d</p>"
    assert decode_html(b'<meta charset="utf-7"><p>+AGEAYgBj-</p>', None).endswith("+AGEAYgBj-</p>")
    assert decode_html(b'<meta charset="utf-16"><p>caf\xc3\xa9</p>', None).endswith("café</p>")
    assert decode_html(b"\xff\xfeh\x00i\x00", "punycode") == "hi"


async def test_a_punycode_page_neither_freezes_the_loop_nor_costs_the_article(site: Site) -> None:
    async with ArticleService(_settings()) as articles:
        with _loop_stalls() as worst:
            result = await articles.fetch(site.url("/page/punycode"))
    assert result.status is ArticleStatus.OK, result.reason
    assert "nightly copy is tested" in result.text
    assert worst[0] < 1.0  # decoding as punycode on the loop stalls it for seconds


# --- goose3's slow corners --------------------------------------------------------------------


def test_trimming_keeps_what_goose_reads_on_ordinary_pages() -> None:
    for path in [*PAGES.glob("*.html"), PAGES.parents[1] / "examples/pages/database-upgrade.html"]:
        html = decode_html(path.read_bytes(), None)
        if not html.strip() or path.name == "comment_only.html":
            continue
        with Goose({"enable_image_fetching": False}) as goose:
            untrimmed = goose.extract(raw_html=html)
        extracted = extract_article(html)
        assert extracted.title == (untrimmed.title or "").strip(), path.name
        assert extracted.text == (untrimmed.cleaned_text or "").strip(), path.name


def test_trimming_keeps_the_title_sources_and_drops_the_flood() -> None:
    head = (
        "<head><title>First</title><title>Second</title>"
        "<meta property='og:title' content='Open graph title'>"
        "<meta property='og:title' content='Another'>"
        "<meta property='og:site_name' content='The Site'>"
        "<meta http-equiv='content-language' content='de'>"
        '<script type=\'application/ld+json\'>{"headline": "H"}</script>'
        "<script>var tracking = '<meta charset=x>';</script>"
        "<style>p { color: red }</style><!-- <meta charset=x> -->"
        + "<meta name='keywords' content='k'>" * 100
        + "</head>"
    )
    trimmed = trim_for_goose(f"<html lang='de'>{head}<body><p>Text<!-- c --> stays.</p></body>")
    assert trimmed.count("<meta") == 4  # charset utf-8, og:title, og:site_name, language
    for kept in ("First", "Open graph title", "The Site", "content-language", '"headline"', "lang"):
        assert kept in trimmed
    for dropped in ("Second", "Another", "keywords", "tracking", "color: red", "<!--"):
        assert dropped not in trimmed
    assert "<p>Text stays.</p>" in trimmed


async def test_a_meta_flood_is_extracted_within_its_time(site: Site) -> None:
    async with ArticleService(_settings(extract_timeout_seconds=8)) as articles:
        result = await articles.fetch(site.url("/page/meta-flood"))
    assert result.status is ArticleStatus.OK, result.reason
    assert result.title == "Backups that work"


async def test_a_page_that_jams_goose_does_not_jam_the_next_article(site: Site) -> None:
    """The worker that overran its time is killed, so the article linked right after (here in
    the same service, as it would be from another channel) still gets read."""
    async with ArticleService(_settings(extract_timeout_seconds=3)) as articles:
        jam = await articles.fetch(site.url("/page/spans"))
        assert jam.status is ArticleStatus.TIMEOUT
        after = await articles.fetch(site.url("/page/garden"))
    assert after.status is ArticleStatus.OK, after.reason
    assert "ping-pong ball" in after.text


async def test_closing_does_not_wait_for_a_stuck_worker() -> None:
    extractor = Extractor("process", 1, timeout_seconds=600)
    extractor.warm_up()
    stuck = asyncio.ensure_future(extractor.extract(SPANS.encode(), "utf-8"))
    await asyncio.sleep(1.0)  # goose3 is busy with it now (for half a minute)
    started = time.perf_counter()
    await asyncio.wait_for(extractor.aclose(), timeout=15)
    assert time.perf_counter() - started < 10  # a 2 s grace, then the worker is killed
    with pytest.raises(ArticleFailure):  # the worker was killed under it; it must not hang
        await asyncio.wait_for(stuck, timeout=5)


async def test_closing_the_service_after_a_timed_out_page_is_quick(site: Site) -> None:
    articles = ArticleService(_settings(extract_timeout_seconds=2))
    async with articles:
        jam = await articles.fetch(site.url("/page/spans"))
        assert jam.status is ArticleStatus.TIMEOUT
        started = time.perf_counter()
    assert time.perf_counter() - started < 10


# --- waiting behind other channels' links -----------------------------------------------------


async def test_an_article_does_not_wait_behind_others_past_its_own_deadline(site: Site) -> None:
    """One download slot and ten slow links ahead in the queue, each cut at its own 1 s
    download limit: unbounded, the link posted after them waits ten seconds. With every link
    held to its own deadline (download + extraction time, 2 s here), the queue ahead of it is
    gone within 2 s, and it is read."""
    settings = _settings(
        extract_workers="thread",
        max_concurrent_fetches=1,
        timeout_seconds=1,
        extract_timeout_seconds=1,
    )
    async with ArticleService(settings) as articles:
        assert articles.deadline_seconds() == 2
        attack = [
            asyncio.ensure_future(articles.fetch(site.url(f"/slow?n={n}"))) for n in range(10)
        ]
        await asyncio.sleep(0.2)
        started = time.perf_counter()
        victim = await articles.fetch(site.url("/page/article"))
        waited = time.perf_counter() - started
        attacked = await asyncio.gather(*attack)
    assert victim.status is ArticleStatus.OK, victim.reason
    assert waited < 5  # about 2 s; unbounded, 10 s
    assert all(result.status is ArticleStatus.TIMEOUT for result in attacked)
    assert site.slow_started <= 3  # the rest gave up before their turn came
