"""Names written at the start of a message read as addresses, whole names anywhere in the trigger
read as the people it talks with, and what the score makes of them."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.dce import parse_export
from conversation.replay.log_source import LogSource
from conversation.selection.addressing import (
    name_keys,
    named_people,
    names_match,
    opening_of,
    with_written_addresses,
)
from conversation.selection.builder import ContextBuilder
from conversation.selection.clues import Clue, clue_of, words_of
from conversation.selection.features import FEATURES, with_addresses
from conversation.selection.result import ContextSelection
from conversation.selection.weights import load_model
from conversation.sources.cache import ChannelCache
from conversation.sources.reader import ChannelReader
from tests.fakes.synthetic import busy_channel

ADDRESSED = FEATURES.index("its author is addressed by the trigger")


@pytest.mark.parametrize(
    ("content", "opening"),
    [
        ("Kristan: you might switch to the terminals", "kristan"),
        ("fryguy,  i think so", "fryguy"),
        ("<riotkittie>...why dont you try", "riotkittie"),
        ("@ben, try this", "ben"),
        ("loquitis_of_bord : if your card is nvidia", "loquitisofbord"),
        ("小明：你试过重启吗", "小明"),  # the full-width colon; two characters make a name there
        ("ゆき，それは", "ゆき"),
        ("김철수: 안녕", "김철수"),
        ("철수: 안녕", "철수"),  # two Hangul syllables make a name too
    ],
)
def test_a_name_opening_a_message_with_a_colon_a_comma_or_brackets_is_an_address(
    content: str, opening: str
):
    assert opening_of(content) == opening


@pytest.mark.parametrize(
    "content",
    [
        "kristan you might switch",  # no punctuation: a name barely half the time
        "yes, it works now",
        "thanks, that did it",
        "http://example.com/page",
        "<@123456789012345678> hi",  # a real mention: the mention is the address
        "<:pepe:123456789012345678> lol",  # Discord's markup: an emoji,
        "</help:123456789012345678> shows it",  # a command,
        "<t:1700000000:R> works for me",  # a time
        "same, it fails here too",  # sentence openers a name could start with
        "maybe, if the disk is full",
        "al: 42",  # too short to tell from a word
        "小：对",  # one character is too short even there
        "a中: x",  # two characters make a name only when both are of those scripts
        "大家，有人知道吗",  # "everyone,": an opener, as in English
        "ゆき、それは",  # the ideographic comma is not read: it also lists, in Japanese
        "12: the twelfth step",
        "",
    ],
)
def test_words_links_and_mention_markup_are_not_addresses(content: str):
    assert opening_of(content) is None


def test_a_written_name_matches_shortened_or_misspelled_but_not_another_name():
    assert names_match("fryguy", "fryguy")
    assert names_match("kristan", "kristanuk2")  # shortened
    assert not names_match("kristanuk2", "kristan")  # a word longer than the name is not it
    assert not names_match("sammy", "sam")
    assert names_match("loquitisofbord", "loquitusofborg")  # two typos in a long name
    assert names_match("sethq", "sethk")  # one in a shorter one
    assert not names_match("sexhq", "sethk")  # two are too many there
    assert not names_match("crimsun", "trimsun")  # the first letter must be right
    assert not names_match("bob", "rob")
    assert not names_match("nice", "nick")  # no typos in names under five letters
    assert not names_match("wait", "walt")
    assert not names_match("alice", "bob")
    assert names_match("小明", "小明同学")  # shortened, in a script where two characters name
    assert not names_match("小", "小明")


def clue(i: int, author: int, names: set[str], text: str, *, mentions=()) -> Clue:
    return Clue(
        id=i,
        at_ms=i * 60_000,
        author=author,
        mentions=frozenset(mentions),
        reference=None,
        words=words_of(text),
        question="?" in text,
        size=len(text.split()),
        opening=opening_of(text),
        author_keys=frozenset(names),
    )


def test_a_written_address_becomes_a_mention_of_the_one_person_it_names():
    candidates = [
        clue(4, 2, {"benny"}, "benji: no idea"),
        clue(3, 3, {"benji"}, "anyone?"),
        clue(2, 4, {"ben"}, "ben here"),
        clue(1, 5, {"fryguy"}, "fryguy here", mentions=[2]),
    ]
    trigger = clue(5, 1, {"asker"}, "fryguy: any reason you don't update?")
    addressed, resolved = with_written_addresses(trigger, candidates)
    assert addressed.mentions == {5}
    # "benji:" is benji's exact name, though "benny" and "ben" are near it.
    assert resolved[0].mentions == {3}
    assert resolved[1:] == candidates[1:]  # no address, or a real mention already

    loose = clue(6, 1, {"asker"}, "benn: and you?")  # Benny: "benn" is longer than "ben"
    assert with_written_addresses(loose, candidates)[0].mentions == {2}
    bennett = clue(0, 6, {"bennett"}, "hi all")
    ambiguous = with_written_addresses(loose, [*candidates, bennett])[0]
    assert ambiguous.mentions == frozenset()  # Benny or Bennett: nobody, then
    own = clue(7, 5, {"fryguy"}, "fryguy: talking to myself")
    assert with_written_addresses(own, candidates)[0].mentions == frozenset()
    xiaoming = clue(0, 7, {"小明"}, "重启了也不行")
    asked = clue(8, 1, {"asker"}, "小明：你试过安全模式吗")
    assert with_written_addresses(asked, [*candidates, xiaoming])[0].mentions == {7}


def test_each_word_of_a_name_of_several_words_is_a_key_of_its_own():
    """A Discord display name with a space ("John Smith") is written "john" or "smith"; a word
    that only says what a person is, or is too short to read as a name, is not one."""
    assert name_keys(["john_smith", "John Smith"]) == {"johnsmith", "john", "smith"}
    assert name_keys(["The Doctor", None]) == {"thedoctor", "doctor"}
    assert name_keys(["Dr Jo Grey"]) == {"drjogrey", "grey"}  # "jo" is too short alone
    assert name_keys(["Fryguy--", "Kristan_uk2"]) == {"fryguy", "kristanuk2"}  # one word each
    assert name_keys(["Maybe Later 42"]) == {"maybelater42", "later"}  # an opener, a number


def test_one_word_of_a_spaced_name_names_that_person_anywhere_in_the_trigger():
    john_smith = name_keys(["jsmith", "John Smith"])
    candidates = [
        clue(3, 2, john_smith, "the cache is stale"),
        clue(2, 3, name_keys(["Johnny"]), "try the terminal"),
        clue(1, 4, name_keys(["The Doctor"]), "restart it"),
    ]

    def named_by(text: str) -> frozenset[int]:
        return with_addresses(clue(9, 1, {"asker"}, text), candidates)[0].mentions

    # "john" is John Smith's exact key, so it names him alone though "johnny" starts with it;
    # "smith" was no start of "johnsmith" and named nobody.
    for text in (
        "what did john say about it?",
        "smith's fix works",
        "john: and you?",
        "smith: yes",
    ):
        assert named_by(text) == {2}
    assert named_by("the doctor said so") == {4}
    assert named_by("read the manual") == set()  # "the" is never the Doctor


def fryguy_channel(trigger_text: str, name: str = "Fryguy--") -> tuple[LogSource, int]:
    """A replayed busy channel whose last message, by someone else, says ``trigger_text``; one
    of the people in it is named ``name`` (the id returned)."""
    export = busy_channel(seed=7, messages=120, reply_rate=0.0, old_reply_rate=0.0)
    messages = export["messages"]
    fryguy = dict(messages[100]["author"], name="fryguy", nickname=name)
    for message in messages:
        if message["author"]["id"] == fryguy["id"]:
            message["author"] = dict(fryguy)
    assert messages[-1]["author"]["id"] != fryguy["id"]
    messages[-1]["content"] = trigger_text
    messages[-1]["mentions"] = []
    return LogSource(parse_export(export)), int(fryguy["id"])


class FryguyRead(NamedTuple):
    """What the score and the builder make of a trigger in ``fryguy_channel``."""

    addressed: set[int]  # the authors of the candidates the trigger reads as addressed
    fryguy: int
    latest: int  # Fryguy's latest message before the trigger
    score: float  # its score
    selection: ContextSelection


async def read_in_fryguy_channel(text: str, name: str = "Fryguy--") -> FryguyRead:
    model = load_model()
    source, fryguy = fryguy_channel(text, name)
    trigger = clue_of(source.messages[-1])
    history = [clue_of(m) for m in reversed(source.messages[:-1])][:99]
    rows = model.rows(trigger, history, set())
    addressed = {c.author for c, row in zip(history, rows, strict=True) if row[ADDRESSED]}
    latest = next(c for c in history if c.author == fryguy)
    score = model.score_threads(trigger, history, set())[history.index(latest)].score
    reader = ChannelReader(source, ChannelCache(source.channel_id))
    selection = await ContextBuilder(ContextSettings()).build(source.messages[-1], reader)
    return FryguyRead(addressed, fryguy, latest.id, score, selection)


async def test_the_builder_reads_a_written_address_in_a_replayed_channel():
    """Replayed nextcord messages: the trigger writes a shortened nick as an address, and the
    score reads it as it reads a mention of that person; the same words without the colon do
    not (a shortened name reads only as an address: the whole one counts anywhere)."""
    address = await read_in_fryguy_channel("fry: any reason you don't update")
    assert address.addressed == {address.fryguy}
    assert address.latest in address.selection.ids
    assert address.selection.reasons[address.latest][0].kind == "mention"  # as if it were one
    words = await read_in_fryguy_channel("fry any reason you don't update")
    assert words.addressed == set()
    assert address.score > words.score + 0.1


def test_a_whole_name_written_anywhere_in_the_trigger_names_that_person():
    candidates = [
        clue(4, 2, {"mireille"}, "kristanuk2 says the cache is stale"),
        clue(3, 3, {"kristanuk2"}, "try the terminal"),
        clue(2, 4, {"sam"}, "no idea"),
        clue(1, 5, {"will"}, "restart it"),
    ]
    talked_about = clue(5, 1, {"asker"}, "what about mireille's other idea? Kristan_uk2 said so")
    addressed, resolved = with_addresses(talked_about, candidates)
    assert addressed.mentions == {2, 3}
    # Only the trigger's names are read anywhere: the score reads whom the others address as
    # they write it (the same reading of every candidate measured no better on the folds).
    assert resolved == candidates
    # A name cut short is as often a word there ("kristan" for "kristanuk2" reads only as an
    # address); "same" is not Sam, and a stopword is never a name ("will").
    for text in ("ask kristan about it", "same here", "it will work", "mireilles"):
        assert with_addresses(clue(6, 1, {"asker"}, text), candidates)[0].mentions == set()
    # Nor the writer's own name, and a real mention stays beside the names.
    own = clue(7, 2, {"mireille"}, "mireille again: sam knows", mentions=[9])
    assert with_addresses(own, candidates)[0].mentions == {4, 9}
    assert named_people(["mireille", "sa", "hey"], candidates, writer=1) == {2}


async def test_the_builder_reads_a_whole_name_in_the_middle_of_a_replayed_trigger():
    """The trigger talks about Fryguy-- without addressing him: the score reads him as one the
    trigger addresses, and the builder takes his latest message; without his name, not."""
    named = await read_in_fryguy_channel("so what did fryguy's patch change?")
    assert named.addressed == {named.fryguy}
    assert named.latest in named.selection.ids
    unnamed = await read_in_fryguy_channel("so what did that patch change?")
    assert unnamed.addressed == set()
    assert unnamed.latest not in unnamed.selection.ids
    assert named.score > unnamed.score


async def test_the_builder_reads_one_word_of_a_spaced_display_name_in_a_replayed_trigger():
    """A member shown as "Matt Fryer" (a server nickname with a space, as Discord exports
    keep it) is named by "matt" in the middle of the trigger: the builder takes his latest
    message, as for a one-word nick."""
    named = await read_in_fryguy_channel("so what did matt's patch change?", "Matt Fryer")
    assert named.addressed == {named.fryguy}
    assert named.latest in named.selection.ids
    unnamed = await read_in_fryguy_channel("so what did that patch change?", "Matt Fryer")
    assert named.latest not in unnamed.selection.ids
