"""Lazy materialization: only the messages the builder selected become ``MessageNode``s.

This is where the expensive and the presentational work happens, once per selected message:
mentions become readable names, link embeds and attachments become text, the bot's own messages
become the assistant's turns, and linked articles are fetched (all of a context's at once, off
the event loop, through the shared ``ArticleService``) and appended as escaped XML.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from conversation.articles.models import ArticleResult
from conversation.articles.render import render_embeddings
from conversation.articles.service import ArticleService
from conversation.articles.urls import url_key
from conversation.common.text import clean_text
from conversation.graph.node import MessageNode
from conversation.prompt.continuation import continuation_lines
from conversation.prompt.names import (
    People,
    SpeakerLabels,
    neutral_name,
    shown_name,
    speaker_labels,
)
from conversation.prompt.notices import notices_of
from conversation.selection.result import ContextSelection, Reason
from conversation.sources.source import AttachmentUnreadable

USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")
CHANNEL_MENTION = re.compile(r"<#(\d+)>")
CUSTOM_EMOJI = re.compile(r"<a?:(\w+):\d+>")
TEXT_SUFFIXES = (".txt", ".md", ".py", ".json", ".log", ".csv", ".toml", ".yaml", ".yml", ".js",
                 ".ts", ".rs", ".go", ".c", ".h", ".cpp", ".java", ".sh", ".ini", ".cfg", ".xml",
                 ".html", ".css", ".sql", ".diff", ".patch")  # fmt: skip
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
MAX_TEXT_ATTACHMENT_BYTES = 1_000_000  # read at most this much of a text file, then cut


class MaterializeOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    bot_user_id: int | None = None
    vision: bool = False
    max_text_chars: int = 8000
    max_text_attachments: int = 3
    # The bot's notice lines (failures, cut notes): never the assistant's words (see notices).
    notices: tuple[str, ...] = ()


@dataclass
class MaterializedContext:
    """Nodes in the selection's order (the prompt's, see ``layout``), the trigger last, and what
    happened to each article."""

    nodes: list[MessageNode]
    articles: list[ArticleResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Inlined text attachments per message id, as they appear in its node's text, so that the
    # token budget can shorten them without re-reading anything.
    attachment_texts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Why selected messages are not in the nodes (the bot's messages that were only a notice).
    left_out: list[str] = field(default_factory=list)


class Materializer:
    """Turns selected raw messages into nodes; one instance shared by every answer."""

    def __init__(self, options: MaterializeOptions, articles: ArticleService | None = None):
        self.options = options
        self.articles = articles

    def reconfigure(self, **changes: Any) -> None:
        """Swap in options with ``changes`` (fields of ``MaterializeOptions``): the bot's id
        once the gateway says it, a reloaded config's limits. Every answer after reads them."""
        self.options = self.options.model_copy(update=changes)

    async def materialize(self, selection: ContextSelection) -> MaterializedContext:
        notices = notices_of(self.options.notices)
        only_notices = [
            m
            for m in selection.messages
            if self._is_bot(m) and notices.only_notice(m.content or "")
        ]
        left_out = [
            f"message {m.id} left out: the bot's own notice, not an answer ({m.content.strip()})"
            for m in only_notices
        ]
        gone = {m.id for m in only_notices}
        messages = [*(m for m in selection.messages if m.id not in gone), selection.trigger]
        links = {m.id: self._links(m) for m in messages}
        # The trigger's links first: if the per-context limit bites, what was asked about wins.
        ordered = [url for m in reversed(messages) for url in links[m.id]]
        results: dict[str, ArticleResult] = {}
        if ordered and self.articles is not None:
            results = await self.articles.fetch_many(ordered)
        attachments = await self._attachments(messages)
        by_id = {message.id: message for message in messages}
        people = People(messages)
        # Whom each message replies to, resolved once for the labels and the headers alike.
        replied = {message.id: _replied_author(message, by_id) for message in messages}
        headed = [m.author for m in messages] + [a for a in replied.values() if a is not None]
        names = speaker_labels(people(p) for p in headed)
        repeats = _repeated_links(messages, links, results)
        nodes = [
            self._node(
                message,
                selection.reasons.get(message.id, []),
                [results[url] for url in links[message.id] if url in results],
                extra,
                names,
                people,
                is_trigger=message is selection.trigger,
                shown_earlier=repeats.get(message.id, frozenset()),
                replied_author=replied[message.id],
            )
            for message, extra in zip(messages, attachments, strict=True)
        ]
        problems = [
            f"article {result.url} not used: {result.reason}"
            for result in results.values()
            if not result.ok
        ]
        inlined = {
            str(message.id): tuple(
                _as_shown(block, is_bot_turn=self._is_bot(message)) for block in extra[2]
            )
            for message, extra in zip(messages, attachments, strict=True)
            if extra[2]
        }
        return MaterializedContext(
            nodes=nodes,
            articles=list(results.values()),
            problems=[*left_out, *problems],
            attachment_texts=inlined,
            left_out=left_out,
        )

    # ------------------------------------------------------------------ one message

    def _node(
        self,
        message: Any,
        reasons: Sequence[Reason],
        articles: list[ArticleResult],
        attachment_text: tuple[str, tuple[str, ...], tuple[str, ...]],
        labels: SpeakerLabels,
        people: People,
        *,
        is_trigger: bool,
        shown_earlier: frozenset[str] = frozenset(),
        replied_author: Any = None,
    ) -> MessageNode:
        author = people(message.author)
        is_bot_turn = self._is_bot(message)
        text = readable_content(message, people)
        if is_bot_turn:  # a failure or cut line the bot added is not what it said
            text = notices_of(self.options.notices).without_notices(text)
        parts = [text] if text else []
        parts.extend(_embed_lines(message))
        extra, images, _ = attachment_text
        if extra:
            parts.append(extra)
        # Only the article suffix may carry embedding tags: a member typing them must not be
        # able to forge an "article" the model would trust.
        body = neutralize_embedding_tags("\n".join(parts))
        if not is_bot_turn:  # a member's lines must not read as the bot's (see continuation)
            body = continuation_lines(body)
        suffix = render_embeddings(articles, shown_earlier=shown_earlier)
        if suffix:
            body = f"{body} {suffix}" if body else suffix
        metadata: dict[str, Any] = {
            "reasons": [reason.describe() for reason in reasons],
            "trigger": is_trigger,
        }
        named = people_named(message, people)
        named.pop(str(self.options.bot_user_id), None)  # the bot is never forgotten
        if named:
            metadata["named"] = named
        name = display_name(author)
        created_at: datetime = message.created_at
        if is_bot_turn:
            return MessageNode(
                role="assistant",
                content=body,
                name=name,
                user_id=str(author.id),
                message_id=str(message.id),
                created_at=created_at,
                metadata=metadata,
            )
        speaker = labels.label(author.id, shown_name(author))
        replying = _reply_target(message, replied_author, labels, people)
        header = f"{speaker} (replying to {replying})" if replying else speaker
        if getattr(message, "edited_at", None) is not None:  # what it says now, not at first
            header = f"{header} {EDITED}"
        return MessageNode(
            role="user",
            content=f"{header}: {body}",
            name=name,
            user_id=str(author.id),
            message_id=str(message.id),
            created_at=created_at,
            images=images if self.options.vision else (),
            metadata=metadata,
        )

    def _is_bot(self, message: Any) -> bool:
        bot = self.options.bot_user_id
        return bot is not None and message.author.id == bot

    def _links(self, message: Any) -> list[str]:
        if self.articles is None:
            return []
        embed_urls = [embed.url for embed in getattr(message, "embeds", []) if embed.url]
        return self.articles.find_urls(message.content, embed_urls)

    async def _attachments(
        self, messages: list[Any]
    ) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """Each message's attachment text; only messages with attachments cost a task (a
        gather over the whole context put every answer behind the event loop's queue once per
        message, the bulk of a warm answer's wait on a busy bot)."""
        out: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [("", (), ())] * len(messages)
        with_files = [i for i, m in enumerate(messages) if getattr(m, "attachments", None)]
        if with_files:
            texts = await asyncio.gather(*(self._attachment_text(messages[i]) for i in with_files))
            for index, text in zip(with_files, texts, strict=True):
                out[index] = text
        return out

    async def _attachment_text(self, message: Any) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """Text files inline (capped), images as image URLs, anything else named; and the
        inlined text blocks apart."""
        lines: list[str] = []
        inlined: list[str] = []
        images: list[str] = []
        read = 0
        for attachment in getattr(message, "attachments", []):
            filename = neutral_name(attachment.filename, fallback="file")
            content_type = (getattr(attachment, "content_type", None) or "").lower()
            lower = filename.lower()
            if content_type.startswith("image/") or lower.endswith(IMAGE_SUFFIXES):
                if self.options.vision:
                    images.append(attachment.url)
                lines.append(f"[image: {filename}]")
            elif (content_type.startswith("text/") or lower.endswith(TEXT_SUFFIXES)) and (
                read < self.options.max_text_attachments
            ):
                read += 1
                lines.append(await self._inline_text(attachment))
                inlined.append(lines[-1])
            else:
                lines.append(f"[attachment: {filename}, {_size(attachment.size)}]")
        return "\n".join(lines), tuple(images), tuple(inlined)

    async def _inline_text(self, attachment: Any) -> str:
        limit = self.options.max_text_chars
        filename = neutral_name(attachment.filename, fallback="file")
        if attachment.size > MAX_TEXT_ATTACHMENT_BYTES:
            return f"[text attachment: {filename}, {_size(attachment.size)}, too big]"
        try:
            data: bytes = await attachment.read()
        except Exception as error:  # nextcord raises HTTPException, NotFound, or fails offline
            # A replayed log says why in words; live, the error's type is enough.
            why = str(error) if isinstance(error, AttachmentUnreadable) else type(error).__name__
            return f"[text attachment: {filename}, not readable: {why}]"
        text = clean_text(data.decode("utf-8", errors="replace"))  # as the node will hold it
        cut = "" if len(text) <= limit else f"\n[... cut at {limit} of {len(text)} characters]"
        return f"[text attachment: {filename}]\n{text[:limit]}{cut}"


