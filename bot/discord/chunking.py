"""Splitting a model answer into Discord messages (at most 2000 characters each).

Where to cut, best first: a paragraph break (or just before / after a code block), a line
break, the end of a sentence, a space; a word is only cut when a single "word" fills a whole
message. A piece is never shorter than half a message when a later cut of lower rank exists,
and a code block that fits in one message is moved whole to the next one rather than split.

Code blocks stay rendered as code: a chunk cut inside a fenced block gets the fence closed at
its end and reopened (same backticks, same language tag) at the start of the next chunk, and the
added fences count towards the limit. A block the answer never closes is closed at its end.

What is preserved, precisely: each :class:`Chunk` is ``prefix + body + suffix`` where ``prefix``
is empty or a reopening fence line and ``suffix`` empty or a closing fence; the bodies are
consecutive slices ``text[start:end]`` of the answer, and everything between them (and before the
first, after the last) is whitespace. So the answer minus some whitespace at the cut points is
exactly the concatenation of the bodies; indentation at the start of a line is always kept.

Fences, precisely (CommonMark-like, what language models write): a *fence line* is a whole
line of up to 8 spaces/tabs, 3 to 10 backticks, an optional language tag of ``[A-Za-z0-9_+.#-]``
(at most 32 characters) and nothing else but trailing blanks. Outside a block, a fence line opens
one; inside, a fence line without a tag and with at least as many backticks closes it; any other
line is content.

:class:`StreamingSplitter` does the same on text that is still growing, so the bot can edit the
message being written and start the next one as soon as a chunk is full.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

from bot.discord.limits import DISCORD_MESSAGE_LIMIT

MIN_LIMIT = 200
"""Smallest limit accepted: room for the widest fences plus real content."""

STREAM_LOOKAHEAD = 100
"""Characters a streaming chunk waits for beyond its window before it is final (> fence line)."""

_FENCE_BODY = r"[ \t]{0,8}(`{3,10})([A-Za-z0-9_+.#-]{0,32})[ \t\r]*"
_FENCE = re.compile(rf"^{_FENCE_BODY}$", re.MULTILINE)
_FENCE_LINE = re.compile(_FENCE_BODY)
_FENCE_LINE_AT = re.compile(rf"{_FENCE_BODY}(?=\n|\Z)")  # a fence line from here to its end
_BLANK_TO_EOL = re.compile(r"[^\S\n]*(?:\n|\Z)")  # nothing visible from here to the line end
_FENCE_MAX = 8 + 10 + 32  # longest fence line without its trailing blanks
_WHITESPACE = re.compile(r"\s+")
_VISIBLE = re.compile(r"\S")
_SENTENCE_END = frozenset(".!?…")
_CLOSERS = frozenset("\"')]*_”’»")
_GLUE = frozenset("\u200d\ufe0f\ufe0e")

# Ranks of cut points, best first.
_PARAGRAPH, _LINE, _SENTENCE, _WORD = range(4)
_MIN_FILL = 0.5


@dataclass(frozen=True, slots=True)
class Chunk:
    """One Discord message: ``text[start:end]`` of the answer plus the fences added around it."""

    start: int
    end: int
    prefix: str
    body: str
    suffix: str

    @property
    def text(self) -> str:
        return f"{self.prefix}{self.body}{self.suffix}"


@dataclass(frozen=True, slots=True)
class _Block:
    open_start: int  # start of the opening fence line
    open_end: int  # end of its backticks + tag (trailing blanks are not part of it)
    close_start: int | None  # start of the closing fence line; None: not closed (yet)
    close_end: int | None  # end of its backticks
    ticks: str
    lang: str


def _parse_blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    opened: re.Match[str] | None = None
    for match in _FENCE.finditer(text):
        ticks, lang = match.group(1), match.group(2)
        if opened is None:
            opened = match
        elif not lang and len(ticks) >= len(opened.group(1)):
            blocks.append(
                _Block(
                    opened.start(),
                    opened.end(2),
                    match.start(),
                    match.end(1),
                    opened.group(1),
                    opened.group(2),
                )
            )
            opened = None
    if opened is not None:
        blocks.append(
            _Block(opened.start(), opened.end(2), None, None, opened.group(1), opened.group(2))
        )
    return blocks


_OUT, _IN, _BAD = "out", "in", "bad"


class _Blocks:
    """The code blocks of a text: a list in order, plus at most one block after them.

    The one-shot split has every block in ``blocks``. The streaming split keeps the blocks
    whose end has arrived in a list it only appends to (shared, never copied) and gives the one
    still open, or the one the unfinished last line would open or close, as ``last``.
    """

    __slots__ = ("blocks", "last", "lo", "starts")

    def __init__(
        self, blocks: list[_Block], starts: list[int], last: _Block | None, lo: int = 0
    ) -> None:
        self.blocks = blocks
        self.starts = starts
        self.last = last
        self.lo = lo  # no question is about a position at or before ``starts[lo - 1]``

    @classmethod
    def of(cls, text: str) -> _Blocks:
        blocks = _parse_blocks(text)
        return cls(blocks, [b.open_start for b in blocks], None)

    def before(self, position: int) -> _Block | None:
        """The last block opening before ``position``."""
        if self.last is not None and self.last.open_start < position:
            return self.last
        index = bisect.bisect_left(self.starts, position, self.lo) - 1
        return self.blocks[index] if index >= 0 else None


class _Splitter:
    """Cut decisions over one version of the text.

    Every question it answers looks at most a message's length around the cut it is about, so
    deciding a cut costs the same however long the text already is (what lets the streaming
    split do a constant amount of work per delta).
    """

    def __init__(
        self,
        text: str,
        limit: int,
        *,
        blocks: _Blocks | None = None,
        content_end: int | None = None,
    ) -> None:
        if limit < MIN_LIMIT:
            raise ValueError(f"limit must be at least {MIN_LIMIT}, got {limit}")
        self.text = text
        self.limit = limit
        self._blocks = blocks if blocks is not None else _Blocks.of(text)
        self.content_end = content_end if content_end is not None else len(text.rstrip())

    # -- fence state -------------------------------------------------------------------------

    def _block_before(self, position: int) -> _Block | None:
        return self._blocks.before(position)

    def state(self, position: int) -> tuple[str, _Block | None]:
        """Fence state of a cut at ``position`` (text before it in one chunk, after in the next)."""
        block = self._block_before(position)
        if block is None:
            return _OUT, None
        if position < block.open_end:
            return _BAD, block  # inside the opening fence line
        if block.close_start is None or position <= block.close_start:
            return _IN, block
        assert block.close_end is not None
        if position < block.close_end:
            return _BAD, block  # inside the closing fence line
        return _OUT, None

    def prefix(self, start: int) -> str:
        state, block = self.state(start)
        if state == _IN and block is not None and start >= block.open_end:
            return f"{block.ticks}{block.lang}\n"
        return ""

    def suffix(self, end: int) -> str:
        state, block = self.state(end)
        if state == _IN and block is not None:
            return block.ticks if self.text[end - 1] == "\n" else f"\n{block.ticks}"
        return ""

    def render(self, start: int, end: int) -> Chunk:
        return Chunk(start, end, self.prefix(start), self.text[start:end], self.suffix(end))

    def size(self, start: int, end: int) -> int:
        return len(self.prefix(start)) + (end - start) + len(self.suffix(end))

    # -- validity of a cut -------------------------------------------------------------------

    def _at_line_start(self, position: int) -> bool:
        return position == 0 or self.text[position - 1] == "\n"

    def _visible(self, start: int, end: int) -> bool:
        return _VISIBLE.search(self.text, start, end) is not None

    def _looks_like_fence(self, start: int, end: int) -> bool:
        """Would ``text[start:end]`` become a fence line once it stands on a line of its own?"""
        text = self.text
        while end > start and text[end - 1] in " \t\r":
            end -= 1
        if end - start > _FENCE_MAX or end - start < 3:
            return False
        return _FENCE_LINE.fullmatch(text[start:end]) is not None

    def valid(self, start: int, end: int, resume: int, *, strict: bool) -> bool:
        """May the chunk starting at ``start`` end at ``end``, the next one starting at ``resume``?

        ``strict`` also refuses cuts that leave an empty code block on either side.
        """
        text = self.text
        if end <= start or not self._visible(start, end):
            return False
        state, block = self.state(end)
        if state == _BAD:
            return False
        if self.size(start, end) > self.limit:
            return False
        # A piece of a line must not turn into a fence line when it stands alone. Where the
        # line starts matters only within the chunk: a line that began before it is a piece.
        newline = text.rfind("\n", start, end)
        if newline >= 0:
            head_start, whole_head = newline + 1, True
        else:
            head_start, whole_head = start, self._at_line_start(start)
        whole_line = whole_head and _BLANK_TO_EOL.match(text, end) is not None
        if not whole_line and self._looks_like_fence(head_start, end):
            return False
        if not self._at_line_start(resume) and _FENCE_LINE_AT.match(text, resume):
            return False
        if end < len(text) and (text[end] in _GLUE or unicodedata.combining(text[end])):
            return False
        if strict and state == _IN and block is not None:
            if not self._visible(block.open_end, end):
                return False  # would end with an opening fence and nothing in it
            if block.close_start is not None and not self._visible(resume, block.close_start):
                return False  # the next chunk would open a block only to close it
        return True

    # -- choosing a cut ----------------------------------------------------------------------

    def window(self, start: int) -> int:
        """Largest body length a chunk starting at ``start`` could have."""
        return self.limit - len(self.prefix(start))

    def best_cut(self, start: int) -> tuple[int, int]:
        """Where the chunk starting at ``start`` ends, and where the next one starts."""
        text = self.text
        window = self.window(start)
        best: list[tuple[int, int] | None] = [None, None, None, None]
        before_block: dict[int, tuple[int, int]] = {}  # block start -> cut just before it
        for match in _WHITESPACE.finditer(text, start):
            end, run_end = match.start(), match.end()
            if end > start + window:
                break
            if end == start:
                continue
            run = match.group()
            newline = run.rfind("\n")
            resume = end + newline + 1 if newline >= 0 else run_end
            if not self.valid(start, end, resume, strict=True):
                continue
            state, _ = self.state(end)
            next_block = self._block_before(resume + 1)
            opens_block = next_block is not None and next_block.open_start == resume
            if newline >= 0:
                closes_block = (b := self._block_before(end)) is not None and b.close_end == end
                paragraph = state == _OUT and (run.count("\n") >= 2 or opens_block or closes_block)
                rank = _PARAGRAPH if paragraph else _LINE
                if opens_block:
                    before_block[resume] = (end, resume)
            elif state == _OUT and (
                text[end - 1] in _SENTENCE_END
                or (
                    text[end - 1] in _CLOSERS
                    and end - 2 >= start
                    and text[end - 2] in _SENTENCE_END
                )
            ):
                rank = _SENTENCE
            else:
                rank = _WORD
            best[rank] = (end, resume)
        chosen = self._choose(start, window, best)
        if chosen is None:
            return self._hard_cut(start, window)
        # Move a whole code block to the next message rather than split it, if it fits there.
        state, block = self.state(chosen[0])
        if (
            state == _IN
            and block is not None
            and block.open_start in before_block
            and block.close_end is not None
            and block.close_end - block.open_start <= self.limit
        ):
            return before_block[block.open_start]
        return chosen

    @staticmethod
    def _choose(
        start: int, window: int, best: list[tuple[int, int] | None]
    ) -> tuple[int, int] | None:
        for cut in best:
            if cut is not None and cut[0] - start >= _MIN_FILL * window:
                return cut
        found = [cut for cut in best if cut is not None]
        return max(found) if found else None

    def _hard_cut(self, start: int, window: int) -> tuple[int, int]:
        """No usable space in the window: cut inside a word, as late as allowed."""
        for strict in (True, False):
            end = min(start + window, len(self.text))
            while end > start:
                if self.valid(start, end, end, strict=strict):
                    return end, end
                end -= 1
        # Unreachable for limit >= MIN_LIMIT (fence lines are short); keep the size promise.
        end = start + max(1, window - 12)
        return end, end

    def rest_fits(self, start: int) -> bool:
        end = self.content_end
        return end > start and self.state(end)[0] != _BAD and self.size(start, end) <= self.limit


def _first_start(text: str) -> int | None:
    """Where the first body starts: the line of the first visible character (indent kept)."""
    match = re.search(r"\S", text)
    if match is None:
        return None
    return text.rfind("\n", 0, match.start()) + 1


def split_chunks(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``limit`` characters (see the module doc).

    Returns an empty list when ``text`` is empty or only whitespace (nothing to send).
    """
    splitter = _Splitter(text, limit)
    start = _first_start(text)
    chunks: list[Chunk] = []
    if start is not None:
        _split_rest(splitter, start, chunks)
    return chunks


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """The messages to send for ``text``, in order (empty list for a blank answer)."""
    return [chunk.text for chunk in split_chunks(text, limit)]


