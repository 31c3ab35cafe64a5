"""A follow-up's request: the previous request and the bot's answer, byte for byte, then what
is new; or, when the conversation has outgrown its room, a cut in one step.

Prefix-caching servers (vLLM, SGLang, llama.cpp slots, OpenAI, Anthropic) reuse a prompt's
start only while it stays byte-identical. Rebuilt from nothing at every answer, a conversation's
oldest messages slide out and messages near the score's threshold come and go, so the start
changes and the cache is lost. Here, when the trigger continues a conversation the bot answered
(the answer it replies to, or the latest answer or trigger in its conversation) and most of
that request's conversation is still selected (``keep_share``), the request is:

1. the previous request, as sent (its trigger keeps its time; nothing per request moved);
2. the bot's answer to it;
3. the conversation's messages selected since, then the other recent ones after the label, then
   the trigger with its time. A message selected now that is older than the previous trigger
   joins here too, with its time, rather than being inserted where it was said (unless a cut
   left it out: below).

An edited message is sent as edited and a deleted one never again: the prefix breaks at the
first such message, once (the next follow-up starts with this request).

The cut: when the request would exceed the budget or ``max_total`` messages, it is built afresh
from the current selection, fitted to ``cut_share`` of both (half by default), so the following
answers append again for a while instead of cutting a message per answer. The cut is one
``Cut`` in the work log. What it left out is not selected back into the follow-ups: the request
remembers where it was cut (``cut_at``, carried on by each follow-up that continues it, until
the conversation is built afresh or cut again), else the selection would bring the dropped
messages back at the next answer, the room refill at once and the next cut, which loses the
server's cached prefix, come an answer or two later. Given a ``SummaryPolicy``, what falls out
is summarized by the model before the request goes (``conversation.memory.summary``): the
summary comes right after the system prompt, room is kept for it in the cut, and the follow-ups
send it unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import FrozenMap, MessageNode
from conversation.memory.recall import PromptMemory
from conversation.memory.sent import SentPrompt, content_digest, discord_ids
from conversation.memory.summary import (
    Summary,
    SummaryPolicy,
    dropped_by,
    is_summary,
    summary_node,
    summary_of,
    write_summary,
)
from conversation.prompt.budget import Budget, Cut, FittedPrompt
from conversation.prompt.pipeline import (
    OTHERS_NODE,
    PreparedPrompt,
    is_others_label,
    refit_prompt,
    time_stamped,
)
from conversation.prompt.tokens import REPLY_PRIMING, TokenCounter
from conversation.sources.cache import UNKNOWN, ChannelCache
from conversation.sources.source import reference_id

KEEP_SHARE = 0.6
"""A previous request is continued when at least this share of its conversation's messages (not
the other recent talk it carried) is still selected: below it the conversation has moved on, and
a fresh request reads better. Measured on irc-dev (``bench.prefix --keep-share``, cut 0.5): 0.7
reused 50.2% of the previous prompt and 66.5% of one of the last 64, 0.6 53.2% and 70.2% for
5% more prompt tokens, 0.5 56.0% and 74.1% for 13% more, keeping ever more messages the score
no longer selects."""

CUT_SHARE = 0.5
"""A conversation that outgrows its room is cut to this share of the budget and of
``max_total`` (hysteresis: the next answers append again before the next cut). Measured on
irc-dev (``bench.prefix --cut-share``, keep 0.7): 0.4, 0.5, 0.6 and 0.8 reused 66.5%, 66.5%,
66.1% and 65.2% of one of the last 64 prompts, with 141, 149, 152 and 164 cuts: deeper cuts come
less often but leave less context right after them; 0.5 is as good as 0.4 and keeps more."""


@dataclass(frozen=True)
class Continuity:
    """When a follow-up continues the previous request, and how far a cut goes."""

    max_total: int
    keep_share: float = KEEP_SHARE
    cut_share: float = CUT_SHARE


@dataclass(frozen=True)
class ChannelNow:
    """The channel as it is now, for the messages an earlier request sent: ``deleted`` (known
    to be gone: a deletion event, or the store's record of one), ``missing`` (absent from a
    stretch of the channel's own history held whole: deleted while the bot was not looking),
    ``content`` (the text now, None when not known here) and ``edited`` (whether it was ever
    edited: what a request read back from the store, with no digest of the text it sent, goes
    by)."""

    deleted: Callable[[int], bool] = field(default=lambda _message_id: False)
    content: Callable[[int], str | None] = field(default=lambda _message_id: None)
    edited: Callable[[int], bool] = field(default=lambda _message_id: False)
    missing: Callable[[int], bool] = field(default=lambda _message_id: False)

    @classmethod
    def of_cache(cls, cache: ChannelCache) -> ChannelNow:
        """What the channel's cache knows (gateway edits and deletions included). A message
        it answers "known not to exist" for is missing; "unknown" is not. A thread's starter
        (its id is the thread's) lives in the parent channel: never missing here."""

        def missing(message_id: int) -> bool:
            return message_id > cache.channel_id and cache.get(message_id) is None

        def content(message_id: int) -> str | None:
            message = cache.get(message_id)
            return None if message is None or message is UNKNOWN else message.content

        def edited(message_id: int) -> bool:
            message = cache.get(message_id)
            return message is not None and getattr(message, "edited_at", None) is not None

        return cls(deleted=cache.is_deleted, content=content, edited=edited, missing=missing)

    def with_home(self, home: ChannelNow) -> ChannelNow:
        """A thread's channel as it is now, with the ``home`` channel it was opened from: the
        thread's request holds the home's messages (the request it continues), so a home
        message deleted or edited after the move is known here too. Ids are unique across
        channels: deleted in either is deleted; the home's text where the thread has none. What
        is missing stays the thread's (the home's history never holds the thread's messages)."""
        here = self

        def content(message_id: int) -> str | None:
            found = here.content(message_id)
            return found if found is not None else home.content(message_id)

        return replace(
            self,
            deleted=lambda message_id: here.deleted(message_id) or home.deleted(message_id),
            content=content,
            edited=lambda message_id: here.edited(message_id) or home.edited(message_id),
        )

    def with_gone(self, gone: frozenset[int]) -> ChannelNow:
        """The same, with ``gone`` deleted too (what the store knows is deleted)."""
        if not gone:
            return self
        known = self.deleted
        return replace(self, deleted=lambda message_id: message_id in gone or known(message_id))

    def gone_id(self, message_id: int) -> bool:
        """Whether a message of this channel (an answer, one a summary stands for) is gone."""
        return self.deleted(message_id) or self.missing(message_id)

    def gone(self, node: MessageNode) -> bool:
        """Whether what a sent node stands for is gone: any part of it deleted, or missing
        from the channel, unless a link brought it (from another channel, maybe, whose
        messages this channel's history never holds)."""
        ids = discord_ids(node)
        if any(self.deleted(i) for i in ids):
            return True
        return not _linked(node) and any(self.missing(i) for i in ids)


def _linked(node: MessageNode) -> bool:
    """Whether the message was selected because a message links to it."""
    return any(str(r).startswith("link") for r in (node.metadata or {}).get("reasons", ()))


def candidates(fresh: PreparedPrompt) -> list[int]:
    """The messages whose request the trigger may continue, best first: the message it replies
    to, then its conversation's messages, latest first."""
    trigger = fresh.selection.trigger
    found: list[int] = []
    parent = reference_id(trigger)
    if parent is not None:
        found.append(parent)
    conversation = fresh.layout.conversation if fresh.layout else fresh.selection.messages
    found.extend(sorted((m.id for m in conversation), reverse=True))
    return found


def sent_prompt(
    prepared: PreparedPrompt,
    channel_id: int,
    *,
    answer: MessageNode | None = None,
    answer_ids: Sequence[int] = (),
    previous: SentPrompt | None = None,
) -> SentPrompt:
    """What ``prepared`` sent, to remember for its follow-ups."""
    nodes = prepared.graph.snapshot().nodes()
    selection = prepared.selection
    digests = dict(previous.digests) if previous is not None else {}
    for message in [*selection.messages, selection.trigger]:
        digests[message.id] = content_digest(message.content)
    sent_ids = {int(node.message_id) for node in nodes if node.message_id is not None}
    others = {m.id for m in prepared.layout.others} if prepared.layout else set()
    if previous is not None:
        others |= set(previous.others)
    return SentPrompt(
        channel_id=channel_id,
        trigger_id=selection.trigger.id,
        nodes=tuple(nodes),
        tokens=tuple(_tokens_of(nodes, TokenCounter())),
        answer=answer,
        answer_ids=tuple(answer_ids),
        cache_key=prepared.cache_key,
        digests={k: v for k, v in digests.items() if k in sent_ids},
        others=tuple(sorted(others & sent_ids)),
        cut_at=prepared.cut_at,
    )


def _continued(
    previous: SentPrompt | None,
    fresh: PreparedPrompt,
    continuity: Continuity,
    budget: Budget | None,
    counter: TokenCounter | None,
    now: ChannelNow | None,
    summary_room: int,
) -> tuple[PreparedPrompt, bool]:
    """The request for ``fresh``'s trigger, and whether it is a cut: ``previous`` continued
    when the trigger continues it, else ``fresh`` (cut to ``cut_share`` when the conversation
    outgrew its room, with ``summary_room`` tokens of it kept free for a summary)."""
    counter = counter or TokenCounter()
    now = now or ChannelNow()
    if previous is None or not previous.nodes or previous.nodes[0] != fresh.system:
        return fresh, False
    selected = {*fresh.selection.ids, fresh.selection.trigger.id}
    # The conversation's part of it (the other recent talk comes and goes by design).
    sent = [int(n.message_id) for n in previous.nodes if n.message_id is not None]
    sent = [i for i in sent if i not in previous.others] or sent
    if sum(i in selected for i in sent) < continuity.keep_share * len(sent):
        return fresh, False
    current = {
        int(n.message_id): n
        for n in _nodes(fresh)
        if n.message_id is not None and not is_others_label(n)
    }
    kept, tokens, broken = _still_valid(previous, current, now, counter)
    if previous.answer is not None:
        if any(now.gone_id(i) for i in previous.answer_ids):  # a moderator deleted it
            broken = True
        else:
            kept.append(previous.answer)
            tokens.append(counter.node(previous.answer))
    reused = len(kept) if not broken else None
    floor = _cut_floor(previous)
    added, added_tokens = _new_part(previous, fresh, kept, counter, now, floor)
    if floor is not None and not _summarized(previous):
        # What a plain cut left out comes back when the whole request still fits the share
        # a cut leaves (the room grew, as when the operator widens it): no cut comes sooner.
        back, back_tokens = _new_part(previous, fresh, kept, counter, now, None)
        messages, total = _size([*kept, *back], [*tokens, *back_tokens], counter)
        if len(back) > len(added) and not _outgrows(
            messages, total, continuity, budget, continuity.cut_share
        ):
            added, added_tokens = back, back_tokens
    nodes, tokens = [*kept, *added], [*tokens, *added_tokens]
    messages, total = _size(nodes, tokens, counter)
    if _outgrows(messages, total, continuity, budget):
        return cut_prompt(fresh, continuity, budget, counter, total, summary_room), True
    fitted = None
    if budget is not None:
        fitted = FittedPrompt(nodes=nodes, tokens=tokens, total=total, budget=budget)
    continued = _assembled(
        fresh,
        nodes,
        fitted,
        reused=reused,
        key=previous.cache_key,
        continues=previous.trigger_id,
        cut_at=previous.cut_at,
    )
    return continued, False


def cut_prompt(
    fresh: PreparedPrompt,
    continuity: Continuity,
    budget: Budget | None,
    counter: TokenCounter,
    outgrown: int,
    summary_room: int = 0,
) -> PreparedPrompt:
    """``fresh`` fitted to ``cut_share`` of the budget and of ``max_total``, the cut recorded;
    ``summary_room`` tokens of that share are left for the summary that goes right after the
    system prompt (``with_summary``)."""
    share = continuity.cut_share
    smaller = budget
    if budget is not None:
        room = max(1, math.floor(budget.limit * share) - summary_room)
        smaller = budget.model_copy(update={"reserve": budget.window - room})
    prepared = refit_prompt(fresh, smaller, counter)
    nodes = prepared.graph.snapshot().nodes()
    keep = max(1, math.floor(continuity.max_total * share))
    protected = {str(fresh.selection.trigger.id)}
    parent = reference_id(fresh.selection.trigger)
    if parent is not None:
        protected.add(str(parent))
    ids = sorted(
        (int(n.message_id) for n in nodes if n.message_id and n.message_id not in protected),
        reverse=True,
    )
    dropped = {str(i) for i in ids[max(0, keep - len(protected)) :]}
    kept_nodes = _without_stray_label([n for n in nodes if n.message_id not in dropped])
    tokens = _tokens_of(kept_nodes, counter)
    total = counter.scale(REPLY_PRIMING) + sum(tokens)
    cut = Cut(
        action="dropped",
        what=f"conversation cut to {share:.0%} of its room (it had outgrown it)",
        message_id=None,
        tokens_before=outgrown,
        tokens_after=total,
    )
    fitted = None
    if prepared.fitted is not None and budget is not None:
        cuts = [*prepared.fitted.cuts, cut]
        fitted = FittedPrompt(
            nodes=kept_nodes, tokens=tokens, total=total, budget=budget, cuts=cuts
        )
    return _assembled(fresh, kept_nodes, fitted, cut_at=fresh.selection.trigger.id)


def with_summary(
    prepared: PreparedPrompt,
    summary: Summary,
    counter: TokenCounter,
    replaced: Sequence[MessageNode] = (),
) -> PreparedPrompt:
    """``prepared`` with ``summary`` right after its system prompt, counted in its budget. In
    its graph the summary is the squashed version of ``replaced`` (the messages it stands for,
    and the summary before it): ``graph.versions(1)`` gives them back."""
    node = summary_node(summary)
    tokens = counter.node(node)
    node = node.model_copy(update={"metadata": FrozenMap({**node.metadata, "tokens": tokens})})
    nodes = _nodes(prepared)
    spliced = [nodes[0], node, *nodes[1:]]
    fitted = prepared.fitted
    if fitted is not None:
        fitted = FittedPrompt(
            nodes=spliced,
            tokens=[fitted.tokens[0], tokens, *fitted.tokens[1:]],
            total=fitted.total + tokens,
            budget=fitted.budget,
            cuts=fitted.cuts,
        )
    assembled = _assembled(prepared, spliced, fitted, cut_at=prepared.cut_at)
    if replaced:  # the same request, the summary linked to what it replaces
        graph = MessageGraph()
        graph.extend([nodes[0], *replaced, *nodes[1:]])
        graph.squash(1, 1 + len(replaced), node)
        assembled = replace(assembled, graph=graph)
    return assembled


def refit_keeping_summary(
    prepared: PreparedPrompt, budget: Budget, counter: TokenCounter
) -> PreparedPrompt:
    """``refit_prompt`` (after a "context too long" answer) with the summary ``prepared``
    sent kept right after the system prompt, room made for it: rebuilt without it, the request
    and every follow-up continuing it would lose the conversation's beginning for good. Only
    what the request held is fitted again: the whole context would bring back what a cut left
    out (and what a summary stands for), and its follow-ups would then hold it for good."""
    held = {n.message_id for n in _nodes(prepared) if n.message_id is not None}
    materialized = prepared.materialized
    prepared = replace(
        prepared,
        materialized=replace(
            materialized,
            nodes=[n for n in materialized.nodes if n.message_id is None or n.message_id in held],
        ),
    )
    summary = next((s for s in map(summary_of, _nodes(prepared)) if s is not None), None)
    if summary is None:
        refit = refit_prompt(prepared, budget, counter)
    else:
        room = counter.node(summary_node(summary))
        reserve = min(budget.reserve + room, budget.window - 1)
        smaller = budget.model_copy(update={"reserve": reserve})
        refit = with_summary(refit_prompt(prepared, smaller, counter), summary, counter)
        if refit.fitted is not None:
            refit = replace(refit, fitted=replace(refit.fitted, budget=budget))
        refit = replace(refit, summary_note=prepared.summary_note)
    return replace(refit, cut_at=prepared.cut_at)


def _assembled(
    fresh: PreparedPrompt,
    nodes: list[MessageNode],
    fitted: FittedPrompt | None,
    *,
    reused: int | None = None,
    key: str | None = None,
    continues: int | None = None,
    cut_at: int | None = None,
) -> PreparedPrompt:
    """``fresh``'s selection and materialized messages, sent as ``nodes``."""
    graph = MessageGraph()
    graph.extend(nodes)
    return PreparedPrompt(
        selection=fresh.selection,
        materialized=fresh.materialized,
        graph=graph,
        system=fresh.system,
        fitted=fitted,
        layout=fresh.layout,
        reused=reused,
        key=key,
        continues=continues,
        cut_at=cut_at,
    )


def _nodes(prepared: PreparedPrompt) -> list[MessageNode]:
    return prepared.graph.snapshot().nodes()


def _tokens_of(nodes: Sequence[MessageNode], counter: TokenCounter) -> list[int]:
    """Each node's tokens: as the budget counted it when it did, else estimated now."""
    found = []
    for node in nodes:
        counted = (node.metadata or {}).get("tokens")
        found.append(int(counted) if isinstance(counted, int) else counter.node(node))
    return found


def _still_valid(
    previous: SentPrompt, current: dict[int, MessageNode], now: ChannelNow, counter: TokenCounter
) -> tuple[list[MessageNode], list[int], bool]:
    """The previous request with deleted messages taken out (and a summary standing for one:
    a plain cut then, the next cut writes a new summary) and edited ones sent as they are now
    (left out when not selected now); whether anything changed (the prefix broke)."""
    kept: list[MessageNode] = []
    tokens: list[int] = []
    broken = False
    for node, counted in zip(previous.nodes, previous.tokens, strict=True):
        summary = summary_of(node)
        if summary is not None and summary.covers_any(now.gone_id):
            broken = True
            continue
        if node.message_id is not None:
            message_id = int(node.message_id)
            if now.gone(node):  # an answer's part, too
                broken = True
                continue
            text = now.content(message_id)
            digest = previous.digests.get(message_id)
            if digest is None:  # read back from the store: whether it was ever edited
                # (not the bot's own answers: posting one streams it in edits)
                changed = node.role != "assistant" and now.edited(message_id)
            else:
                changed = text is not None and content_digest(text) != digest
            if changed:
                broken = True
                if message_id not in current:
                    continue
                node = current[message_id]
                counted = counter.node(node)
        kept.append(node)
        tokens.append(counted)
    return kept, tokens, broken


def _new_part(
    previous: SentPrompt,
    fresh: PreparedPrompt,
    kept: list[MessageNode],
    counter: TokenCounter,
    now: ChannelNow,
    floor: int | None,
) -> tuple[list[MessageNode], list[int]]:
    """What the fresh request holds that the previous one and its answer do not: the
    conversation's new messages, the label and the other recent ones, the trigger last (none
    older than ``floor`` that the previous request does not hold, but the parent)."""
    have = {n.message_id for n in kept if n.message_id is not None}
    have |= {str(i) for i in (*previous.answer_ids, previous.trigger_id)}
    others = {str(m.id) for m in fresh.layout.others} if fresh.layout else set()
    nodes = _nodes(fresh)
    parent = reference_id(fresh.selection.trigger)
    conversation: list[MessageNode] = []
    recent: list[MessageNode] = []
    for node in nodes[1:-1]:
        if node.message_id is None or node.message_id in have or now.deleted(int(node.message_id)):
            continue
        if floor is not None and int(node.message_id) < floor and int(node.message_id) != parent:
            continue  # cut (and summarized, or not): it does not come back
        if int(node.message_id) < previous.trigger_id:  # joins after the answer: with its time
            node = time_stamped(node).model_copy(update={"metadata": _uncounted(node)})
        (recent if node.message_id in others else conversation).append(node)
    added = [*conversation, *([OTHERS_NODE, *recent] if recent else []), nodes[-1]]
    return added, _tokens_of(added, counter)


def _cut_floor(previous: SentPrompt) -> int | None:
    """The message before which what the previous request does not hold is not selected back
    (None: no cut since it was built afresh, and anything selected may join). Selected again,
    what a cut left out would refill the room at once: the next cut comes an answer or two
    later, and each cut throws away the server's cached prefix.

    With a summary in the previous request, its trigger: an older message it does not hold
    was cut and is in the summary (or was never part of the conversation), and sent again it
    would be there twice. After a plain cut, the trigger of the request that was cut
    (``cut_at``): what that cut dropped is older, and stays out until the conversation is
    built afresh or cut again; a message the conversation selects later that was said since
    still joins, as without a cut. Either way, the message the trigger replies to still joins."""
    if _summarized(previous):
        return previous.trigger_id
    return previous.cut_at


def _summarized(previous: SentPrompt) -> bool:
    return any(is_summary(node) for node in previous.nodes)


def _size(nodes: list[MessageNode], tokens: list[int], counter: TokenCounter) -> tuple[int, int]:
    """A request's conversation messages (the trigger not counted) and its tokens."""
    messages = sum(1 for node in nodes if node.message_id is not None) - 1
    return messages, counter.scale(REPLY_PRIMING) + sum(tokens)


def _outgrows(
    messages: int, total: int, continuity: Continuity, budget: Budget | None, share: float = 1.0
) -> bool:
    """Whether a request of ``messages`` and ``total`` tokens is larger than ``share`` of its
    room (of ``max_total`` and of the budget): the whole room, or what a cut leaves."""
    over_budget = budget is not None and total > share * budget.limit
    return over_budget or messages > share * continuity.max_total


def _uncounted(node: MessageNode) -> FrozenMap:
    """The node's metadata without its token count (its text changed: counted again)."""
    return FrozenMap({k: v for k, v in (node.metadata or {}).items() if k != "tokens"})


def _without_stray_label(nodes: list[MessageNode]) -> list[MessageNode]:
    """The label before the other recent messages, dropped when none of them is left after it."""
    for index, node in enumerate(nodes):
        if is_others_label(node):
            rest = nodes[index + 1 : -1]
            if not rest:
                return [*nodes[:index], *nodes[index + 1 :]]
    return nodes


async def remembered_prompt(
    fresh: PreparedPrompt,
    memory: PromptMemory,
    channel_id: int,
    *,
    continuity: Continuity,
    budget: Budget | None,
    counter: TokenCounter | None = None,
    now: ChannelNow | None = None,
    summaries: SummaryPolicy | None = None,
) -> tuple[PreparedPrompt, SentPrompt | None]:
    """The request for ``fresh``'s trigger given what ``memory`` holds of the channel, and the
    previous request it continues or cuts from (None: none found), for ``sent_prompt``.

    At a cut, given ``summaries``, the answer waits for the summary of what falls out (at most
    its ``timeout_seconds``; a failure leaves the plain cut, noted in ``summary_note``)."""
    previous = await memory.recall(channel_id, candidates(fresh))
    counter = counter or TokenCounter()
    now = (now or ChannelNow()).with_gone(previous.gone if previous is not None else frozenset())
    room = counter.scale(summaries.room) if summaries is not None and budget is not None else 0
    prepared, cut = _continued(previous, fresh, continuity, budget, counter, now, room)
    if not cut or summaries is None:
        return prepared, previous
    dropped = dropped_by(previous, prepared, now.gone_id)
    if not dropped:  # nothing new to summarize: what the summary so far says still holds
        if dropped.earlier is not None:
            prepared = with_summary(prepared, dropped.earlier, counter)
            prepared = replace(
                prepared, summary_note=("success", f"the {dropped.earlier.describe()} kept")
            )
        return prepared, previous
    summary, why = await write_summary(dropped, summaries)
    if summary is None:
        if dropped.earlier is not None:  # what it said still holds: only the new part is lost
            prepared = with_summary(prepared, dropped.earlier, counter)
            why = f"{why}; the {dropped.earlier.describe()} kept"
        prepared = replace(prepared, summary_note=("failure", why))
        return prepared, previous
    replaced = [summary_node(dropped.earlier)] if dropped.earlier is not None else []
    prepared = with_summary(prepared, summary, counter, [*replaced, *dropped.nodes])
    prepared = replace(
        prepared, summary_note=("success", f"{summary.describe()} written at the cut")
    )
    return prepared, previous