# ---------------------------------------------------------------------------- text helpers


EMBEDDING_TAG = re.compile(r"<(/?)(embeddings?)", re.IGNORECASE)


EDITED = "(edited)"
"""After the header of a message edited since it was posted: the model knows an old message
may say something else than when it was answered (one edited into instructions, say). It
depends only on the message, so a request sent again unchanged stays byte for byte the same."""


def neutralize_embedding_tags(text: str) -> str:
    """``<embedding`` and ``</embeddings`` from outside written as ``&lt;...``."""
    return EMBEDDING_TAG.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}", text)


def _as_shown(block: str, *, is_bot_turn: bool) -> str:
    """An inlined attachment as its node's text holds it: the body is rendered line by line,
    so the block (which starts a line of the body) reads the same alone."""
    block = neutralize_embedding_tags(block)
    return block if is_bot_turn else continuation_lines(block)


def display_name(user: Any) -> str:
    """The name a person goes by here, neutralised: members choose it (see ``names``)."""
    return neutral_name(shown_name(user))


def readable_content(message: Any, people: People) -> str:
    """Mentions as ``@Name``/``#channel``, custom emoji as ``:name:``; ``people`` names each
    person as the rest of the context does."""
    content: str = message.content or ""
    users = {user.id: display_name(people(user)) for user in getattr(message, "mentions", [])}
    guild = getattr(message, "guild", None)

    def user_name(match: re.Match[str]) -> str:
        user_id = int(match.group(1))
        if user_id in users:
            return f"@{users[user_id]}"
        member = guild.get_member(user_id) if guild is not None else None
        return f"@{display_name(people(member))}" if member is not None else "@unknown-user"

    def role_name(match: re.Match[str]) -> str:
        role = guild.get_role(int(match.group(1))) if guild is not None else None
        return f"@{neutral_name(role.name)}" if role is not None else "@unknown-role"

    def channel_name(match: re.Match[str]) -> str:
        channel = guild.get_channel(int(match.group(1))) if guild is not None else None
        name = getattr(channel, "name", None)
        return f"#{neutral_name(name)}" if name else "#unknown-channel"

    content = USER_MENTION.sub(user_name, content)
    content = ROLE_MENTION.sub(role_name, content)
    content = CHANNEL_MENTION.sub(channel_name, content)
    return CUSTOM_EMOJI.sub(lambda m: f":{m.group(1)}:", content)