def _split_rest(splitter: _Splitter, start: int, chunks: list[Chunk]) -> None:
    while start < splitter.content_end:
        if splitter.rest_fits(start):
            chunks.append(splitter.render(start, splitter.content_end))
            return
        end, resume = splitter.best_cut(start)
        chunks.append(splitter.render(start, end))
        start = resume


@dataclass(frozen=True, slots=True)
class StreamView:
    """What to show while an answer streams in.

    ``final`` holds every chunk that will not change any more (its message can be sent or edited
    for the last time); ``tail`` is the chunk being written, rendered with its code fence closed
    (empty when there is nothing visible yet). Each is at most ``limit`` characters.
    """

    final: tuple[str, ...]
    tail: str


class _BlockParser:
    """Code blocks of a growing text, parsed once per line: each update reads only new lines.

    Lines that ended (a newline arrived) are final and parsed for good; the unfinished last line
    is parsed again on each update, since what it is (a fence or not) may still change. The
    result is the same as :func:`_parse_blocks` on the whole text.
    """

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.starts: list[int] = []
        self._open: tuple[int, int, str, str] | None = None  # start, end of tag, ticks, lang
        self._parsed = 0  # start of the first line not parsed for good
        self._lo = 0  # blocks before this index open before every position still asked about

    def update(self, text: str, floor: int) -> _Blocks:
        """The blocks of ``text``, for questions about positions after ``floor`` only."""
        last_newline = text.rfind("\n", self._parsed)
        if last_newline >= 0:
            for match in _FENCE.finditer(text, self._parsed, last_newline):
                self._take(match)
            self._parsed = last_newline + 1
        tail = _FENCE.match(text, self._parsed) if self._parsed < len(text) else None
        opened = self._open
        last: _Block | None = None
        if tail is not None:
            ticks, lang = tail.group(1), tail.group(2)
            if opened is None:
                last = _Block(tail.start(), tail.end(2), None, None, ticks, lang)
            elif not lang and len(ticks) >= len(opened[2]):
                last = _Block(opened[0], opened[1], tail.start(), tail.end(1), *opened[2:])
        if last is None and opened is not None:
            last = _Block(opened[0], opened[1], None, None, *opened[2:])
        starts = self.starts
        while self._lo < len(starts) and starts[self._lo] < floor:  # floor only grows
            self._lo += 1
        return _Blocks(self.blocks, starts, last, self._lo)

    def _take(self, match: re.Match[str]) -> None:
        ticks, lang = match.group(1), match.group(2)
        opened = self._open
        if opened is None:
            self._open = (match.start(), match.end(2), ticks, lang)
        elif not lang and len(ticks) >= len(opened[2]):
            self.blocks.append(
                _Block(opened[0], opened[1], match.start(), match.end(1), *opened[2:])
            )
            self.starts.append(opened[0])
            self._open = None


