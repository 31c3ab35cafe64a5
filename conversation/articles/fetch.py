"""Downloading one page with aiohttp, within the address policy and the size and time caps.

Redirects are followed here, one hop at a time, rather than by aiohttp: each target has to pass
``check_url`` before anything is sent to it, and the hop count is ours to cap. The body is read
in chunks and abandoned as soon as it passes ``max_bytes``, so a 50 MB page never costs more
than the cap in memory (aiohttp decompresses in bounded steps, so the cap holds for gzip too).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from conversation.articles.guard import AddressPolicy, GuardedResolver, check_url
from conversation.articles.models import ArticleFailure, ArticleStatus
from conversation.common.settings import ArticleSettings

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Page:
    """A downloaded HTML page, still in bytes: decoding it is left to the extraction worker
    (``charset.decode_html``), off the event loop."""

    url: str
    final_url: str
    body: bytes
    charset: str | None  # as the HTTP headers declare it, if they do


def create_session(settings: ArticleSettings, resolver: AbstractResolver) -> aiohttp.ClientSession:
    """The one session all article downloads share. Its connector resolves through
    ``GuardedResolver``; no cookies are kept (one site's cookies are nobody's business) and no
    proxy is taken from the environment (it would connect on our behalf, unchecked)."""
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(resolver, AddressPolicy.from_settings(settings)),
        limit=settings.max_concurrent_fetches,
        ttl_dns_cache=30,
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds),
        headers={
            "User-Agent": settings.user_agent,
            "Accept": "text/html,application/xhtml+xml;q=0.9",
        },
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
    )


class PageFetcher:
    """Fetches pages over a session made by ``create_session``."""

    def __init__(self, session: aiohttp.ClientSession, settings: ArticleSettings) -> None:
        self._session = session
        self._settings = settings
        self._policy = AddressPolicy.from_settings(settings)

    async def fetch(self, url: str) -> Page:
        """The page at ``url``; raises ``ArticleFailure`` for every way that can fail."""
        settings = self._settings
        try:
            async with asyncio.timeout(settings.timeout_seconds):
                return await self._follow(url)
        except TimeoutError:
            raise ArticleFailure(
                ArticleStatus.TIMEOUT, f"no complete page within {settings.timeout_seconds:g} s"
            ) from None
        except aiohttp.InvalidURL as exc:
            raise ArticleFailure(ArticleStatus.INVALID_URL, f"invalid URL: {exc}") from exc
        except aiohttp.ClientError as exc:
            raise ArticleFailure(
                ArticleStatus.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}"
            ) from exc

    async def _follow(self, url: str) -> Page:
        settings = self._settings
        current = _parse(url)
        for _hop in range(settings.max_redirects + 1):
            check_url(current, self._policy)
            async with self._session.get(current, allow_redirects=False) as response:
                self._check_peer(response)
                if response.status in REDIRECT_STATUSES:
                    location = response.headers.get("Location")
                    if not location:
                        raise ArticleFailure(
                            ArticleStatus.HTTP_ERROR, f"HTTP {response.status} without Location"
                        )
                    current = current.join(_parse(location))
                    continue
                if not 200 <= response.status < 300:
                    raise ArticleFailure(
                        ArticleStatus.HTTP_ERROR,
                        f"HTTP {response.status} {response.reason or ''}".rstrip(),
                    )
                if response.content_type not in HTML_TYPES:
                    raise ArticleFailure(
                        ArticleStatus.NOT_HTML,
                        f"content type {response.content_type!r} is not HTML",
                    )
                body = await self._read_capped(response)
                return Page(url=url, final_url=str(current), body=body, charset=response.charset)
        raise ArticleFailure(
            ArticleStatus.TOO_MANY_REDIRECTS, f"more than {settings.max_redirects} redirects"
        )

    def _check_peer(self, response: aiohttp.ClientResponse) -> None:
        """Second line of defence: the resolver already refused these addresses, but should a
        connection ever reach one by another path, its answer is not used."""
        if response.connection is None:
            return
        transport = response.connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        if peer and (reason := self._policy.refusal(str(peer[0]))) is not None:
            raise ArticleFailure(
                ArticleStatus.BLOCKED, f"connected to refused address {peer[0]}: {reason}"
            )

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes:
        cap = self._settings.max_bytes
        declared = response.content_length
        if declared is not None and declared > cap:
            raise ArticleFailure(
                ArticleStatus.TOO_LARGE, f"page declares {declared} bytes, over the {cap} cap"
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > cap:
                raise ArticleFailure(ArticleStatus.TOO_LARGE, f"page is over the {cap} byte cap")
            chunks.append(chunk)
        return b"".join(chunks)


def _parse(url: str) -> URL:
    try:
        return URL(url)
    except (ValueError, TypeError) as exc:
        raise ArticleFailure(ArticleStatus.INVALID_URL, f"unparsable URL: {exc}") from exc
