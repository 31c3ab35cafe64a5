"""People removed at their request, as every running process learns it: ``forget-user`` runs in
another process and scrubs the store, and leaves a row (the person's id and when) that each bot
process and shard polls (``watch``: one small indexed query every ``POLL_SECONDS``, off the event
loop). A process that learns of one drops what it remembers of them (the requests its memory
keeps, the Follower's recalled answers: ``on_forgotten``), and every build after leaves out what
was said before the forget by them or naming them (``narrow``): nothing of them is sent, or
stored with the answer, again. What they write after it is new, and read as anyone's: a request
holding only that is remembered like any other (``holds`` counts what was said before).

The watch outlives any failure (a store that cannot be read, an error in ``on_forgotten``): it
logs it and polls again, as a forget that never reaches this process again is worse than one
late. Each poll reads back a short while before the latest forget it saw (``SKEW_SECONDS``), so
a forget stamped a little earlier by another host's clock is still read.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from bot.storage import Store, StoreError
from conversation.memory import SentPrompt, summary_of
from conversation.selection import ContextSelection
from conversation.sources import reference_id, snowflake_time

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
"""How often the store is asked who was forgotten since: a forget reaches a running bot within
about this long (the same query on SQLite and PostgreSQL, on any shard)."""
SKEW_SECONDS = 300.0
"""How far before the latest forget seen each poll reads again: the clocks of the hosts that
run forget-user may disagree by this much (the rows re-read are those few forgets)."""
_MENTION = re.compile(r"<@!?(\d+)>")


CATCHUP_COMMAND = "catchup"


def retells(message: Any, bot_id: int) -> bool:
    """A public ``/catchup`` answer (``[catchup] ephemeral = false``): the bot's message made by
    that command, which retells whoever it summarised and replies to no one, so the answers to
    a forgotten person's messages do not catch it. Written before a forget, it is left out."""
    interaction = getattr(message, "interaction", None)  # nextcord's MessageInteraction
    return (
        message.author.id == bot_id
        and interaction is not None
        and getattr(interaction, "name", None) == CATCHUP_COMMAND
    )


class ForgottenPeople:
    """Who was forgotten and when, as this process last read the store."""

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self.at: dict[int, datetime] = {}
        self._since: datetime | None = None  # the latest forget read: the next poll's start

    async def poll(self) -> set[int]:
        """Read the forgets since the last poll; returns the people new to this process (or
        forgotten again)."""
        if self.store is None:
            return set()
        store, since = self.store, self._since
        if since is not None:
            since -= timedelta(seconds=SKEW_SECONDS)
        rows = await asyncio.to_thread(store.forgotten_since, since)
        fresh = {user for user, at in rows if self.at.get(user) != at}
        for user, at in rows:
            self.at[user] = at
            self._since = at if self._since is None else max(self._since, at)
        return fresh

    async def watch(self, on_forgotten: Callable[[set[int]], None]) -> None:
        """Poll until cancelled, telling ``on_forgotten`` of each new forget; whatever fails
        (the store, ``on_forgotten``) is logged and the next poll comes all the same."""
        while True:
            try:
                fresh = await self.poll()
            except StoreError as error:
                log.warning("could not read who was forgotten from the store: %s", error)
                fresh = set()
            except Exception:
                log.exception("could not read who was forgotten from the store")
                fresh = set()
            if fresh:
                log.info("forgetting %d person(s) removed with forget-user", len(fresh))
                try:
                    on_forgotten(fresh)
                except Exception:
                    log.exception("could not drop all this process remembers of %s", fresh)
            await asyncio.sleep(POLL_SECONDS)

    def holds(self, sent: SentPrompt, people: Collection[int] | None = None) -> bool:
        """Whether a remembered request holds what one of ``people`` (default: everyone
        forgotten) said, or was said of them, before their forget: a message of theirs, one
        naming them (mentioned, replied to), or a summary drawing on them. What they said
        after it is new: a request holding only that is kept like anyone's."""
        wanted = set(self.at if people is None else people)
        if not wanted:
            return False
        for node in sent.nodes:
            said = snowflake_time(node.message_id) if node.message_id is not None else None
            involved = {int(user) for user in (node.metadata or {}).get("named") or {}}
            if node.user_id is not None:
                involved.add(int(node.user_id))
            if any(self._before(user, said) for user in involved & wanted):
                return True
            summary = summary_of(node)
            if summary is not None and any(
                self._before(user, summary.first) for user in wanted & set(summary.authors)
            ):
                return True
        return False

    def _before(self, user: int, said: datetime | None) -> bool:
        """Whether what was ``said`` then (None: unknown) came before ``user``'s forget (not
        known to this process: counted as now)."""
        at = self.at.get(user)
        return at is None or said is None or said < at

    def narrow(self, selection: ContextSelection, bot_id: int) -> ContextSelection:
        """``selection`` without the messages said before a forget by or naming the person
        forgotten, and the bot's answers to those (they quote and paraphrase them, as
        forget-user drops them from the store); the trigger stays: it is what is answered."""
        if not self.at:
            return selection
        dropped = self.said_before_forgets(selection.messages, bot_id)
        kept = [m for m in selection.messages if m.id not in dropped]
        if len(kept) == len(selection.messages):
            return selection
        return replace(
            selection,
            messages=kept,
            reasons={m.id: selection.reasons[m.id] for m in kept if m.id in selection.reasons},
        )

    def said_before_forgets(self, messages: list[Any], bot_id: int) -> set[int]:
        """The ids of ``messages`` (oldest first) said before a forget by or naming the person
        forgotten, and of the bot's answers to those: what no build, summary or catch-up reads
        again."""
        by_id = {m.id: m for m in messages}
        dropped: set[int] = set()
        if not self.at:
            return dropped
        latest = max(self.at.values())
        for message in messages:  # oldest first: an answer after what it answers
            replied = reference_id(message)
            if (
                self._theirs(message, by_id)
                or (message.author.id == bot_id and replied is not None and replied in dropped)
                or (retells(message, bot_id) and snowflake_time(message.id) < latest)
            ):
                dropped.add(message.id)
        return dropped

    def _theirs(self, message: Any, by_id: dict[int, Any]) -> bool:
        when = snowflake_time(message.id)
        people = {message.author.id}
        people.update(user.id for user in getattr(message, "mentions", None) or [])
        people.update(int(found) for found in _MENTION.findall(message.content or ""))
        reference = getattr(message, "reference", None)
        if reference is not None:
            author = getattr(getattr(reference, "resolved", None), "author", None)
            replied = by_id.get(reference.message_id) if author is None else None
            author = author if replied is None else replied.author
            if author is not None:
                people.add(author.id)
        return any(user in self.at and when < self.at[user] for user in people)
