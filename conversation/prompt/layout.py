"""The order of the prompt: the trigger's conversation first, the channel's other talk last.

Prefix-caching servers (vLLM, llama.cpp slots, Ollama, OpenAI, Anthropic) only reuse a prompt's
*start*. In a busy channel the recent messages of other conversations change with every new
message, so laid out in time order among the conversation's own they cut the reusable start at
the first of them. Here the prompt is:

1. the system prompt (nothing per request in it);
2. the trigger's conversation, in time order: what the next answer in the same conversation
   sends again, unchanged, with the new messages after it;
3. a label, then the other recent messages of the channel (in because they are recent, not
   because they belong), in time order;
4. the trigger, with its time.

The model loses nothing by the move: the label says which messages are not part of the
conversation (which the order alone never said); the message to answer is still the last one and
still ends with its time (the default persona says so); each message still says whom it replies
to.

Which selected message belongs to the conversation is read from why it was selected: a message in
through a reference, mention, link, reply, author or temporal step, or a recent one the learned
score puts in the conversation (at or above its threshold), is in it, and so is every message
linked to one of those by a reason (a reply to it, what it came through). A recent message with no
such link is one of the others. The selection itself is not changed, only its order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from conversation.selection.result import ContextSelection, Reason
from conversation.sources.source import MessageLike, reference_id

# A user turn of its own, written by the bot (a member's message always starts with its
# speaker's name, so none can spell it). Providers may look for it to find where the stable
# part of the prompt ends.
OTHERS_LABEL = "(Other recent messages in the channel, not part of this conversation:)"


@dataclass(frozen=True)
class Layout:
    """The selection in prompt order and where its parts end."""

    selection: ContextSelection  # messages reordered: conversation, then the others
    conversation: list[MessageLike]
    others: list[MessageLike]

    @property
    def root(self) -> int:
        """The conversation's oldest message (the trigger when it has none): what its follow-ups
        share, so a prompt cache can be keyed by it."""
        return self.conversation[0].id if self.conversation else self.selection.trigger.id


def lay_out(selection: ContextSelection, threshold: float | None) -> Layout:
    """``selection`` with its messages in prompt order (conversation first, both in time order).

    ``threshold`` is the learned score's threshold (None without the score): a recent message
    scored at or above it belongs to the conversation.
    """
    trigger = selection.trigger
    messages = sorted(selection.messages, key=lambda m: m.id)
    ids = {m.id for m in messages}
    inside: set[int] = {trigger.id}
    edges: dict[int, set[int]] = {m.id: set() for m in messages}
    edges[trigger.id] = set()

    def link(a: int, b: int) -> None:
        if a in edges and b in edges:
            edges[a].add(b)
            edges[b].add(a)

    for message in messages:
        reasons = selection.reasons.get(message.id, [])
        if reasons and _belongs(reasons[0], threshold):
            inside.add(message.id)
        for reason in reasons:
            if reason.via is not None:
                link(message.id, reason.via)
        parent = reference_id(message)
        if parent is not None and parent in ids:
            link(message.id, parent)
    parent = reference_id(trigger)
    if parent is not None and parent in ids:
        link(trigger.id, parent)
    frontier = list(inside)
    while frontier:
        current = frontier.pop()
        for other in edges.get(current, ()):
            if other not in inside:
                inside.add(other)
                frontier.append(other)
    conversation = [m for m in messages if m.id in inside]
    others = [m for m in messages if m.id not in inside]
    return Layout(
        selection=replace(selection, messages=[*conversation, *others]),
        conversation=conversation,
        others=others,
    )


def _belongs(reason: Reason, threshold: float | None) -> bool:
    """Whether the reason a message entered by puts it in the conversation by itself: any step
    of the walk but the recent messages, or a recent one the score puts in."""
    if reason.kind != "linear":
        return True
    return reason.score is not None and threshold is not None and reason.score >= threshold
