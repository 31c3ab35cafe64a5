"""Linked articles, read into the context: find links, fetch them safely, extract, render XML.

Modules, one job each: ``urls`` (finding links), ``guard`` (address policy, SSRF), ``fetch``
(aiohttp download), ``models`` (the results and failures every step returns), ``charset``
(bytes to text, web charsets only), ``trim`` (what goose3 gets to see), ``extract`` (goose3 in
workers), ``cache`` (TTL/LRU + shared fetches), ``render`` (escaped XML), ``service`` (the
façade the materializer uses).

May import ``conversation.common`` only.
"""

from conversation.articles.charset import decode_html
from conversation.articles.extract import Extractor, WorkerKind, extract_article
from conversation.articles.guard import AddressPolicy, StaticResolver, block_reason
from conversation.articles.models import ArticleFailure, ArticleResult, ArticleStatus
from conversation.articles.render import clip_text, render_embeddings, xml_attr, xml_text
from conversation.articles.service import LIVE_LIMITS, ArticleService, ArticleStats
from conversation.articles.urls import find_urls, url_key

__all__ = [
    "LIVE_LIMITS",
    "AddressPolicy",
    "ArticleFailure",
    "ArticleResult",
    "ArticleService",
    "ArticleStats",
    "ArticleStatus",
    "Extractor",
    "StaticResolver",
    "WorkerKind",
    "block_reason",
    "clip_text",
    "decode_html",
    "extract_article",
    "find_urls",
    "render_embeddings",
    "url_key",
    "xml_attr",
    "xml_text",
]
