"""The bot's own notices are not its words: they stay out of the assistant's turns.

When an answer fails, is cut, or was written without the channel's history, the bot posts a
short line about it (``*The model is busy right now, try again in a minute.*``), alone or after
the part of the answer that arrived. Fed back as the assistant's turn, such a line teaches the
model (and, through exported records, the next fine-tune) to say it. The bot knows its notices;
this package must not import the bot, so the bot passes their texts in (see
``MaterializeOptions.notices``) and this module recognises them as the bot posts them: a line of
their own, wrapped in ``*...*`` or ``*(...)*`` or bare, at the end of a message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Placeholders in a notice's text (``{count}`` messages) match any short value.
_PLACEHOLDER = re.compile(r"\\\{\w+\\\}")


class BotNotices:
    """Recognises the bot's notice lines at the end of its messages."""

    def __init__(self, texts: Iterable[str]) -> None:
        cores = sorted({_core(text) for text in texts if _core(text)}, key=len, reverse=True)
        self._line = (
            re.compile(
                r"\*?\(?(?:"
                + "|".join(_PLACEHOLDER.sub(r".{1,40}?", re.escape(core)) for core in cores)
                + r")\)?\*?"
            )
            if cores
            else None
        )

    def is_notice(self, line: str) -> bool:
        return self._line is not None and self._line.fullmatch(line.strip()) is not None

    def without_notices(self, text: str) -> str:
        """The message without the notice lines that end it (all of it when it is only those)."""
        if self._line is None:
            return text
        lines = text.split("\n")
        kept = len(lines)  # the lines before the last notice found
        while lines and (not lines[-1].strip() or self.is_notice(lines[-1])):
            if lines[-1].strip():
                kept = len(lines) - 1
            lines.pop()
        if kept == len(text.split("\n")):
            return text
        return "\n".join(lines)

    def only_notice(self, text: str) -> bool:
        """Whether the message says nothing but notices (the bot's whole answer was one)."""
        return bool(text.strip()) and not self.without_notices(text).strip()


@lru_cache(maxsize=8)
def notices_of(texts: tuple[str, ...]) -> BotNotices:
    """One compiled recogniser per set of texts (the options are rebuilt on every connection)."""
    return BotNotices(texts)


def _core(text: str) -> str:
    """The words of a notice, without the ``*...*`` and ``(...)`` it is shown in."""
    core = text.strip().strip("*").strip()
    if core.startswith("(") and core.endswith(")"):
        core = core[1:-1].strip()
    return core
