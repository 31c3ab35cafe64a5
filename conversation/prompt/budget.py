"""Fitting a materialized context into the model's window, cutting what matters least first.

The window is shared by the prompt and the answer, so the prompt gets ``window - reserve``
tokens. When the context is larger, it is cut in this order, each step only as far as needed:

1. linked articles are shortened, fairly (the longest lose most; each keeps a useful floor),
   and marked as cut in their XML;
2. inlined text attachments are shortened the same way;
3. whole messages are dropped, lowest priority first: plain recent history and temporal
   neighbours far in time before replies, mentions and the trigger's reply chain (deepest
   first);
4. still too big (the protected messages alone overflow): articles and attachments go below
   their floor, down to nothing, and at last the protected messages' own text is clipped.

Never dropped: the system prompt, the trigger, and the message the trigger replies to. Every
cut is returned as a :class:`Cut` for the work log, and each kept message carries its token
count (``metadata["tokens"]``) and whether it was shortened (``metadata["budget"]``).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from conversation.articles.models import ArticleResult
from conversation.articles.render import ARTICLE_REF_TAG, clip_text, render_embedding, xml_attr
from conversation.articles.urls import url_key
from conversation.graph.node import FrozenMap, MessageNode
from conversation.prompt.continuation import indent_continuations, without_indent
from conversation.prompt.tokens import REPLY_PRIMING, TokenCounter, node_tokens, text_tokens

ARTICLE_FLOOR_TOKENS = 150  # below this an article stops being worth reading
ATTACHMENT_FLOOR_TOKENS = 100
CLIP_NOTE_TOKENS = 20  # "[... cut for the token budget: N of M characters]"
ATTACHMENT_HEADER = "[text attachment: "
ARTICLE_TAG = '<embedding type="article" url="'
ARTICLE_END = "</embedding>"
SHORTENED = "shortened: budget"
DROPPED = "dropped: budget"

# "reference via 123", optionally followed by the learned score: " (score 0.83: ...)".
_VIA = re.compile(r"(\w+) via (\d+)(?: \(score .*\))?")


class Budget(BaseModel):
    """The model's window and the part of it kept for the answer."""

    model_config = ConfigDict(frozen=True)

    window: int = Field(gt=0)
    reserve: int = Field(ge=0)

    @model_validator(mode="after")
    def _room_left(self) -> Budget:
        if self.reserve >= self.window:
            raise ValueError(
                f"the answer's reserve ({self.reserve}) leaves no room in a {self.window}-token "
                "window"
            )
        return self

    @property
    def limit(self) -> int:
        """Tokens the prompt may use."""
        return self.window - self.reserve

    def describe(self) -> str:
        return f"{self.limit} tokens (window {self.window} - answer reserve {self.reserve})"


@dataclass(frozen=True)
class Cut:
    """One thing taken out or shortened to fit, for the work log and the explanations."""

    action: Literal["shortened", "dropped"]
    what: str  # "article <url>", "text attachment <file>", "message", "message text"
    message_id: str | None
    tokens_before: int
    tokens_after: int

    def describe(self) -> str:
        where = f" of message {self.message_id}" if self.message_id else ""
        if self.what == "message":
            return f"{self.action}: budget, message {self.message_id} ({self.tokens_before} tokens)"
        return (
            f"{self.action}: budget, {self.what}{where} "
            f"({self.tokens_before} -> {self.tokens_after} tokens)"
        )


@dataclass
class FittedPrompt:
    """The prompt as it will be sent (system first, trigger last) and how it was made to fit."""

    nodes: list[MessageNode]
    tokens: list[int]  # per node, in the model's (calibrated) tokens
    total: int
    budget: Budget
    cuts: list[Cut] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.total <= self.budget.limit

    def summary(self) -> str:
        dropped = sum(1 for c in self.cuts if c.what == "message")
        shortened = sum(1 for c in self.cuts if c.action == "shortened")
        left_out = len(self.cuts) - dropped - shortened
        parts = [f"prompt ~{self.total} of {self.budget.describe()}"]
        if shortened:
            parts.append(f"{shortened} shortened")
        if left_out:
            parts.append(f"{left_out} left out")
        if dropped:
            parts.append(f"{dropped} message{'s' if dropped != 1 else ''} dropped")
        if not self.fits:
            parts.append("still over: the protected messages alone exceed it")
        return ", ".join(parts)


