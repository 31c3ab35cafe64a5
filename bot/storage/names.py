"""Finding a forgotten person's names in what others wrote, and taking them out.

A name is matched as a whole word. Where a message is known to name the person (a mention or a
reply header, recorded by id) and in the bot's own words, every recorded name is taken out
exactly as it was shown. In any free text (a member typing "do you agree with chloe?") case and
accents are also ignored, so "chloe" goes with "Chloé"; except for names shorter than
``FREE_TEXT_MIN_LENGTH``, which ignoring case would take common words ("al", "jo") out of every
message in the store.

The person's id goes too, in every spelling text gives it (``<@id>``, ``<@!id>``, a bare
``"user_id": id`` in a tool's arguments or result), and a name as JSON escapes it
(``Chlo\\u00e9``: a tool's arguments as the model wrote them, a server's JSON result).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from bot.storage.models import REMOVED
from conversation.prompt import label_name, neutral_name, without_structure

FREE_TEXT_MIN_LENGTH = 3


def folded(name: str) -> str:
    """The name without accents ("Chloé" -> "Chloe"); letters of other scripts are kept."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def name_spellings(names: Iterable[str], *, free_text: bool) -> list[str]:
    """The spellings to look for, longest first (so "Chloé B" wins over "Chloé")."""
    spellings: set[str] = set()
    # A header spells a name with look-alike parentheses, brackets and colons, and a name
    # everywhere loses its invisible characters (see conversation.prompt.names): those spellings are
    # theirs too.
    names = [
        variant
        for name in names
        for variant in {
            name,
            without_structure(name),
            neutral_name(name, fallback=""),
            label_name(name, fallback=""),
        }
    ]
    for name in names:
        name = name.strip()
        if not name:
            continue
        if not free_text:
            spellings.update((name, _json_escaped(name)))
            continue
        for base in (name, folded(name)):
            for spelling in (base, base.replace(" ", "_")):  # the second as OpenAI names go
                if len(spelling) >= FREE_TEXT_MIN_LENGTH:
                    spellings.update((spelling, _json_escaped(spelling)))
    return sorted(spellings, key=lambda s: (-len(s), s))


def _json_escaped(name: str) -> str:
    """The name as JSON writes it with only ASCII ("Chlo\\u00e9"); itself when it is ASCII."""
    return json.dumps(name)[1:-1]


def _accented() -> dict[str, str]:
    """Each ASCII letter and the Latin letters that fold to it ("e": "éèêëÉÈÊË...")."""
    table: dict[str, str] = {}
    for code in range(0xC0, 0x250):
        letter = chr(code)
        base = folded(letter)
        if len(base) == 1 and base.isascii() and base.isalpha() and base != letter:
            table[base.lower()] = table.get(base.lower(), "") + letter
    return table


ACCENTED = _accented()
COMBINING = "[\u0300-\u036f]*"  # accents written as separate marks ("e" + U+0301)


def accent_free(spelling: str) -> str:
    """A regex for ``spelling`` whose letters also match their accented forms, as written or
    JSON-escaped ("chloe" finds "Chloé" and "Chlo\\u00e9"): a name recorded without its
    accents is still found where someone wrote it with them."""
    parts = []
    for char in spelling:
        variants = ACCENTED.get(char.lower())
        if variants is None:
            parts.append(re.escape(char))
            continue
        escapes = "|".join(re.escape(json.dumps(v)[1:-1]) for v in variants)
        parts.append(f"(?:[{re.escape(char)}{variants}]{COMBINING}|{escapes})")
    return "".join(parts)


def names_pattern(
    names: Iterable[str], *, free_text: bool, user_id: int | None = None
) -> re.Pattern[str] | None:
    """Whole-word matches of the names (``free_text``: ignoring case), and of the ``user_id``
    when given (a mention whole, ``<@!id>``); None if nothing applies."""
    spellings = name_spellings(names, free_text=free_text)
    spelled = accent_free if free_text else re.escape
    alternatives = [rf"(?<!\w){spelled(s)}(?!\w)" for s in spellings]
    if user_id is not None:
        alternatives += [rf"<@!?{user_id}>", rf"(?<!\d){user_id}(?!\d)"]
    if not alternatives:
        return None
    return re.compile("|".join(alternatives), re.IGNORECASE if free_text else 0)


def redact_text(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with the names replaced; earlier placeholders are left whole (a person called
    "request" must not cut into "[removed at the user's request]")."""
    if pattern is None:
        return text
    return REMOVED.join(pattern.sub(REMOVED, piece) for piece in text.split(REMOVED))


def redact_names_in(message: dict[str, Any], pattern: re.Pattern[str] | None) -> dict[str, Any]:
    """The message with the names in its text replaced (its ``name`` field is the author's,
    not the forgotten person's, and stays)."""
    redacted = dict(message)
    content = redacted.get("content")
    if isinstance(content, str):
        redacted["content"] = redact_text(content, pattern)
    elif isinstance(content, list):
        redacted["content"] = [
            {**part, "text": redact_text(part["text"], pattern)}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    calls = redacted.get("tool_calls")
    if isinstance(calls, list):  # what the model asked a tool for can name them too
        redacted["tool_calls"] = [_redacted_call(call, pattern) for call in calls]
    return redacted


def _redacted_call(call: Any, pattern: re.Pattern[str] | None) -> Any:
    """The call with the names taken out of its arguments: of the decoded strings when the
    arguments are JSON (a name may be escaped there, "Chlo\\u00e9", or end in a backslash that
    a raw replacement would leave escaping the closing quote), written again as JSON; of the
    raw text when they are not. A call with nothing to take out is returned as it was, so its
    record (and the export) stays byte-exact."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    arguments = function["arguments"]
    try:
        value = json.loads(arguments)
        redacted = _redacted_value(value, pattern)
    except (ValueError, RecursionError):
        new = redact_text(arguments, pattern)
    else:
        new = arguments if redacted == value else json.dumps(redacted, ensure_ascii=False)
    if new == arguments:
        return call
    return {**call, "function": {**function, "arguments": new}}


def _redacted_value(value: Any, pattern: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return redact_text(value, pattern)
    if isinstance(value, int) and pattern is not None and pattern.fullmatch(str(value)):
        return REMOVED  # their id as a number ("user_id": 3123...)
    if isinstance(value, list):
        return [_redacted_value(item, pattern) for item in value]
    if isinstance(value, dict):
        return {
            redact_text(key, pattern): _redacted_value(item, pattern) for key, item in value.items()
        }
    return value
