"""Splitting answers into Discord messages: fixed cases, then properties over generated text."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.demo.openai_server import long_answer_with_code
from bot.discord.chunking import (
    DISCORD_MESSAGE_LIMIT,
    STREAM_LOOKAHEAD,
    Chunk,
    StreamingSplitter,
    split_chunks,
    split_message,
)

# The fence rule of the module doc, written again independently of the implementation.
FENCE_LINE = re.compile(r"[ \t]{0,8}(`{3,10})([A-Za-z0-9_+.#-]{0,32})[ \t\r]*")
ADDED_PREFIX = re.compile(r"`{3,10}[A-Za-z0-9_+.#-]{0,32}\n")
ADDED_SUFFIX = re.compile(r"\n?`{3,10}")


def open_fence_at_end(text: str) -> str | None:
    """The fence left open at the end of ``text`` (None when every block is closed)."""
    opened: str | None = None
    for line in text.split("\n"):
        match = FENCE_LINE.fullmatch(line)
        if match is None:
            continue
        ticks, lang = match.groups()
        if opened is None:
            opened = ticks
        elif not lang and len(ticks) >= len(opened):
            opened = None
    return opened


def check_chunks(text: str, chunks: list[Chunk], limit: int) -> None:
    """Everything split_chunks promises (see bot/discord/chunking.py)."""
    position = 0
    for chunk in chunks:
        assert len(chunk.text) <= limit
        assert chunk.text == chunk.prefix + chunk.body + chunk.suffix
        assert chunk.body.strip(), "no blank messages"
        # Bodies are consecutive slices of the answer; only whitespace lies between them.
        assert chunk.start >= position
        assert text[chunk.start : chunk.end] == chunk.body
        gap = text[position : chunk.start]
        assert gap.strip() == ""
        if "\n" in gap:  # the indentation of the line a chunk starts on is kept
            assert chunk.start == position + gap.rfind("\n") + 1
        # Only fences are added, and each message leaves no code block open.
        assert chunk.prefix == "" or ADDED_PREFIX.fullmatch(chunk.prefix)
        assert chunk.suffix == "" or ADDED_SUFFIX.fullmatch(chunk.suffix)
        assert open_fence_at_end(chunk.text) is None, chunk.text
        position = chunk.end
    assert text[position:].strip() == ""
    assert bool(chunks) == bool(text.strip())


# -- fixed cases ------------------------------------------------------------------------------


def test_short_text_is_one_message() -> None:
    assert split_message("\n\nHello there!\n\n") == ["Hello there!"]


def test_blank_text_gives_no_message() -> None:
    assert split_message("") == []
    assert split_message(" \n\t\n ") == []


def test_limit_must_leave_room_for_fences() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_message("hello", limit=50)


def test_paragraphs_are_kept_whole() -> None:
    paragraphs = [f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 10 for i in range(20)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = split_message(text)
    assert len(chunks) > 1
    whole = {p.strip() for p in paragraphs}
    for chunk in chunks:
        assert all(piece in whole for piece in chunk.split("\n\n"))
        assert len(chunk) <= DISCORD_MESSAGE_LIMIT
    assert "\n\n".join(chunks) == text


def test_lines_then_sentences_then_words() -> None:
    lines = "\n".join(f"line {i} " + "x" * 50 for i in range(100))
    assert all(c.endswith("x" * 50) for c in split_message(lines))
    sentences = " ".join(f"Sentence number {i} is here." for i in range(200))
    assert all(c.endswith(".") for c in split_message(sentences))
    words = " ".join(f"w{i}" for i in range(1500))
    chunks = split_message(words)
    assert " ".join(chunks) == words  # every cut fell on a space
    assert all(len(c) >= DISCORD_MESSAGE_LIMIT // 2 for c in chunks[:-1])


def test_a_late_paragraph_break_beats_an_early_one() -> None:
    text = "Short intro.\n\n" + "word " * 390 + "end.\n\n" + "tail " * 100
    first = split_message(text)[0]
    assert first.endswith("end.")


def test_single_line_longer_than_the_limit_is_cut_hard() -> None:
    text = "a" * 4500
    chunks = split_chunks(text)
    assert [len(c.text) for c in chunks] == [2000, 2000, 500]
    check_chunks(text, chunks, DISCORD_MESSAGE_LIMIT)


def test_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"    value_{i} = compute({i})  # a line of code" for i in range(150))
    text = f"Here you go:\n\n```python\n{code}\n```\n\nThat is all."
    chunks = split_chunks(text)
    assert len(chunks) >= 3
    check_chunks(text, chunks, DISCORD_MESSAGE_LIMIT)
    assert chunks[0].text.startswith("Here you go:")
    for chunk in chunks[1:]:
        assert chunk.text.startswith("```python\n")
    for chunk in chunks[:-1]:
        assert chunk.text.endswith("\n```")
    # Indentation inside the code survives the cuts.
    assert chunks[1].body.startswith("    value_")


def test_code_block_that_fits_moves_whole_to_the_next_message() -> None:
    code = "\n".join(f"print({i})" for i in range(150))  # about 1.5k characters
    text = "Intro. " * 100 + "\n\n```py\n" + code + "\n```\nDone."
    chunks = split_message(text)
    assert len(chunks) == 2
    assert chunks[0].endswith("Intro.")
    assert chunks[1].startswith("```py\nprint(0)") and chunks[1].endswith("```\nDone.")


def test_long_answer_with_code_keeps_every_block_whole() -> None:
    text = long_answer_with_code(12_000)
    chunks = split_chunks(text)
    check_chunks(text, chunks, DISCORD_MESSAGE_LIMIT)
    assert all(c.prefix == "" and c.suffix == "" for c in chunks)


def test_unclosed_block_is_closed_at_the_end() -> None:
    text = "Look:\n```js\nconsole.log(1)"
    (chunk,) = split_chunks(text)
    assert chunk.text == "Look:\n```js\nconsole.log(1)\n```"


def test_longer_fences_are_reopened_with_as_many_backticks() -> None:
    inner = "\n".join(["```", "not a closer for four backticks", "```"] * 60)
    text = f"````markdown\n{inner}\n````"
    chunks = split_chunks(text)
    check_chunks(text, chunks, DISCORD_MESSAGE_LIMIT)
    assert all(c.text.startswith("````markdown\n") for c in chunks)
    assert all(c.text.endswith("````") for c in chunks)


def test_a_piece_of_a_line_never_becomes_a_fence() -> None:
    # Hard cuts in a long line full of backticks must not leave "```x" at a line start.
    text = ("x" * 150 + " ```py ") * 30
    chunks = split_chunks(text, limit=200)
    check_chunks(text, chunks, 200)


# -- properties -------------------------------------------------------------------------------

PIECES = [
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    " ",
    "  ",
    "\t",
    ". ",
    "! ",
    "? ",
    '." ',
    "```python\n",
    "```\n",
    "````\n",
    "  ```js\n",
    "```",
    "``",
    "`",
    "@everyone ",
    "👍🏽",
    "e\u0301",
    "- item\n",
    "    indented\n",
]
words = st.text(alphabet="abcdefghij.,!?`", min_size=1, max_size=12)
long_words = st.integers(min_value=50, max_value=700).map(lambda n: "y" * n)
piece_texts = st.lists(
    st.one_of(st.sampled_from(PIECES), words, long_words), min_size=40, max_size=300
).map("".join)
FENCES = ["```python", "```", "```", "````", "  ```js", "```c++", "````md", "```   "]
lines = st.one_of(
    st.sampled_from(FENCES),
    st.text(alphabet="abc xyz`.!\t", max_size=90),
    long_words,
    st.just(""),
)
line_texts = st.lists(lines, min_size=30, max_size=200).map("\n".join)
texts = st.one_of(piece_texts, line_texts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, limit=st.integers(min_value=200, max_value=700))
def test_split_properties(text: str, limit: int) -> None:
    check_chunks(text, split_chunks(text, limit), limit)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_split_properties_at_discord_limit(text: str) -> None:
    doubled = text * 4
    check_chunks(doubled, split_chunks(doubled), DISCORD_MESSAGE_LIMIT)


def feed(splitter: StreamingSplitter, text: str, cuts: list[int], limit: int) -> list[str]:
    """Stream ``text`` in pieces; check what the bot would see after each piece."""
    shown_final: tuple[str, ...] = ()
    for cut in [*sorted(cuts), len(text)]:
        view = splitter.update(text[:cut])
        assert view.final[: len(shown_final)] == shown_final, "final chunks never change"
        shown_final = view.final
        assert all(len(c) <= limit for c in view.final)
        assert len(view.tail) <= limit
        assert open_fence_at_end(view.tail) is None
    return splitter.finish(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=texts, limit=st.integers(min_value=200, max_value=700))
def test_streaming_properties(data: st.DataObject, text: str, limit: int) -> None:
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=30))
    splitter = StreamingSplitter(limit)
    messages = feed(splitter, text, cuts, limit)
    chunks = splitter.finish_chunks(text)
    assert [c.text for c in chunks] == messages
    check_chunks(text, chunks, limit)


plain_words = st.text(alphabet="abcdefghij.,!?", min_size=1, max_size=15)
plain_texts = st.lists(
    st.one_of(st.sampled_from([" ", "\n", "\n\n", ". ", "  "]), plain_words, long_words),
    min_size=40,
    max_size=300,
).map("".join)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=plain_texts, limit=st.integers(min_value=200, max_value=700))
def test_streaming_matches_the_one_shot_split(data: st.DataObject, text: str, limit: int) -> None:
    # Without code blocks (whose end may not have arrived) and without whitespace runs longer
    # than the lookahead, streaming decides every cut exactly as the one-shot split does.
    assume(all(len(run) < STREAM_LOOKAHEAD for run in re.findall(r"\s+", text)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=30))
    assert feed(StreamingSplitter(limit), text, cuts, limit) == split_message(text, limit)


def test_streaming_finalizes_full_chunks_early() -> None:
    text = " ".join(f"w{i}" for i in range(3000))
    splitter = StreamingSplitter()
    view = splitter.update(text[:2500])
    assert len(view.final) == 1 and len(view.final[0]) <= DISCORD_MESSAGE_LIMIT
    assert view.tail and text[:2500].rstrip().endswith(view.tail)
    assert splitter.finish(text) == split_message(text)


def test_streaming_tail_shows_open_code_closed() -> None:
    splitter = StreamingSplitter()
    view = splitter.update("Try this:\n```py\nprint('hi')")
    assert view.final == ()
    assert view.tail == "Try this:\n```py\nprint('hi')\n```"


def test_streaming_rejects_text_that_does_not_extend() -> None:
    splitter = StreamingSplitter()
    splitter.update("hello")
    with pytest.raises(ValueError, match="extend"):
        splitter.update("help")


def test_streaming_blank_start_shows_nothing() -> None:
    splitter = StreamingSplitter()
    assert splitter.update("\n\n").tail == ""
    assert splitter.update("\n\n  hi").tail == "  hi"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=texts)
def test_blocks_parsed_line_by_line_are_the_blocks_of_the_whole_text(
    data: st.DataObject, text: str
) -> None:
    # The streaming split reads each line once; what it knows must equal a parse from scratch.
    from bot.discord.chunking import _BlockParser, _parse_blocks

    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=20))
    parser = _BlockParser()
    for cut in [*sorted(cuts), len(text)]:
        known = parser.update(text[:cut], 0)
        seen = [*known.blocks, *([known.last] if known.last is not None else [])]
        assert seen == _parse_blocks(text[:cut])
