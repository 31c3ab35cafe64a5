"""Linked articles, read into the context: find links, fetch them safely, extract, render XML.

Modules, one job each: ``urls`` (finding links), ``guard`` (address policy, SSRF), ``fetch``
(aiohttp download), ``models`` (the results and failures every step returns), ``charset``
(bytes to text, web charsets only), ``trim`` (what goose3 gets to see), ``extract`` (goose3 in
workers), ``cache`` (TTL/LRU + shared fetches), ``render`` (escaped XML), ``service`` (the
façade the materializer uses).

May import ``conversation.common`` only.
"""

from conversation.articles.guard import AddressPolicy, StaticResolver, block_reason
from conversation.articles.models import ArticleFailure, ArticleResult, ArticleStatus
from conversation.articles.render import render_embeddings
from conversation.articles.service import ArticleService, ArticleStats
from conversation.articles.urls import find_urls, url_key

__all__ = [
    "AddressPolicy",
    "ArticleFailure",
    "ArticleResult",
    "ArticleService",
    "ArticleStats",
    "ArticleStatus",
    "StaticResolver",
    "block_reason",
    "find_urls",
    "render_embeddings",
    "url_key",
]
