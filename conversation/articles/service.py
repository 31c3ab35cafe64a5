"""The façade the materializer calls: find a message's links, fetch a context's articles.

Usage::

    async with ArticleService(settings.articles) as articles:
        urls = {m.id: articles.find_urls(m.content, m.embed_urls) for m in messages}
        results = await articles.fetch_many(u for per_message in urls.values() for u in per_message)
        suffix = render_embeddings(results[u] for u in urls[message_id])

Nothing here raises for a bad link: each link gets an ``ArticleResult``, and a failure is a
result with a reason. The service owns its HTTP session instead of borrowing one, because the
address policy lives in that session's connector; a session made elsewhere would connect to
whatever a member links to.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType

import aiohttp
from aiohttp.abc import AbstractResolver
from pydantic import BaseModel, ConfigDict

from conversation.articles.cache import ArticleCache, Clock
from conversation.articles.extract import Extractor
from conversation.articles.fetch import Page, PageFetcher, create_session
from conversation.articles.models import ArticleFailure, ArticleResult, ArticleStatus
from conversation.articles.render import clip_text, normalize_text
from conversation.articles.urls import message_links, url_key
from conversation.common.settings import ArticleSettings

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 300


class ArticleStats(BaseModel):
    """Counters for "why was this slow / was the cache used"."""

    model_config = ConfigDict(frozen=True)

    loads: int  # links actually fetched (or attempted)
    cache_hits: int
    joined: int  # requests that shared a fetch already in progress
    cached_entries: int


# Settings read afresh for every context, so a reloaded config can change them while running.
LIVE_LIMITS = ("max_chars", "max_urls_per_message", "max_urls_per_context")


class ArticleService:
    """Fetches, extracts and caches linked articles. Use it as an async context manager; one
    instance for the whole bot, so the cache and the session are shared."""

    def __init__(
        self,
        settings: ArticleSettings,
        *,
        resolver: AbstractResolver | None = None,
        clock: Clock = time.monotonic,
        offline_pages: Mapping[str, Path] | None = None,
    ) -> None:
        """``resolver`` replaces the system resolver (tests map names to addresses with
        ``StaticResolver``); the address policy applies to it all the same.

        ``offline_pages`` maps URLs to saved HTML files read instead of the network (``replay``
        on a bundled log works offline that way); they go through the same extraction. The
        operator chooses these files; nothing a Discord member posts can add to them.
        """
        self._settings = settings
        self._resolver = resolver
        self._offline = {url_key(url): Path(path) for url, path in (offline_pages or {}).items()}
        self._cache = ArticleCache(
            settings.cache_max_entries,
            settings.cache_ttl_seconds,
            settings.failure_ttl_seconds,
            clock,
        )
        self._downloads = asyncio.Semaphore(settings.max_concurrent_fetches)
        self._session: aiohttp.ClientSession | None = None
        self._fetcher: PageFetcher | None = None
        self._extractor: Extractor | None = None

    @property
    def settings(self) -> ArticleSettings:
        return self._settings

    def apply_limits(self, settings: ArticleSettings) -> None:
        """Take the per-context limits (``LIVE_LIMITS``) of a reloaded config.

        Only these apply while running: the session, the address policy, the cache and the
        extraction workers were built from the settings the service started with.
        """
        self._settings = self._settings.model_copy(
            update={key: getattr(settings, key) for key in LIVE_LIMITS}
        )

    @property
    def stats(self) -> ArticleStats:
        cache = self._cache
        return ArticleStats(
            loads=cache.loads, cache_hits=cache.hits, joined=cache.joins, cached_entries=len(cache)
        )

    async def __aenter__(self) -> ArticleService:
        settings = self._settings
        resolver = self._resolver if self._resolver is not None else aiohttp.DefaultResolver()
        self._session = create_session(settings, resolver)
        self._fetcher = PageFetcher(self._session, settings)
        self._extractor = Extractor(
            settings.extract_workers, settings.extract_max_workers, settings.extract_timeout_seconds
        )
        if settings.enabled:
            self._extractor.warm_up()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._extractor is not None:
            self._extractor.refuse_work()  # the loads cancelled next need no fresh workers
        await self._cache.aclose()
        if self._session is not None:
            await self._session.close()
        if self._extractor is not None:
            await self._extractor.aclose()
        self._session = self._fetcher = self._extractor = None

    def find_urls(self, content: str, embed_urls: Iterable[str] = ()) -> list[str]:
        """The links of one message worth reading: deduplicated, in order, at most
        ``max_urls_per_message``; none when article reading is disabled."""
        if not self._settings.enabled:
            return []
        links = message_links(content, embed_urls)
        limit = self._settings.max_urls_per_message
        if len(links) > limit:
            log.info("message has %d links; reading the first %d", len(links), limit)
        return links[:limit]

    async def fetch_many(self, urls: Iterable[str]) -> dict[str, ArticleResult]:
        """One result per distinct URL, in the order given, fetched concurrently. Links past
        ``max_urls_per_context`` are answered ``skipped`` without a request."""
        ordered = list(dict.fromkeys(urls))
        settings = self._settings
        if not settings.enabled:
            return {url: _skipped(url, "article reading is disabled") for url in ordered}
        admitted: list[str] = []
        keys: set[str] = set()
        over: list[str] = []
        for url in ordered:
            key = url_key(url)
            if key in keys or len(keys) < settings.max_urls_per_context:
                keys.add(key)
                admitted.append(url)
            else:
                over.append(url)
        fetched = await asyncio.gather(*(self.fetch(url) for url in admitted))
        results = dict(zip(admitted, fetched, strict=True))
        limit = settings.max_urls_per_context
        for url in over:
            results[url] = _skipped(url, f"over the limit of {limit} links per context")
        return {url: results[url] for url in ordered}

    async def fetch(self, url: str) -> ArticleResult:
        """The article at ``url``, from the cache, a fetch in progress, or a new fetch."""
        if self._fetcher is None:
            raise RuntimeError(
                "ArticleService is not open: use it as `async with ArticleService(...)`"
            )
        result = await self._cache.get_or_load(url_key(url), lambda: self._load(url))
        # Another spelling of the same link (a different #fragment) shares the result.
        return result if result.url == url else result.model_copy(update={"url": url})

    def deadline_seconds(self) -> float:
        """How long one link may take in all: its download time plus its extraction time.
        Waiting for a download slot or a free extraction worker counts against it, so pages
        linked in other channels can slow an answer down by this much at most."""
        return self._settings.timeout_seconds + self._settings.extract_timeout_seconds

    async def _load(self, url: str) -> ArticleResult:
        deadline = self.deadline_seconds()
        try:
            async with asyncio.timeout(deadline):
                return await self._read(url)
        except TimeoutError:
            reason = f"no article within {deadline:g} s (waited behind other links)"
            log.info("article not used: %s: %s", url, reason)
            return ArticleResult(url=url, status=ArticleStatus.TIMEOUT, reason=reason)
        except ArticleFailure as failure:
            log.info("article not used: %s: %s", url, failure)
            return ArticleResult.failed(url, failure)
        except Exception as exc:
            log.exception("article pipeline bug on %s", url)
            return ArticleResult(
                url=url,
                status=ArticleStatus.ERROR,
                reason=f"internal error: {type(exc).__name__}: {exc}",
            )

    async def _read(self, url: str) -> ArticleResult:
        assert self._fetcher is not None and self._extractor is not None
        offline = self._offline.get(url_key(url))
        if offline is not None:
            # Saved pages come in any charset; undecodable bytes must not cost the article.
            body = await _read_offline(offline)
            page = Page(url=url, final_url=url, body=body, charset=None)  # the page's <meta> says
        else:
            async with self._downloads:
                page = await self._fetcher.fetch(url)
        extracted = await self._extractor.extract(page.body, page.charset)
        full = normalize_text(extracted.text)
        if not full:
            raise ArticleFailure(ArticleStatus.EMPTY, "no article text found on the page")
        text = clip_text(full, self._settings.max_chars)
        return ArticleResult(
            url=url,
            status=ArticleStatus.OK,
            final_url=page.final_url,
            title=normalize_text(extracted.title)[:MAX_TITLE_CHARS],
            text=text,
            truncated=len(text) < len(full),
            original_chars=len(full),
        )


def _skipped(url: str, reason: str) -> ArticleResult:
    return ArticleResult(url=url, status=ArticleStatus.SKIPPED, reason=reason)


async def _read_offline(path: Path) -> bytes:
    """A saved page; a missing file is the operator's to fix, so it says which file."""
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as error:
        raise ArticleFailure(
            ArticleStatus.CONNECTION_ERROR, f"offline copy {path} not readable: {error.strerror}"
        ) from error
    return data
