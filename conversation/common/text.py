"""Text from outside made encodable: lone surrogates and NUL become the replacement character.

JSON may carry ``"\\ud83d"`` on its own (half of an emoji, cut by a client or typed on purpose);
Python decodes it into a ``str`` that no UTF-8 encoder accepts. One such message in a channel would
make every request body, every store write and every printed line that holds it fail, so text is
cleaned where it enters (a gateway or REST message, a channel log) and nodes refuse to hold anything
else (``conversation.graph.node``). NUL is valid Unicode, but PostgreSQL's text cannot hold it, so a
message or an answer carrying one would not be recorded there.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
ZERO_WIDTH_SPACE = "\u200b"
_MASS_MENTION = re.compile(r"@(?=(?:everyone|here))", re.IGNORECASE)
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNCLEAN = re.compile("[\x00\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with NUL and every surrogate code point that is not half of a pair replaced by
    U+FFFD.

    A pair written as two code points (``"\\ud83d\\ude00"``) is joined into the character it
    encodes. Clean text (nearly all of it) is returned as it is, after one scan.
    """
    if _UNCLEAN.search(text) is None:
        return text
    text = text.replace("\x00", REPLACEMENT)
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_json(value: Any) -> Any:
    """Parsed JSON (or any dicts and lists) with every string, keys included, cleaned; other
    values are left alone."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_json(key): clean_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_json(item) for item in value]
    return value


def clean_message(message: Any) -> None:
    """Clean, in place, the member-written text of a message object from the Discord library.

    Only attributes that hold a lone surrogate or NUL are reassigned, so a clean message (nearly
    every one) costs a scan of its content and nothing else. Names of people, roles and channels are
    shared objects of the library's cache; they are cleaned when rendered (see
    ``conversation.graph.node``), not here.
    """
    content = getattr(message, "content", None)
    if isinstance(content, str) and _UNCLEAN.search(content):
        message.content = clean_text(content)
    for embed in getattr(message, "embeds", None) or ():
        for attribute in ("title", "description"):
            value = getattr(embed, attribute, None)
            if isinstance(value, str) and _UNCLEAN.search(value):
                setattr(embed, attribute, clean_text(value))
    for attachment in getattr(message, "attachments", None) or ():
        filename = getattr(attachment, "filename", None)
        if isinstance(filename, str) and _UNCLEAN.search(filename):
            attachment.filename = clean_text(filename)


def defuse_mass_mentions(text: str) -> str:
    """Put a zero-width space after the ``@`` of every ``@everyone``/``@here`` (any case).

    Idempotent; the text reads the same in Discord but can no longer ping anyone. Here rather
    than in ``bot.discord.mentions`` because the answer's posting and the tools' results both
    defuse, and the tools' layer sits below Discord's.
    """
    return _MASS_MENTION.sub("@" + ZERO_WIDTH_SPACE, text)