class StreamingSplitter:
    """Splits an answer while it grows; the chunks it makes final never change afterwards.

    Call :meth:`update` with the whole text so far (each call extending the previous text) and
    :meth:`finish` with the complete answer. A chunk becomes final once the text extends
    ``STREAM_LOOKAHEAD`` characters past the longest it could be, so its cut point is decided
    exactly as :func:`split_chunks` would decide it, except that a code block whose end has not
    arrived yet cannot be moved whole to the next message.

    The work per update depends on the size of the delta and of a message, not on the length of
    the text so far: code blocks are parsed line by line as they arrive, the end of the visible
    text is tracked from the deltas, and cuts only look around the message being written.
    """

    def __init__(self, limit: int = DISCORD_MESSAGE_LIMIT, lookahead: int = STREAM_LOOKAHEAD):
        if limit < MIN_LIMIT:
            raise ValueError(f"limit must be at least {MIN_LIMIT}, got {limit}")
        self.limit = limit
        self.lookahead = max(lookahead, 64)
        self._text = ""
        self._start: int | None = None
        self._final: list[Chunk] = []
        self._final_texts: tuple[str, ...] = ()
        self._blocks = _BlockParser()
        self._content_end = 0  # end of the last visible character

    @property
    def final_chunks(self) -> tuple[Chunk, ...]:
        return tuple(self._final)

    def _advance(self, text: str) -> _Splitter:
        old = self._text
        # Checking the last characters given before is enough to catch a caller that restarted
        # or rewrote the text, without reading the whole of it on every delta.
        check = max(len(old) - 64, 0)
        if len(text) < len(old) or not text.startswith(old[check:], check):
            raise ValueError("streamed text must extend the text given before")
        if len(text) > len(old):
            visible = _last_visible(text, len(old))
            if visible is not None:
                self._content_end = visible + 1
                if self._start is None:
                    self._start = _first_start(text)  # nothing before ``old`` was visible
        self._text = text
        return _Splitter(
            text,
            self.limit,
            blocks=self._blocks.update(text, self._start or 0),
            content_end=self._content_end,
        )

    def update(self, text: str) -> StreamView:
        """Take the text so far; return the final chunks and the chunk in progress."""
        splitter = self._advance(text)
        start = self._start
        if start is None:
            return StreamView(final=(), tail="")
        finalized = len(self._final)
        while len(text) - start > splitter.window(start) + self.lookahead:
            end, resume = splitter.best_cut(start)
            self._final.append(splitter.render(start, end))
            start = resume
        self._start = start
        if len(self._final) != finalized:
            self._final_texts = self._final_texts + tuple(
                chunk.text for chunk in self._final[finalized:]
            )
        if start >= splitter.content_end:
            tail = ""
        elif splitter.rest_fits(start):
            tail = splitter.render(start, splitter.content_end).text
        else:
            tail = splitter.render(start, splitter.best_cut(start)[0]).text
        return StreamView(final=self._final_texts, tail=tail)

    def finish(self, text: str) -> list[str]:
        """All messages of the complete answer: the final ones so far, then the rest."""
        return [chunk.text for chunk in self.finish_chunks(text)]

    def finish_chunks(self, text: str) -> list[Chunk]:
        splitter = self._advance(text)
        chunks = list(self._final)
        if self._start is not None:
            _split_rest(splitter, self._start, chunks)
        return chunks


def _last_visible(text: str, since: int) -> int | None:
    """Index of the last non-whitespace character at or after ``since``, if any."""
    for index in range(len(text) - 1, since - 1, -1):
        if not text[index].isspace():
            return index
    return None
