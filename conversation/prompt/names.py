"""Names written by members (nicknames, channel and role names, file names) made safe to show.

A name is text a member chose, like a message, but it lands where the prompt has structure: in
the ``Speaker (replying to Name):`` header, in ``@mentions``, in the system prompt. There a line
break would start a forged speaker line and ``<embedding ...>`` a forged article. So a name is
flattened to one line of plain text: control characters become spaces, characters that show as
nothing (format characters such as zero-width joiners and direction marks, Hangul fillers,
variation selectors, tag characters) are taken out, angle brackets become their look-alike
quotation marks (no tag can be spelled), and its length is capped (Discord's own limit for
channel and role names).

A speaker label (``speaker_labels``) goes further, because it opens a line of the prompt: the
header ``Name:`` or ``Name (replying to Other):`` is read by where its parentheses and colon are,
and the trigger closes with a ``[sent ...]`` stamp. So in a label the name's own parentheses,
square brackets and colons become their full-width look-alikes (``Ben （replying to Threadwise）``,
``Ben： I approve``): the ASCII ones are the bot's alone, and no nickname can spell another
speaker's header, a reply that was not made, or the stamp. Two people whose labels would read the
same (equal, or equal but for case, width or spacing, or spelled with look-alike letters: Cyrillic
"Аna" for "Ana"; ``lab/make_lookalikes.py`` says which) get the tail of their user id as a
suffix, ``Ben (user …0102)``, deterministic and the same in every prompt they are in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from conversation.prompt.lookalike_table import INVISIBLE_RANGES, LOOKALIKES

MAX_NAME_CHARS = 100
# C0/C1 controls (line breaks included) and Unicode line/paragraph separators: they part words.
_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# Characters that show as nothing (every format character: zero-width joiners and spaces, soft
# hyphen, direction marks; Hangul fillers, variation selectors, tag characters): taken out, so
# "B\u200den" is the "Ben" it shows as and is told apart from Ben like any other "Ben".
_INVISIBLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE_RANGES) + "]+")
_ANGLES = str.maketrans({"<": "\u2039", ">": "\u203a"})


def neutral_name(name: str, *, fallback: str = "someone") -> str:
    """``name`` as one line of text that cannot spell a tag or a new speaker line."""
    flat = " ".join(_INVISIBLE.sub("", _BREAKS.sub(" ", name)).split()).translate(_ANGLES)
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


class People:
    """Each person of one context as the fullest object seen of them, so that one name stands
    for them throughout a prompt.

    Discord sends a message's member fields (the server nickname) only with gateway events:
    a message read from history, or nested as the message replied to, has a bare user (unless
    the client holds that member, as it always holds the bot's own). The same person would then
    be "Zoé" in one line and "zoe_k" in the next, two people to the model. A member wins over a
    user, and among members the newest message's (Discord shows the current nickname on old
    messages too).
    """

    def __init__(self, messages: Iterable[Any]) -> None:
        self._best: dict[int, Any] = {}
        for message in messages:  # oldest first: a newer member replaces an older one
            reference = getattr(message, "reference", None)
            resolved = getattr(reference, "resolved", None)
            replied = getattr(resolved, "author", None)
            for person in (replied, *getattr(message, "mentions", ()), message.author):
                if person is not None:
                    self._offer(person)

    def _offer(self, person: Any) -> None:
        known = self._best.get(person.id)
        if known is None or _is_member(person) or not _is_member(known):
            self._best[person.id] = person

    def __call__(self, person: Any) -> Any:
        """``person`` as this context names them."""
        return self._best.get(person.id, person)


def _is_member(person: Any) -> bool:
    """A server member (nextcord's ``Member`` has ``nick``, set or not; a ``User`` has none)."""
    return hasattr(person, "nick")


def bot_name_in(channel: Any, bot_user: Any) -> str:
    """What members of ``channel`` see the bot called: its member in the channel's server (server
    nickname there), else, in a DM, the bot user itself; ``{bot_name}`` in the system prompt."""
    guild = getattr(channel, "guild", None)
    member = getattr(guild, "me", None) if guild is not None else None
    return shown_name(member if member is not None else bot_user)


# Characters that give a header line its structure, as full-width look-alikes for names.
_STRUCTURE = str.maketrans(
    {"(": "\uff08", ")": "\uff09", "[": "\uff3b", "]": "\uff3d", ":": "\uff1a"}
)
_SUFFIX_DIGITS = 4  # the shortest id tail shown; longer only when two people share it


def label_name(name: str, *, fallback: str = "someone") -> str:
    """``name`` as it may open a prompt line: neutral, and without the header's punctuation."""
    return without_structure(neutral_name(name, fallback=fallback))


def without_structure(text: str) -> str:
    """``text`` with the header's punctuation as look-alikes (how a label spells a name, so
    forgetting a person finds their name in headers too)."""
    return text.translate(_STRUCTURE)


def _likeness(label: str) -> tuple[str, str]:
    """What two labels a reader would take for the same name share: the same letters but for
    case, width or spacing; or the same look, letter for letter (Cyrillic "А" for Latin "A",
    Greek "Ν" for "N", "I" for "l"; ``conversation.prompt.lookalike_table``). Two keys, not one look
    folded by case: "Ian" is "ian" and looks like "lan", but "ian" does not look like "lan"."""
    wide = unicodedata.normalize("NFKC", label)
    looks = unicodedata.normalize("NFD", wide).translate(LOOKALIKES)
    return "".join(wide.casefold().split()), "".join(looks.casefold().split())


class SpeakerLabels:
    """The label of each person in one prompt: unique, and unable to spell structure.

    Built from everyone the prompt names in a header (authors and the people they reply to), so
    the suffix a person gets is the same wherever their label appears in that prompt.
    """

    def __init__(self, people: Iterable[tuple[int, str]]) -> None:
        named = {(int(user_id), name): label_name(name) for user_id, name in people}
        shown = {(user_id, text) for (user_id, _), text in named.items()}
        group_of = {user_id: user_id for user_id, _ in shown}  # user id -> their group's first
        keys = {person: _likeness(person[1]) for person in shown}
        self._suffix: dict[int, str] = {}
        # Alike names share a group and get suffixes. A suffixed label can in turn look like
        # another's name ("Ben (user …0102)" for the Ben so labelled): that one joins the
        # group, until no two labels look alike. Labels within a group never do (their tails
        # differ), so each round joins groups and the rounds end; with no such name, one round.
        while _join_alike(group_of, keys):
            groups: dict[int, set[int]] = {}
            for user_id in group_of:
                groups.setdefault(_root(group_of, user_id), set()).add(user_id)
            for ids in groups.values():
                if len(ids) > 1:
                    self._suffix.update(_id_tails(ids))
            keys = {
                (user_id, text): _likeness(self._suffixed(user_id, text))
                for user_id, text in shown
                if user_id in self._suffix
            } | {person: key for person, key in keys.items() if person[0] not in self._suffix}
        # Each label once: a context asks for one per message.
        self._labels = {person: self._suffixed(person[0], text) for person, text in named.items()}

    def label(self, user_id: int, name: str) -> str:
        found = self._labels.get((int(user_id), name))
        return found if found is not None else self._suffixed(int(user_id), label_name(name))

    def _suffixed(self, user_id: int, text: str) -> str:
        tail = self._suffix.get(user_id)
        if tail is None:
            return text
        cut = "" if tail == str(user_id) else "\u2026"  # the whole id needs no ellipsis
        return f"{text} (user {cut}{tail})"


def _join_alike(group_of: dict[int, int], keys: dict[tuple[int, str], tuple[str, str]]) -> bool:
    """Put people whose labels share a key (``_likeness``) in one group; whether any two
    groups were joined."""
    joined = False
    first_with: dict[tuple[int, str], int] = {}  # (which key, key) -> first person with it
    for (user_id, _), likeness in keys.items():
        for key in enumerate(likeness):
            one, other = (
                _root(group_of, first_with.setdefault(key, user_id)),
                _root(group_of, user_id),
            )
            if one != other:
                group_of[max(one, other)] = min(one, other)
                joined = True
    return joined


def speaker_labels(people: Iterable[Any]) -> SpeakerLabels:
    """Labels for users (anything with an ``id`` and Discord's name fields), by shown name."""
    return SpeakerLabels((person.id, shown_name(person)) for person in people)


def _root(group_of: dict[int, int], user_id: int) -> int:
    while group_of[user_id] != user_id:
        user_id = group_of[user_id]
    return user_id


def _id_tails(ids: set[int]) -> dict[int, str]:
    """The shortest tails (at least four digits) of the ids that tell them all apart."""
    longest = max(len(str(user_id)) for user_id in ids)
    for digits in range(_SUFFIX_DIGITS, longest + 1):
        tails = {user_id: str(user_id)[-digits:] for user_id in ids}
        if len(set(tails.values())) == len(ids):
            return tails
    return {user_id: str(user_id) for user_id in ids}
