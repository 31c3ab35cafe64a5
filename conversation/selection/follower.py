"""Following in a live channel: whether a message that calls no one is meant for the bot.

The decision itself is ``follow_model`` (fitted on IRC logs, pure Python); the ``Follower`` feeds
it from the channel cache the gateway keeps, so a decision costs no REST call: the walk back
stops where the cache stops knowing the channel. It applies the follow settings
(``FollowSettings``, the ``[triggers]`` follow keys: on or off, per channel, how long after the
bot's last answer, the threshold) and keeps each message's clue once (a busy channel decides
every message against the same recent ones). A log replayed through it:
``conversation.replay.follow_replay``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any

from conversation.common.settings import FollowSettings
from conversation.selection.clues import Clue, ClueCache, words_of
from conversation.selection.follow_model import (
    FollowDecision,
    FollowModel,
    decide,
    load_follow_model,
)
from conversation.selection.relevance import RelevanceModel
from conversation.selection.seal import is_seal
from conversation.selection.weights import load_model
from conversation.sources.cache import ChannelCache, Unknown
from conversation.sources.source import DISCORD_EPOCH_MS, MessageLike, created_ms

# Messages walked back at most per decision: the bot's latest answer further back than this is
# not a conversation it is still in.
MAX_WALK = 200
CHANNELS_KEPT = 10_000


def follow_enabled(settings: FollowSettings, channel: Any) -> bool:
    """Following is on, and not turned off for the channel (or a thread's parent)."""
    if not settings.follow:
        return False
    off = set(settings.follow_off_channels)
    parent = getattr(channel, "parent_id", None)
    return channel.id not in off and (parent is None or parent not in off)


class Follower:
    """Decides follow-ups from a channel cache; one per client, shared by its channels."""

    def __init__(
        self, model: FollowModel | None = None, relevance: RelevanceModel | None = None
    ) -> None:
        self.model = model or load_follow_model()
        self.relevance = relevance or load_model()
        self._clues = ClueCache()
        # Channel id -> when the bot last spoke there (ms), from the gateway: a channel where it
        # did not speak lately costs no walk at all.
        self._spoke: OrderedDict[int, int] = OrderedDict()
        # Channel id -> the clues of the bot's latest answer there and its trigger, from the
        # store at start: after a restart the cache holds nothing of the conversation yet.
        self._remembered: dict[int, list[Clue]] = {}

    def saw_bot_message(self, message: MessageLike, channel_id: int) -> None:
        self._spoke[channel_id] = created_ms(message)
        self._spoke.move_to_end(channel_id)
        if len(self._spoke) > CHANNELS_KEPT:
            self._spoke.popitem(last=False)

    def recall_answer(
        self,
        channel_id: int,
        bot_id: int,
        trigger: tuple[int, int, str],
        answer_ids: Sequence[int],
        answer: str,
    ) -> None:
        """The bot's answer in a channel as the store recorded it before a restart (``trigger``:
        its id, author id and text): the follow-ups right after the restart are decided as
        before it, although the cache does not know the conversation yet."""
        trigger_id, author_id, text = trigger
        clues = [_stored_clue(trigger_id, author_id, text, None)]
        clues += [_stored_clue(i, bot_id, answer, trigger_id) for i in answer_ids]
        if clues[-1].at_ms <= self._spoke.get(channel_id, 0):
            return  # the gateway (or a later record) showed a later answer
        self._remembered[channel_id] = clues
        self._spoke[channel_id] = clues[-1].at_ms
        if len(self._remembered) > CHANNELS_KEPT:
            self._remembered.pop(next(iter(self._remembered)))

    def forget(self, user_ids: Collection[int]) -> None:
        """People removed at their request (forget-user): the answers recalled from the store
        that hold them (as the trigger's author or mentioned) go, and every clue kept of a
        message's text (they are rebuilt from the cache as needed)."""
        people = set(user_ids)
        for channel_id, clues in list(self._remembered.items()):
            if any(c.author in people or c.mentions & people for c in clues):
                del self._remembered[channel_id]
        self._clues = ClueCache()

    def deleted(self, message_ids: Collection[int]) -> None:
        """Messages deleted in Discord: their clues go, and an answer recalled from the store
        that was one of them (the bot's answer taken down)."""
        gone = set(message_ids)
        self._clues.forget(gone)
        for channel_id, clues in list(self._remembered.items()):
            if any(c.id in gone for c in clues):
                del self._remembered[channel_id]

    def sealed(self, channel_id: int) -> None:
        """A ``/fresh`` seal in the channel: the answer recalled from the store is over."""
        self._remembered.pop(channel_id, None)

    def spoke_lately(self, message: MessageLike, channel_id: int, minutes: float) -> bool:
        """Whether the bot spoke in the channel within ``minutes`` before ``message`` (as the
        gateway showed it since the start)."""
        spoke = self._spoke.get(channel_id)
        return spoke is not None and created_ms(message) - spoke <= minutes * 60_000

    def clue(self, message: MessageLike) -> Clue:
        """The message's clue, built once per text (an edit makes a new one)."""
        return self._clues.clue(message)

    def earlier(
        self, cache: ChannelCache, message: MessageLike, bot_id: int, minutes: float
    ) -> list[Clue]:
        """The cached messages before ``message``, oldest first: the model's window (whatever
        their age, as it was fitted) and back to the bot's latest message when that lies within
        ``minutes``; never past what the cache knows (no REST call)."""
        oldest = created_ms(message) - int(minutes * 60_000)
        window = self.model.window_messages
        found: list[Clue] = []
        seen_bot = False
        current: Any = message
        while len(found) < MAX_WALK:
            previous = cache.previous(current.id)
            if previous is None or isinstance(previous, Unknown) or is_seal(previous, bot_id):
                break  # a /fresh seal: the talk before it is over, the seal no turn of the bot's
            if len(found) >= window and (seen_bot or created_ms(previous) < oldest):
                break
            found.append(self.clue(previous))
            seen_bot = seen_bot or previous.author.id == bot_id
            current = previous
        found.reverse()
        if not seen_bot:  # the cache stops before the bot's answer: the store's, if older
            start = found[0].id if found else message.id
            found = [c for c in self._remembered.get(cache.channel_id, ()) if c.id < start] + found
        return found

    def author_in(self, cache: ChannelCache, message: MessageLike, user_id: int) -> Any | None:
        """``user_id`` as the author of ``message`` or of a cached message shortly before it
        (for their name when the guild's member list does not hold them)."""
        current: Any = message
        for _ in range(MAX_WALK):
            if current.author.id == user_id:
                return current.author
            current = cache.previous(current.id)
            if current is None or isinstance(current, Unknown):
                return None
        return None

    def decide(
        self,
        message: MessageLike,
        cache: ChannelCache,
        bot_id: int,
        settings: FollowSettings,
        earlier: Sequence[Clue] | None = None,
    ) -> FollowDecision:
        """Whether to answer ``message`` (which mentions and replies to no one known to be the
        bot: those are triggers already) as a follow-up of the bot's conversation."""
        clue = self.clue(message)
        if earlier is None and (clue.reference is not None or clue.mentions):
            # The rules decide (someone else is called): only the replied-to message matters.
            parent = cache.get(clue.reference) if clue.reference is not None else None
            earlier = (
                [self.clue(parent)]
                if parent is not None and not isinstance(parent, Unknown)
                else []
            )
        if earlier is None:
            earlier = self.earlier(cache, message, bot_id, settings.follow_minutes)
        return self.decide_after(earlier, clue, bot_id, settings)

    def decide_after(
        self, earlier: Sequence[Clue], clue: Clue, bot_id: int, settings: FollowSettings
    ) -> FollowDecision:
        """The learned decision on ``clue`` after the ``earlier`` messages, under the
        follow settings: live and replayed alike."""
        return decide(
            self.model,
            bot_id,
            earlier,
            clue,
            minutes=settings.follow_minutes,
            threshold=settings.follow_threshold,
            relevance=self.relevance,
        )


def _stored_clue(message_id: int, author_id: int, text: str, reference: int | None) -> Clue:
    """A clue from what the store kept of a message (no message object: its id, author, text)."""
    return Clue(
        id=message_id,
        at_ms=(message_id >> 22) + DISCORD_EPOCH_MS,
        author=author_id,
        mentions=frozenset(),
        reference=reference,
        words=words_of(text),
        question="?" in text,
        size=len(text.split()),
    )
