"""Finding the links of a message, and the key under which a link is cached.

Discord users write links bare, in ``<...>`` (to suppress the preview), inside Markdown
``[text](url)``, or followed by punctuation; a link in a code span or block is an example, not
something to read (Discord does not preview those either).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from yarl import URL

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_LINK = re.compile(r"https?://[^\s<>\"'`\x00-\x1f]+", re.IGNORECASE)
_EMBED_LINK = re.compile(r"https?://\S+", re.IGNORECASE)
_TRAILING = ".,;:!?'\"*_~"
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _trim(url: str) -> str:
    """Drop sentence punctuation after a link, but keep a closing bracket the link itself opened
    (``https://en.wikipedia.org/wiki/Foo_(bar)``)."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last in _PAIRS and url.count(last) > url.count(_PAIRS[last])):
            url = url[:-1]
        else:
            break
    return url


def url_key(url: str) -> str:
    """The identity of a link for deduplication and caching: the fragment never reaches the
    server, and scheme and host are case-insensitive."""
    try:
        return str(URL(url).with_fragment(None))
    except ValueError:
        return url


def links_in(content: str) -> list[str]:
    """Every http(s) link in the text, in order, outside code spans and blocks."""
    prose = _CODE.sub(" ", content)
    found = (_trim(match.group(0)) for match in _LINK.finditer(prose))
    return [url for url in found if "://" in url and not url.endswith("://")]


def dedupe(urls: Iterable[str]) -> list[str]:
    """Order-preserving, keyed by ``url_key`` (the first spelling wins)."""
    seen: set[str] = set()
    unique: list[str] = []
    for url in urls:
        key = url_key(url)
        if key not in seen:
            seen.add(key)
            unique.append(url)
    return unique


def message_links(content: str, embed_urls: Iterable[str]) -> list[str]:
    """Links of one message: those in its text first, then those of its link embeds (Discord
    often previews the same link; those are merged)."""
    embeds = [url.strip() for url in embed_urls if _EMBED_LINK.fullmatch(url.strip())]
    return dedupe([*links_in(content), *embeds])


def find_urls(content: str, embed_urls: Iterable[str], limit: int) -> list[str]:
    """``message_links``, at most ``limit`` of them."""
    return message_links(content, embed_urls)[: max(limit, 0)]
