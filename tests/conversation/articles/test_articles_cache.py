"""The article cache (conversation.articles.cache): expiry, bound, and shared loads."""

from __future__ import annotations

import asyncio

from conversation.articles.cache import ArticleCache
from conversation.articles.models import ArticleResult, ArticleStatus


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _ok(url: str) -> ArticleResult:
    return ArticleResult(url=url, status=ArticleStatus.OK, text=f"text of {url}")


def _failed(url: str) -> ArticleResult:
    return ArticleResult(url=url, status=ArticleStatus.TIMEOUT, reason="slow")


def test_articles_and_failures_expire_on_their_own_clocks() -> None:
    clock = FakeClock()
    cache = ArticleCache(10, ttl_seconds=3600, failure_ttl_seconds=60, clock=clock)
    cache.put("a", _ok("a"))
    cache.put("b", _failed("b"))
    clock.now += 59
    assert cache.get("a") is not None and cache.get("b") is not None
    clock.now += 1
    assert cache.get("b") is None
    assert cache.get("a") is not None
    clock.now += 3600
    assert cache.get("a") is None
    assert len(cache) == 0


def test_failures_are_not_kept_when_their_ttl_is_zero() -> None:
    cache = ArticleCache(10, ttl_seconds=3600, failure_ttl_seconds=0)
    cache.put("b", _failed("b"))
    assert cache.get("b") is None


def test_bounded_and_least_recently_used_goes_first() -> None:
    cache = ArticleCache(2, ttl_seconds=3600, failure_ttl_seconds=60)
    cache.put("a", _ok("a"))
    cache.put("b", _ok("b"))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", _ok("c"))
    assert len(cache) == 2
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None


async def test_concurrent_requests_share_one_load() -> None:
    cache = ArticleCache(10, ttl_seconds=3600, failure_ttl_seconds=60)
    started = 0
    release = asyncio.Event()

    async def load() -> ArticleResult:
        nonlocal started
        started += 1
        await release.wait()
        return _ok("a")

    waiters = [asyncio.create_task(cache.get_or_load("a", load)) for _ in range(5)]
    await asyncio.sleep(0)
    assert cache.in_flight("a")
    release.set()
    results = await asyncio.gather(*waiters)
    assert started == 1
    assert all(result is results[0] for result in results)
    assert (cache.loads, cache.joins, cache.hits) == (1, 4, 0)
    assert await cache.get_or_load("a", load) is results[0]
    assert (started, cache.hits) == (1, 1)


async def test_a_cancelled_waiter_does_not_cancel_the_shared_load() -> None:
    cache = ArticleCache(10, ttl_seconds=3600, failure_ttl_seconds=60)
    release = asyncio.Event()

    async def load() -> ArticleResult:
        await release.wait()
        return _ok("a")

    first = asyncio.create_task(cache.get_or_load("a", load))
    second = asyncio.create_task(cache.get_or_load("a", load))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    release.set()
    assert (await second).ok
    assert first.cancelled()
    assert cache.get("a") is not None


async def test_aclose_cancels_loads_in_progress() -> None:
    cache = ArticleCache(10, ttl_seconds=3600, failure_ttl_seconds=60)
    never = asyncio.Event()

    async def load() -> ArticleResult:
        await never.wait()
        return _ok("a")

    waiter = asyncio.create_task(cache.get_or_load("a", load))
    await asyncio.sleep(0)
    await cache.aclose()
    assert not cache.in_flight("a")
    await asyncio.gather(waiter, return_exceptions=True)
    assert waiter.cancelled()