# ---------------------------------------------------------------------------- the fitting


def fit_prompt(
    system: MessageNode,
    nodes: Sequence[MessageNode],
    budget: Budget,
    counter: TokenCounter,
    *,
    articles: Sequence[ArticleResult] = (),
    attachments: dict[str, Sequence[str]] | None = None,
) -> FittedPrompt:
    """``system`` plus ``nodes`` (chronological, trigger last), cut to ``budget``.

    ``articles`` are the context's article results (their rendered XML is found in the nodes'
    text) and ``attachments`` the inlined text-attachment blocks per message id, as they appear
    in the nodes' text; without them only whole messages (and at last text) can be cut.
    """
    work = _Work(system, list(nodes), counter, budget)
    if work.over() > 0:
        pieces = work.find_articles(articles)
        blocks = work.find_attachments(attachments or {})
        work.water_fill(pieces, ARTICLE_FLOOR_TOKENS)
        work.water_fill(blocks, ATTACHMENT_FLOOR_TOKENS)
        work.drop_messages()
        work.carry_articles(pieces)
        work.water_fill(pieces, 0)
        work.water_fill(blocks, 0)
        work.clip_protected()
        work.record_pieces([*pieces, *blocks])
    return work.result()


@dataclass
class _Piece:
    """An article element or an attachment block inside one node's text."""

    node: int
    label: str
    current: str
    full_chars: int
    render: Callable[[int], str]  # characters to keep -> the new text (0: the stub)
    tokens: int = 0
    body_tokens: int = 0  # of the full text, for proportional cuts
    before: int = 0
    kept: int = -1  # characters of the text still in (-1: all of them)
    key: str | None = None  # an article's identity (``url_key``), which references name