def people_named(message: Any, people: People) -> dict[str, str]:
    """User id -> the name shown for each person the text names (mentions, the reply target).

    Kept beside the text so that a person's name can be found and removed everywhere it was
    rendered into someone else's message (forgetting a user), not only in their own messages.
    """
    named = {str(user.id): display_name(people(user)) for user in getattr(message, "mentions", [])}
    guild = getattr(message, "guild", None)
    for match in USER_MENTION.finditer(message.content or ""):
        if match.group(1) not in named and guild is not None:
            member = guild.get_member(int(match.group(1)))
            if member is not None:
                named[match.group(1)] = display_name(member)
    reference = getattr(message, "reference", None)
    author = getattr(getattr(reference, "resolved", None), "author", None)
    if author is not None:
        named[str(author.id)] = display_name(people(author))
    return named


def _embed_lines(message: Any) -> list[str]:
    lines = []
    for embed in getattr(message, "embeds", []):
        title = neutral_name(embed.title or "", fallback="")
        description = (embed.description or "").strip()
        if title or description:
            text = " - ".join(part for part in (title, description) if part)
            lines.append(f"[link preview: {text[:500]}]")
    return lines


def _reply_target(message: Any, author: Any, labels: SpeakerLabels, people: People) -> str | None:
    """Whom a message replies to, given the replied-to message's ``author`` as
    ``_replied_author`` found it (None: not found)."""
    reference = getattr(message, "reference", None)
    if reference is None or reference.message_id is None:
        return None
    if author is not None:
        return labels.label(author.id, shown_name(people(author)))
    return "a deleted message" if reference.resolved is not None else "an earlier message"


