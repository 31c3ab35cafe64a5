"""Cutting a page down to what goose3 reads for a title and a text, before goose3 sees it.

goose3 has quadratic corners a page can aim at: it looks for a charset with the regular
expression ``<meta.*?charset=`` over the whole page, which rescans the rest of a line for every
``<meta``, so a page of 12 000 ``<meta>`` tags on one line keeps a worker busy for minutes. The
page is therefore parsed once here (lxml, linear) and rebuilt with only what the title and the
text depend on:

* in ``<head>``: the first ``<title>``, the first ``<meta>`` of each kind goose3 reads for the
  title or the language (``og:title``, ``og:site_name``, ``headline``, ``description``, the
  language), and a few JSON-LD blocks (the schema ``headline`` and ``publisher``);
* everywhere: no comments, ``<style>``, other ``<script>`` or ``<meta>`` (goose3 drops them
  anyway, but only after that regular expression has run over their raw text);
* one ``<meta charset="utf-8">`` up front, matching the text handed over (already decoded), so
  goose3 neither re-encodes it with the page's own charset nor scans far for one.

The body is otherwise left as it is, so an ordinary page extracts exactly as before.
"""

from __future__ import annotations

import lxml.etree
import lxml.html

KEPT_META = frozenset(
    {"og:title", "og:site_name", "headline", "description", "lang", "content-language"}
)
MAX_JSON_LD = 3
MAX_JSON_LD_CHARS = 100_000
_DROPPED_TAGS = ("style", "script", "meta", "link", "base", "title")
_DOOMED = "x-threadwise-dropped"


def trim_for_goose(html: str) -> str:
    """``html`` rebuilt as described in the module docstring. Raises lxml's ``ParserError``
    for a page with no elements at all, as goose3 would."""
    parser = lxml.html.HTMLParser(encoding="utf-8")
    root = lxml.html.fromstring(html.encode("utf-8", errors="replace"), parser=parser)
    root = root.getroottree().getroot()
    keep = _kept_elements(root)
    doomed = [element for element in root.iter(*_DROPPED_TAGS) if element not in keep]
    head = root.find("head")
    if head is not None:
        doomed += [element for element in head if isinstance(element.tag, str)]
    for element in doomed:
        if element not in keep:
            element.tag = _DOOMED
    # One pass in C that keeps the text after each removed element: removing them one by one
    # appends that text to a neighbour each time, quadratic on a page of 100,000 comments.
    lxml.etree.strip_elements(
        root, lxml.etree.Comment, lxml.etree.ProcessingInstruction, _DOOMED, with_tail=False
    )
    if head is None:
        head = lxml.html.Element("head")
        root.insert(0, head)
    head.insert(0, lxml.html.Element("meta", charset="utf-8"))
    return lxml.html.tostring(root, encoding="unicode")


def _kept_elements(root: lxml.html.HtmlElement) -> set[lxml.etree._Element]:
    keep: set[lxml.etree._Element] = set()
    title = next(root.iter("title"), None)
    if title is not None:
        keep.add(title)
    seen: set[str] = set()
    for meta in root.iter("meta"):
        kind = (meta.get("property") or meta.get("name") or meta.get("http-equiv") or "").lower()
        if kind in KEPT_META and kind not in seen:
            seen.add(kind)
            keep.add(meta)
    json_ld = 0
    for script in root.iter("script"):
        if json_ld == MAX_JSON_LD:
            break
        text = script.text or ""
        if (
            (script.get("type") or "").lower() == "application/ld+json"
            and len(text) <= MAX_JSON_LD_CHARS
            and "<meta" not in text.lower()
        ):
            json_ld += 1
            keep.add(script)
    return keep