class _Work:
    """One fitting under way: the nodes' current texts and token counts (uncalibrated, so
    every step compares with the budget divided by the calibration factor), what is still in."""

    def __init__(
        self, system: MessageNode, nodes: list[MessageNode], counter: TokenCounter, budget: Budget
    ) -> None:
        self.system = system
        self.nodes = nodes
        self.contents = [node.content for node in nodes]
        self.raw = [node_tokens(node) for node in nodes]
        self.system_raw = node_tokens(system)
        self.counter = counter
        self.budget = budget
        self.factor = counter.calibration.factor
        self.alive = [True] * len(nodes)
        self.changed: set[int] = set()
        self.cuts: list[Cut] = []
        self.total_raw = REPLY_PRIMING + self.system_raw + sum(self.raw)
        self.protected = _protected(nodes)

    # -- accounting ------------------------------------------------------------------------

    def over(self) -> int:
        """Raw tokens to remove before the prompt fits (<= 0: it fits)."""
        return self.total_raw - math.floor(self.budget.limit / self.factor)

    def scaled(self, raw: int) -> int:
        return self.counter.scale(raw)

    def set_content(self, index: int, content: str) -> None:
        self.contents[index] = content
        node = self.nodes[index]
        new = node_tokens(node.model_copy(update={"content": content}))
        self.total_raw += new - self.raw[index]
        self.raw[index] = new
        self.changed.add(index)

    # -- finding what can be shortened -----------------------------------------------------

    def find_articles(self, articles: Sequence[ArticleResult]) -> list[_Piece]:
        """Each article element in the nodes' text, found by its URL attribute (members cannot
        write embedding tags, the materializer neutralises them, so every one is real)."""
        pieces: list[_Piece] = []
        by_tag = {f'{ARTICLE_TAG}{xml_attr(a.url)}"': a for a in articles if a.ok}
        if not by_tag:
            return pieces
        for index, content in enumerate(self.contents):
            start = content.find(ARTICLE_TAG)
            while start >= 0:
                end = content.find(ARTICLE_END, start)
                if end < 0:
                    break
                end += len(ARTICLE_END)
                tag_end = content.find('"', start + len(ARTICLE_TAG))
                article = by_tag.get(content[start : tag_end + 1])
                if article is not None:
                    element = content[start:end]
                    pieces.append(
                        _Piece(
                            node=index,
                            label=f"article {article.url}",
                            current=element,
                            full_chars=len(article.text),
                            render=_article_renderer(article),
                            tokens=text_tokens(element),
                            body_tokens=max(text_tokens(article.text), 1),
                            key=url_key(article.url),
                        )
                    )
                start = content.find(ARTICLE_TAG, end)
        return pieces

    def find_attachments(self, attachments: dict[str, Sequence[str]]) -> list[_Piece]:
        pieces: list[_Piece] = []
        for index, node in enumerate(self.nodes):
            for block in attachments.get(node.message_id or "", ()):
                head, _, body = block.partition("\n")
                if not body or not head.startswith(ATTACHMENT_HEADER) or block not in node.content:
                    continue
                filename = head[len(ATTACHMENT_HEADER) : -1]
                # A member's lines are indented (see ``continuation``), the bot's own are not.
                indented = node.role == "user"
                text = without_indent(body) if indented else body
                pieces.append(
                    _Piece(
                        node=index,
                        label=f"text attachment {filename}",
                        current=block,
                        full_chars=len(text),
                        render=_attachment_renderer(filename, text, indented=indented),
                        tokens=text_tokens(block),
                        body_tokens=max(text_tokens(text), 1),
                    )
                )
        return pieces

    # -- cutting ---------------------------------------------------------------------------

    def water_fill(self, pieces: list[_Piece], floor: int) -> None:
        """Shorten ``pieces`` to one common token cap (not below ``floor``) so the prompt fits:
        the longest lose the most, short ones are left whole."""
        live = [p for p in pieces if self.alive[p.node] and p.tokens > floor]
        for _ in range(6):  # the proportional guess is close; another pass mops up
            excess = self.over()
            if excess <= 0 or not live:
                return
            cap = _water_level([p.tokens for p in live], excess, floor)
            for piece in live:
                if piece.tokens <= cap:
                    continue
                per_char = piece.body_tokens / max(piece.full_chars, 1)
                kept = piece.full_chars if piece.kept < 0 else piece.kept
                framing = piece.tokens - kept * per_char  # tags, title, the "cut" note
                chars = 0 if cap <= 0 else max(int((cap - framing) / per_char) - 1, 1)
                new = piece.render(min(chars, kept))
                if text_tokens(new) >= piece.tokens:  # the "cut" note outweighs a tiny cut
                    chars, new = 0, piece.render(0)
                    if text_tokens(new) >= piece.tokens:
                        continue
                piece.kept = min(chars, kept)
                self.replace(piece, new)
            live = [p for p in live if p.tokens > floor]

    def replace(self, piece: _Piece, new: str) -> None:
        if not piece.before:
            piece.before = piece.tokens
        content = self.contents[piece.node]
        content = content.replace(piece.current, new, 1)
        if not new:
            content = content.replace("<embeddings></embeddings>", "").rstrip()
        piece.current = new
        piece.tokens = text_tokens(new)
        self.set_content(piece.node, content)

    def drop_messages(self) -> None:
        for index in _drop_order(self.nodes, self.protected):
            if self.over() <= 0:
                return
            self.alive[index] = False
            self.total_raw -= self.raw[index]
            self.cuts.append(
                Cut(
                    "dropped",
                    "message",
                    self.nodes[index].message_id,
                    self.scaled(self.raw[index]),
                    0,
                )
            )

    def carry_articles(self, pieces: list[_Piece]) -> None:
        """An article is embedded once, at its first mention; later mentions only refer to it.
        When the message holding it was dropped, it moves to the first later message still in
        that refers to it, so no reference is left pointing at nothing."""
        for piece in pieces:
            if piece.key is None or not piece.current or self.alive[piece.node]:
                continue
            for index in range(piece.node + 1, len(self.nodes)):
                if not self.alive[index]:
                    continue
                reference = _reference_to(self.contents[index], piece.key)
                if reference is not None:
                    piece.node = index
                    self.set_content(index, self.contents[index].replace(reference, piece.current))
                    break

    def clip_protected(self) -> None:
        """Last resort: the trigger and its reply target are kept, but their text is clipped,
        the longest first (the system prompt is the operator's and stays whole)."""
        order = sorted(self.protected, key=lambda i: -self.raw[i])
        for index in order:
            if self.over() <= 0:
                return
            # Articles go with the clipped text: half an XML element would be worse than none.
            text = self.contents[index].split("<embeddings>", 1)[0].rstrip()
            per_char = max(text_tokens(text), 1) / max(len(text), 1)
            before = self.raw[index]
            for _ in range(4):
                excess = self.over()
                if excess <= 0:
                    break
                current = text_tokens(self.contents[index])
                room = current - excess - CLIP_NOTE_TOKENS - 1
                chars = 0 if room <= 0 else min(int(room / per_char), len(text))
                note = f"\n[... cut for the token budget: {chars} of {len(text)} characters]"
                candidate = clip_text(text, chars) + note
                if text_tokens(candidate) >= current:
                    break  # too short to gain anything by cutting
                self.set_content(index, candidate)
            if self.raw[index] >= before:
                continue
            self.cuts.append(
                Cut(
                    "shortened",
                    "message text",
                    self.nodes[index].message_id,
                    self.scaled(before),
                    self.scaled(self.raw[index]),
                )
            )

    def record_pieces(self, pieces: Sequence[_Piece]) -> None:
        """Shortened pieces of messages still in the prompt become cuts, listed before the
        dropped messages (the order they were made in)."""
        shortened = [
            Cut(
                "shortened" if piece.current else "dropped",
                piece.label,
                self.nodes[piece.node].message_id,
                self.scaled(piece.before),
                self.scaled(piece.tokens),
            )
            for piece in pieces
            if piece.before and self.alive[piece.node]
        ]
        self.cuts[:0] = shortened

    # -- the result ------------------------------------------------------------------------

    def result(self) -> FittedPrompt:
        piece_cuts = self.cuts
        nodes = [self.system]
        tokens = [self.scaled(self.system_raw)]
        for index, node in enumerate(self.nodes):
            if not self.alive[index]:
                continue
            metadata = {**node.metadata, "tokens": self.scaled(self.raw[index])}
            if index in self.changed:
                metadata["budget"] = "shortened"
            update: dict[str, object] = {"metadata": FrozenMap(metadata)}
            if index in self.changed:
                update["content"] = self.contents[index]
            nodes.append(node.model_copy(update=update))
            tokens.append(metadata["tokens"])
        return FittedPrompt(
            nodes=nodes,
            tokens=tokens,
            total=self.scaled(self.total_raw),
            budget=self.budget,
            cuts=piece_cuts,
        )


