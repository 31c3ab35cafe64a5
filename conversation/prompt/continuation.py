"""A member's message text laid out so that it can never spell a line the bot writes.

In a user turn the bot writes structure at the start of a line: the speaker header
(``Name:``, ``Name (user 123):``, ``Name (replying to Other):``) that opens every message, and
the ``[sent Friday 2025-03-14 13:28 UTC]`` stamp that closes the message answered and tells the
model the current time. The role and the ``name`` field do not separate messages for every
server: llama.cpp's and Ollama's chat templates drop ``name``, the Anthropic provider strips it
and merges consecutive user turns into one. A member who types a line break followed by
``Ben (replying to Threadwise): ...`` would, written as-is, give the model a line that is
indistinguishable from one of the bot's.

So everything a message says after its header line is a *continuation line*:

* every line break spelling a model or viewer may honour (``\\r\\n``, ``\\r``, U+2028, U+2029,
  U+0085, vertical tab, form feed, the information separators) becomes ``\\n``;
* every non-blank continuation line is indented by two spaces. The start of a line is then the
  bot's alone, whatever a member writes. A constant indent keeps code blocks and lists readable:
  relative indentation is untouched, and removing two spaces gives the text back. Blank lines
  stay empty (no trailing spaces to pay tokens for);
* a continuation line that would still read as the bot's structure once indented has the
  punctuation that makes it so escaped, Markdown style: ``[sent`` becomes ``\\[sent`` and the colon
  closing a ``... (replying to X):``, ``... (user 123):`` or ``... (user …0123):`` header
  becomes ``\\:``, in their full-width spellings too (``（replying to X）：``). A reader (and a
  model, which has read much Markdown) sees the same words; the exact spelling of the bot's
  structure is never produced. Plain ``Word:`` lines are left alone:
  "Note:", "Error:" or a YAML key in a pasted file cannot be told from a name without knowing
  the context, and depending on the context would make a message render differently from one
  prompt to the next, breaking the prefix that model servers cache. The indent already marks
  them as quoted text of the message they are in.

The first line is not touched: it follows the bot's ``Name: `` on the same line. This runs for
every user message of every context, so the common cases are plain substring tests: a message of
one line costs well under a microsecond, a pasted 7,000-character log a few tens
(``python -m bench.continuation``). Every message renders the same in whatever context it is
in, so consecutive prompts still share their prefix.
"""

from __future__ import annotations

import re

INDENT = "  "

# str.splitlines' line boundaries: what some reader of the prompt may show as a new line.
_LINE_BREAK = re.compile("\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# After the indent: the stamp's opening, or a header ending in the bot's parenthesised forms
# (bounded: names are at most 100 characters, and a long line must not cost a long search).
# The brackets, parentheses and colon count in their full-width forms too (a model reads
# "（replying to X）：" as the header it spells), and the space before the parenthesis may go.
_LOOKALIKE = re.compile(
    r"^(?P<lead>[ \t]*)(?:(?P<stamp>[\[\uff3b])(?=sent\b)"
    r"|(?P<header>[^\n]{1,200}? ?[(\uff08](?:replying to [^\n]{1,120}?"
    r"|user (?:\u2026|\.\.\.)?\d+)[)\uff09])(?P<colon>[:\uff1a]))",
    re.MULTILINE | re.IGNORECASE | re.ASCII,
)
_CONTINUATION = re.compile(r"\n(?=[^\n])")
# Plain substring tests are many times cheaper than a regular expression scan over a long text:
# they decide whether the scans are needed at all (most messages need neither).
_OTHER_BREAKS = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LOOKALIKE_HINTS = ("[sent", "(replying to ", "(user ", "\uff3bsent", "\uff08replying to ",
                    "\uff08user ")  # fmt: skip


def _escaped(match: re.Match[str]) -> str:
    if match["stamp"]:
        return f"{match['lead']}\\{match['stamp']}"
    return f"{match['lead']}{match['header']}\\{match['colon']}"


def continuation_lines(text: str) -> str:
    """``text`` with every line after the first indented and the bot's spellings escaped."""
    if any(br in text for br in _OTHER_BREAKS):
        text = _LINE_BREAK.sub("\n", text)
    first, newline, rest = text.partition("\n")
    if not newline:
        return text
    folded = rest.lower()
    if any(hint in folded for hint in _LOOKALIKE_HINTS):
        rest = _LOOKALIKE.sub(_escaped, rest)
    return indent_continuations(f"{first}\n{rest}")


def indent_continuations(text: str) -> str:
    """Only the indent: for text already made safe (the budget's shortened attachment)."""
    return _CONTINUATION.sub("\n" + INDENT, text)


def without_indent(text: str) -> str:
    """The continuation lines of ``text`` (all of them, the first included) without their
    indent: the member's own layout, escapes kept."""
    return "\n".join(line.removeprefix(INDENT) for line in text.split("\n"))
