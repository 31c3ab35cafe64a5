"""Names written at the start of a message ("kristan: try the terminal", "<ben> yes"), read as
addresses to someone who spoke nearby.

People address each other by writing a name, not only with a mention: on IRC a client completes
a nick only when its owner is in the channel, and on Discord "ben, try this" is typed without an
@ as often as with one. The written name is often shortened or misspelled ("kristan" for
"Kristan_uk2", "loquitis_of_bord" for "loquitus_of_borg"), so it is matched loosely (see
``names_match``), but only against the people in the candidates (a handful of names, not a
member list), and only when it is followed by ``:`` or ``,`` or is written ``<name>``: on the
training logs a name at the start without that punctuation named someone in the conversation
barely half the time, with it 83% of the time. A written address counts as a mention wherever
the score reads mentions.

A whole name elsewhere in a message ("what about mireille's idea?") is read too, by
``named_people``: the relevance score takes the people the trigger names that way as people it
talks with.

A Discord display name of several words ("John Smith") is known by each of its words as well
(``name_keys``): nobody writes "johnsmith".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

# "<name>", "@name", or "name:" / "name," opening a message (a name of at most 32 characters,
# Discord's own limit; IRC nicks are shorter), the full-width colon and comma of Chinese and
# Japanese text ("小明：") included. Discord's markup in angle brackets (mentions "<@123>",
# channels "<#123>", emoji "<:pepe:123>", commands "</help:1>", times "<t:1:R>") holds one of
# ``@#:/`` and is not a name.
_OPENING = re.compile(r"\s*(?:<([^\s<>@#:/&!]{1,32})>|@?([^\s:,：，<>@]{1,32})\s*[:,：，])")
_NOT_LETTERS = re.compile(r"[\W_]+")
MIN_KEY = 3  # "al:" is too likely a word, a smiley or a ratio
# Two characters make a name in the scripts that write a syllable or a word per character
# (Chinese, Japanese kana, Korean Hangul: "小明", "ゆき"): the CJK radicals to the unified
# ideographs (kana and compatibility jamo among them), the Hangul syllables, the compatibility
# ideographs.
_WIDE_SCRIPTS = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
MIN_WIDE_KEY = 2
# Words that open a sentence with a comma or a colon ("yes, it works", "note: ..."), never
# read as names: a member named Sam is not addressed by "same, it fails here".
_OPENER_TEXT = """yes yeah yep nope okay well also and but then now hmm hey hello thanks thank sorry
    sure right still just anyway actually ahh lol heh hah haha wow btw imho imo fyi not
    please what why how when where who which this that there here first second edit
    update note http https ftp same nice fine wait maybe cool great true false exactly
    agreed indeed weird odd interesting correct wrong alright anyhow tomorrow today
    tonight yesterday everyone everybody anybody guys folks personally basically honestly
    seriously really damn dude man bro sir lmao omg ugh hmmm oops ouch wtf fwiw tldr ps
    edit2 update2 warning error question answer example output result solution problem
    step
    大家 各位 你好 您好 谢谢 不过 但是 然后 所以 其实 好的 是的 嗯嗯 哈哈 首先 另外 比如 注意 还有
    如果 问题 はい いいえ でも あと それ これ なるほど ありがとう すみません みなさん 皆さん 例えば
    네네 아니요 그런데 근데 그리고 여러분 감사합니다 안녕하세요"""
_OPENERS = frozenset(_OPENER_TEXT.split())


def name_key(name: str) -> str:
    """A name as it is compared: case folded, letters and digits only ("Fryguy--" -> "fryguy")."""
    return _NOT_LETTERS.sub("", name.casefold())


# Words of a display name that say what a person is, not who: "The Doctor" is not called
# "the", "Dr Grey" not "dr".
_NOT_NAME_PART_TEXT = """the mr mrs ms miss mister dr doc sir madam lord lady king queen prince
    princess saint van von der den del della des les las los real official"""
_NOT_NAME_PARTS = frozenset(_NOT_NAME_PART_TEXT.split())


def name_keys(names: Iterable[object]) -> frozenset[str]:
    """The keys of a person's names (username, nickname, display name: whichever are set).

    A name of several words ("John Smith", a Discord display name) is also known by each word
    that can stand for it alone: people write "john, ..." or "what did smith say", not the
    whole name run together. A word too short to be read as a name (``MIN_KEY``), one that
    opens sentences or only says what a person is ("the", "dr") is not a key of its own.
    """
    keys: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            continue
        if key := name_key(name):
            keys.add(key)
        words = name.split()
        if len(words) > 1:
            keys.update(part for word in words if _stands_alone(part := name_key(word)))
    return frozenset(keys)


def _stands_alone(part: str) -> bool:
    """Whether one word of a name can be written for the whole name."""
    return (
        len(part) >= _min_key(part)
        and part not in _OPENERS
        and part not in _NOT_NAME_PARTS
        and not part.isdigit()
    )


def opening_of(content: str) -> str | None:
    """The key of the name ``content`` opens with as an address, if it opens with one."""
    found = _OPENING.match(content)
    if found is None:
        return None
    key = name_key(found.group(1) or found.group(2))
    if len(key) < _min_key(key) or key in _OPENERS or key.isdigit():
        return None
    return key


def _min_key(key: str) -> int:
    """The fewest characters a written name needs to be read as one: two letters of Latin
    script are a word or a smiley far more often than a name, two of those scripts are not."""
    return MIN_WIDE_KEY if _WIDE_SCRIPTS.fullmatch(key) else MIN_KEY


MAX_TYPO_KEY = 20  # longer names are matched exactly or by their start: a typo table costs


def _within_edits(a: str, b: str, limit: int) -> bool:
    """Whether ``a`` becomes ``b`` in at most ``limit`` single-letter edits (both at most
    ``MAX_TYPO_KEY`` long, so the table stays small)."""
    if abs(len(a) - len(b)) > limit or max(len(a), len(b)) > MAX_TYPO_KEY:
        return False
    previous = list(range(len(b) + 1))
    for i, letter in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (letter != other))
            )
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


@functools.lru_cache(maxsize=4096)
def names_match(opening: str, key: str) -> bool:
    """Whether a written name stands for a person's name key: equal, a start of it (a nick
    shortened: "kristan" for "Kristan_uk2"), or a typo away in a longer name (one letter in a
    name of five or more, two in one of eight or more; the first letter right). A written word
    longer than the name never is: "same" is not Sam, "maybe" not May."""
    if opening == key:
        return True
    if len(key) < _min_key(key) or len(opening) < _min_key(opening):
        return False
    if key.startswith(opening):
        return True
    if opening[0] != key[0] or len(key) < 5:
        return False
    return _within_edits(opening, key, 2 if len(key) >= 8 else 1)


class Addressable(Protocol):
    @property
    def author(self) -> int: ...
    @property
    def mentions(self) -> frozenset[int]: ...
    @property
    def opening(self) -> str | None: ...
    @property
    def author_keys(self) -> frozenset[str]: ...


A = TypeVar("A", bound=Addressable)


def addressee(opening: str, people: dict[int, frozenset[str]], writer: int) -> int | None:
    """The one person ``opening`` names among ``people`` (id -> name keys), the writer aside; an
    exact name wins over loose ones, and two loose matches name nobody."""
    exact = [p for p, keys in people.items() if p != writer and opening in keys]
    if exact:
        return exact[0] if len(exact) == 1 else None
    # A loose match keeps the first letter (``names_match``): only those keys are compared.
    head = opening[:1]
    loose = [
        p
        for p, keys in people.items()
        if p != writer and any(names_match(opening, key) for key in keys if key[:1] == head)
    ]
    return loose[0] if len(loose) == 1 else None


def people_of(messages: Iterable[Addressable]) -> dict[int, frozenset[str]]:
    """Who wrote ``messages``, with the name keys each is known by there."""
    people: dict[int, set[str]] = {}
    # A person writes many messages under one name: each (person, names) once, in order.
    for author, keys in dict.fromkeys((m.author, m.author_keys) for m in messages):
        people.setdefault(author, set()).update(keys)
    return {person: frozenset(keys) for person, keys in people.items() if keys}


def _unresolved_opening(message: Addressable) -> str | None:
    """The name ``message`` opens with, unless it mentions someone (then that is the address)."""
    return None if message.mentions else message.opening


def written_addressee(message: Addressable, among: Iterable[Addressable]) -> int | None:
    """The person ``message`` addresses by a written name, among the authors of ``among``; None
    when it names no one of them or does not open with a name (then ``among`` is not read)."""
    opening = _unresolved_opening(message)
    return None if opening is None else addressee(opening, people_of(among), message.author)


def named_people(keys: Iterable[str], among: Iterable[Addressable], writer: int) -> frozenset[int]:
    """The authors of ``among`` (the writer aside) one of whose names is among ``keys``, the
    name keys of the words a message writes anywhere ("what about mireille's idea?").

    Only whole names count: in the middle of a sentence a name is talked about as often as
    talked to, and a shortened one is as often a word. On the training logs, a trigger that
    writes the name of someone who spoke in the 50 messages before it answers one of that
    person's messages 82% of the time, and that person is in its conversation 95% of the time.
    """
    written = frozenset(key for key in keys if len(key) >= _min_key(key) and key not in _OPENERS)
    if not written:
        return frozenset()
    return frozenset(
        message.author
        for message in among
        if message.author != writer and not message.author_keys.isdisjoint(written)
    )


def with_written_addresses(trigger: A, candidates: Sequence[A]) -> tuple[A, list[A]]:
    """``trigger`` and ``candidates`` with each written address added to the message's
    mentions, the people being those who wrote any of them."""
    everyone = [trigger, *candidates]
    # Few messages open with a name: only those are looked at again.
    openings = [
        (i, opening)
        for i, message in enumerate(everyone)
        if (opening := _unresolved_opening(message)) is not None
    ]
    if openings:
        people = people_of(everyone)
        for i, opening in openings:
            message = everyone[i]
            person = addressee(opening, people, message.author)
            if person is not None:
                everyone[i] = replace(message, mentions=frozenset({person}))
    return everyone[0], everyone[1:]
