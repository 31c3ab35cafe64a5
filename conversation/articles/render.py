"""Turning article results into the XML suffix appended to a message for the model.

Everything in it comes from outside (a page's title and text, a URL a member typed), so every
piece is escaped: a page that contains ``</embedding>`` or a quote must stay inside its element,
or a web page could write instructions that look like the bot's own structure. Characters XML
1.0 cannot carry at all (most C0 controls, lone surrogates) are dropped, since escaping cannot
express them and a parser would reject the whole prompt section.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from conversation.articles.models import ArticleResult

_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_NEWLINES = re.compile(r"\r\n?")
_BLANK_RUNS = re.compile(r"\n{3,}")


def xml_text(value: str) -> str:
    """``value`` as XML character data."""
    value = _NEWLINES.sub("\n", _NOT_XML_CHAR.sub("", value))
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attr(value: str) -> str:
    """``value`` as a double-quoted attribute value; whitespace escaped so a parser's attribute
    normalisation gives back the same string."""
    return (
        xml_text(value)
        .replace('"', "&quot;")
        .replace("'", "&apos;")
        .replace("\n", "&#10;")
        .replace("\t", "&#9;")
    )


def normalize_text(text: str) -> str:
    """Unix newlines, at most one blank line in a row, no surrounding whitespace."""
    return _BLANK_RUNS.sub("\n\n", _NEWLINES.sub("\n", text)).strip()


def clip_text(text: str, max_chars: int) -> str:
    """At most ``max_chars`` of ``text``, cut at a word boundary near the limit when there is
    one (a word cut in half reads as a typo to the model)."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    boundary = max(cut.rfind(" "), cut.rfind("\n"))
    if boundary >= max_chars * 0.9:
        cut = cut[:boundary]
    return cut.rstrip()


def render_embedding(result: ArticleResult) -> str:
    """One ``<embedding>`` element: the title, a blank line, the text, and a note when cut."""
    body = f"{result.title}\n\n{result.text}" if result.title else result.text
    attributes = f'type="article" url="{xml_attr(result.url)}"'
    if result.truncated:
        attributes += ' truncated="true"'
        body += (
            f"\n[article truncated: first {len(result.text)} of"
            f" {result.original_chars} characters shown]"
        )
    return f"<embedding {attributes}>{xml_text(body)}</embedding>"


ARTICLE_REF_TAG = '<embedding type="article-ref" url="'
"""How a reference to an article embedded earlier in the prompt begins (its own element type,
so nothing that looks for articles mistakes it for one)."""


def render_reference(result: ArticleResult) -> str:
    """An article already embedded earlier in the same prompt: named, not repeated."""
    return f'{ARTICLE_REF_TAG}{xml_attr(result.url)}" shown="earlier"/>'


def render_embeddings(
    results: Iterable[ArticleResult], *, shown_earlier: Collection[str] = ()
) -> str:
    """The ``<embeddings>...</embeddings>`` suffix for a message's successful articles, in the
    order given, or "" when none succeeded (failures stay in the results, with their reasons).

    Articles whose URL is in ``shown_earlier`` are only referred to: a link posted forty times
    must not put forty copies of one page into a prompt.
    """
    elements = [
        render_reference(result) if result.url in shown_earlier else render_embedding(result)
        for result in results
        if result.ok
    ]
    if not elements:
        return ""
    return "<embeddings>" + "".join(elements) + "</embeddings>"