# ---------------------------------------------------------------------------- renderers


def _article_renderer(article: ArticleResult) -> Callable[[int], str]:
    original = max(article.original_chars, len(article.text))

    def render(chars: int) -> str:
        if chars <= 0:
            return ""
        shorter = article.model_copy(
            update={
                "text": clip_text(article.text, chars),
                "truncated": True,
                "original_chars": original,
            }
        )
        return render_embedding(shorter)

    return render


def _attachment_renderer(filename: str, body: str, *, indented: bool) -> Callable[[int], str]:
    """The block shortened to ``chars`` of ``body``; in a member's message its lines indented
    again like the rest (the cut note too: it belongs to the attachment, not to the bot)."""

    def render(chars: int) -> str:
        if chars <= 0:
            return f"{ATTACHMENT_HEADER}{filename}, left out for the token budget]"
        block = (
            f"{ATTACHMENT_HEADER}{filename}]\n{clip_text(body, chars)}\n"
            f"[... cut for the token budget: {chars} of {len(body)} characters shown]"
        )
        return indent_continuations(block) if indented else block

    return render


def _water_level(sizes: list[int], excess: int, floor: int) -> int:
    """The cap ``c >= floor`` with ``sum(max(s - c, 0)) >= excess``, as high as possible."""
    ordered = sorted(sizes, reverse=True)
    removed = 0
    for count, size in enumerate(ordered, start=1):
        following = ordered[count] if count < len(ordered) else floor
        following = max(following, floor)
        step = (size - following) * count
        if removed + step >= excess:
            return max(size - math.ceil((excess - removed) / count), floor)
        removed += step
    return floor