def _replied_author(message: Any, context: dict[int, Any]) -> Any:
    """The author of the message ``message`` replies to. Discord resolves only some references
    in the payload (not one that reached us as another message's reference), so the context is
    asked too."""
    reference = getattr(message, "reference", None)
    if reference is None or reference.message_id is None:
        return None
    author = getattr(reference.resolved, "author", None)
    if author is None and reference.message_id in context:
        author = context[reference.message_id].author
    return author


def _repeated_links(
    messages: Sequence[Any], links: dict[int, list[str]], results: dict[str, ArticleResult]
) -> dict[int, frozenset[str]]:
    """Per message, the links whose article an earlier message of the prompt already embeds.

    The earliest mention carries the article, so the prompt's beginning (what servers cache)
    does not change when a later message links it again. Two spellings of one page (another
    ``#fragment``) are one article.
    """
    embedded: set[str] = set()
    repeats: dict[int, frozenset[str]] = {}
    for message in messages:
        again = set()
        for url in links[message.id]:
            result = results.get(url)
            if result is None or not result.ok:
                continue
            key = url_key(url)
            if key in embedded:
                again.add(url)
            embedded.add(key)
        if again:
            repeats[message.id] = frozenset(again)
    return repeats


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"


def render_system_prompt(
    template: str, *, bot_name: str, server: str, channel: str, now: datetime
) -> str:
    """Fill the persona's placeholders; other braces in it are left alone."""
    values = {
        "{bot_name}": bot_name,
        "{server}": server,
        "{channel}": channel,
        "{now}": now.strftime("%A %Y-%m-%d %H:%M %Z"),
    }
    for placeholder, value in values.items():
        template = template.replace(placeholder, value)
    return template
