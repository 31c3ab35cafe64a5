"""goose3 in workers (conversation.articles.extract): errors become failures, a dead worker is
replaced, and goose3 is never in a position to download anything itself."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from conversation.articles.extract import Extractor, GooseError, extract_article
from conversation.articles.models import ArticleFailure, ArticleStatus

PAGES = Path(__file__).resolve().parents[2] / "pages"
PARAGRAPH = (
    "<p>The council spent the whole evening on the question of the bridge, and although most of "
    "the members agreed that it needed repair, nobody could say where the money would come from "
    "before the next budget was approved by the regional office.</p>\n"
)
BIG_PAGE = f"<html><body><article>{PARAGRAPH * 4000}</article></body></html>"  # ~1 MB


def test_extract_article_reads_a_fixture_page() -> None:
    extracted = extract_article((PAGES / "garden_rainwater.html").read_text(encoding="utf-8"))
    assert extracted.title.startswith("How a Neighbourhood Garden")
    assert "ping-pong ball" in extracted.text
    assert "Comments (2)" not in extracted.text


def test_blank_page_never_reaches_goose() -> None:
    """goose3 given an empty page and a URL downloads the URL with its own client; we never
    hand it a URL, and a blank page stops before goose3."""
    assert extract_article("  \n ").text == ""


def test_goose_failure_is_a_plain_picklable_error() -> None:
    with pytest.raises(GooseError, match="ParserError"):
        extract_article((PAGES / "comment_only.html").read_text(encoding="utf-8"))


async def test_extraction_timeout_is_a_failure() -> None:
    extractor = Extractor("thread", 1, timeout_seconds=0.05)
    try:
        with pytest.raises(ArticleFailure) as caught:
            await extractor.extract(BIG_PAGE)
    finally:
        await extractor.aclose()
    assert caught.value.status is ArticleStatus.TIMEOUT


async def test_a_killed_worker_is_reported_and_replaced() -> None:
    before = set(multiprocessing.active_children())
    extractor = Extractor("process", 1, timeout_seconds=60)
    try:
        await extractor.extract("<p>warm-up</p>")
        workers = set(multiprocessing.active_children()) - before
        assert workers
        running = asyncio.ensure_future(extractor.extract(BIG_PAGE))
        await asyncio.sleep(0.2)
        for worker in workers:
            if worker.pid is not None:
                os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(ArticleFailure) as caught:
            await running
        assert caught.value.status is ArticleStatus.EXTRACT_ERROR
        assert "worker died" in caught.value.reason
        page = (PAGES / "garden_rainwater.html").read_text(encoding="utf-8")
        assert "juice bottling plant" in (await extractor.extract(page)).text
    finally:
        await extractor.aclose()
