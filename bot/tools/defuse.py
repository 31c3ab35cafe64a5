"""Making a tool's result inert before the model reads it.

A result is data, never instructions: it enters the prompt as escaped character data inside a
``<tool_result>`` element, like a linked article inside ``<embedding>`` (a page cannot close
the element and write what looks like the bot's own structure). Its mass mentions and mention
syntax get a zero-width space, so a model that copies a result into its answer cannot ping
anyone with it (the posting side's ``allowed_mentions`` is the first guard; this is the
second)."""

from __future__ import annotations

import re

from conversation.articles import clip_text, xml_attr, xml_text
from conversation.common import ZERO_WIDTH_SPACE, defuse_mass_mentions

_MENTION_SYNTAX = re.compile(r"<(?=[@#]|/)")  # <@id>, <@!id>, <@&role>, <#channel>, </cmd:id>


def defuse_mentions(text: str) -> str:
    return _MENTION_SYNTAX.sub("<" + ZERO_WIDTH_SPACE, defuse_mass_mentions(text))


def cap(text: str, max_chars: int) -> str:
    """At most ``max_chars`` of the result, with a note saying how much was left out."""
    if len(text) <= max_chars:
        return text
    kept = clip_text(text, max_chars)
    return f"{kept}\n[result truncated: first {len(kept)} of {len(text)} characters shown]"


def wrap(tool: str, text: str, *, error: bool = False) -> str:
    """The result as the model reads it: defused, escaped, in its element."""
    body = xml_text(defuse_mentions(text))
    kind = "tool_error" if error else "tool_result"  # model/tool_wire.py reads the name
    return f'<{kind} tool="{xml_attr(tool)}">{body}</{kind}>'