# ---------------------------------------------------------------------------- priorities


def _reasons(node: MessageNode) -> list[tuple[str, int | None]]:
    found: list[tuple[str, int | None]] = []
    for reason in node.metadata.get("reasons", ()) if node.metadata else ():
        match = _VIA.fullmatch(str(reason))
        found.append((match[1], int(match[2])) if match else (str(reason), None))
    return found


_SCORE = re.compile(r"\(score (\d+(?:\.\d+)?)")


def _score(node: MessageNode) -> float | None:
    """The learned relevance score the builder gave the message, if any."""
    for reason in node.metadata.get("reasons", ()) if node.metadata else ():
        match = _SCORE.search(str(reason))
        if match:
            return float(match[1])
    return None


def _reply_chain(nodes: Sequence[MessageNode]) -> dict[int, int]:
    """Node index -> depth in the trigger's reply chain (1: the message the trigger answers)."""
    if not nodes or nodes[-1].message_id is None:
        return {}
    by_reference: dict[int, int] = {}
    for index, node in enumerate(nodes[:-1]):
        for kind, via in _reasons(node):
            if kind == "reference" and via is not None:
                by_reference.setdefault(via, index)
    chain: dict[int, int] = {}
    current = int(nodes[-1].message_id)
    depth = 1
    while current in by_reference and by_reference[current] not in chain:
        index = by_reference[current]
        chain[index] = depth
        current = int(nodes[index].message_id or 0)
        depth += 1
    return chain


def _protected(nodes: Sequence[MessageNode]) -> list[int]:
    if not nodes:
        return []
    protected = [len(nodes) - 1]
    protected.extend(index for index, depth in _reply_chain(nodes).items() if depth == 1)
    return protected


_REFERENCE = re.compile(re.escape(ARTICLE_REF_TAG) + r'([^"]*)"[^>]*/>')


def _reference_to(content: str, key: str) -> str | None:
    """The first reference element in ``content`` to the article ``key``, as written."""
    for match in _REFERENCE.finditer(content):
        if url_key(html.unescape(match.group(1))) == key:
            return match.group(0)
    return None


def _drop_order(nodes: Sequence[MessageNode], protected: Sequence[int]) -> list[int]:
    """Indexes of droppable nodes, the first to go first."""
    if not nodes:
        return []
    trigger = nodes[-1]
    trigger_id = int(trigger.message_id) if trigger.message_id else None
    chain = _reply_chain(nodes)
    keyed: list[tuple[tuple[float, ...], int]] = []
    for index, node in enumerate(nodes):
        if index in protected:
            continue
        rank = 0
        for kind, via in _reasons(node):
            if kind in ("reference", "reply", "mention"):
                rank = max(rank, 3 if via == trigger_id else 2)
            elif kind in ("temporal", "author"):
                rank = max(rank, 2 if via == trigger_id else 1)
        if index in chain:
            keyed.append(((4, -chain[index], 0), index))
            continue
        distance = 0.0
        if node.created_at is not None and trigger.created_at is not None:
            distance = abs((trigger.created_at - node.created_at).total_seconds())
        score = _score(node)
        if score is not None:  # the learned score says best how related a message is
            keyed.append(((score * 3, -distance, index), index))
            continue
        keyed.append(((rank, -distance, index), index))
    keyed.sort()
    return [index for _, index in keyed]
