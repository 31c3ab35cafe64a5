"""Names written by members (nicknames, channel and role names, file names) made safe to show.

A name is text a member chose, like a message, but it lands where the prompt has structure: in
the ``Speaker (replying to Name):`` header, in ``@mentions``, in the system prompt. There a line
break would start a forged speaker line and ``<embedding ...>`` a forged article. So a name is
flattened to one line of plain text: control and invisible direction characters become spaces,
angle brackets become their look-alike quotation marks (no tag can be spelled), and its length
is capped (Discord's own limit for channel and role names).
"""

from __future__ import annotations

import re
from typing import Any

MAX_NAME_CHARS = 100
# C0/C1 controls (line breaks included), Unicode line/paragraph separators, zero-width and
# bidirectional formatting characters (which can make a name read as something else).
_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]+"
)
_ANGLES = str.maketrans({"<": "\u2039", ">": "\u203a"})


def neutral_name(name: str, *, fallback: str = "someone") -> str:
    """``name`` as one line of text that cannot spell a tag or a new speaker line."""
    flat = " ".join(_INVISIBLE.sub(" ", name).split()).translate(_ANGLES)
    if len(flat) > MAX_NAME_CHARS:
        flat = flat[: MAX_NAME_CHARS - 1].rstrip() + "\u2026"
    return flat or fallback


def shown_name(person: Any) -> str:
    """The name members see for ``person`` where they are: server nickname, else global display
    name, else username (Discord's own order).

    nextcord's ``display_name`` is not used: on nextcord 2 it skips the global display name,
    on 3 it does not, so the same person would be named differently by version. ``person`` is a
    member (with ``nick``) or a user; a field it lacks counts as unset.
    """
    return str(
        getattr(person, "nick", None)
        or getattr(person, "global_name", None)
        or getattr(person, "name", None)
        or getattr(person, "display_name", None)
        or ""
    )


def bot_name_in(channel: Any, bot_user: Any) -> str:
    """What members of ``channel`` see the bot called: its member in the channel's server (server
    nickname there), else, in a DM, the bot user itself; ``{bot_name}`` in the system prompt."""
    guild = getattr(channel, "guild", None)
    member = getattr(guild, "me", None) if guild is not None else None
    return shown_name(member if member is not None else bot_user)
