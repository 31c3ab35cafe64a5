"""The clue cache: a message's clue built once per text, the least recently used dropped."""

from __future__ import annotations

from pathlib import Path

from conversation.replay.log_source import LogSource
from conversation.selection.clues import ClueCache, clue_of

LOGS = Path(__file__).resolve().parents[2] / "logs"


def messages() -> list:
    return [m for m in LogSource.from_file(LOGS / "interleaved.json").messages if m.content]


def test_a_message_s_clue_is_built_once_and_an_edit_makes_a_new_one():
    message = messages()[0]
    cache = ClueCache()
    first = cache.clue(message)
    assert first == clue_of(message)
    assert cache.clue(message) is first
    message.content = "an edited text about grub"
    edited = cache.clue(message)
    assert edited is not first and "grub" in edited.words
    assert len(cache) == 2  # the old text's clue stays until it is the least recently used


def test_past_its_size_the_least_recently_used_clue_goes():
    a, b, c, d = messages()[:4]
    cache = ClueCache(size=3)
    kept = {m.id: cache.clue(m) for m in (a, b, c)}
    assert cache.clue(a) is kept[a.id]  # used again: now the most recently used
    cache.clue(d)
    assert len(cache) == 3
    assert cache.clue(a) is kept[a.id]  # kept
    assert cache.clue(b) is not kept[b.id]  # b was the least recently used: built again


def test_forget_drops_every_clue_of_a_deleted_message_and_of_a_forgotten_person():
    """Derived words are still a member's words: a deletion takes every text's clue of the
    message (an edit's too), forget-user every clue by or mentioning the person."""
    chosen = messages()[:6]
    cache = ClueCache()
    for message in chosen:
        cache.clue(message)
    deleted = chosen[0]
    deleted.content = "an edited text about grub"
    cache.clue(deleted)  # its second text
    person = chosen[1].author.id
    theirs = {m.id for m in chosen if m.author.id == person or person in cache.clue(m).mentions}
    assert cache.forget([deleted.id]) == {deleted.id}
    assert cache.forget(people=[person]) == theirs - {deleted.id}
    left = {clue.id for clue in cache._clues.values()}
    assert deleted.id not in left and not left & theirs
    assert left == {m.id for m in chosen} - theirs - {deleted.id}
