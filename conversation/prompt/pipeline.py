"""From a trigger to the exact messages the model is sent: build, materialize, fit, assemble.

The order of the prompt is chosen for servers' prompt caches (llama.cpp, vLLM and Ollama reuse the
longest prefix they already read; OpenAI and Anthropic bill it cheaper): nothing that changes per
request comes early. The system prompt, then the trigger's conversation, then the channel's other
recent messages after a label, then the trigger (``conversation.prompt.layout``). The current time,
when the persona does not place ``{now}`` itself, is the trigger's own time to the minute, written
after the trigger's text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import FrozenMap, MessageNode
from conversation.prompt.budget import Budget, FittedPrompt, fit_prompt
from conversation.prompt.layout import OTHERS_LABEL, Layout, lay_out
from conversation.prompt.materialize import MaterializedContext, Materializer, render_system_prompt
from conversation.prompt.names import neutral_name
from conversation.prompt.tokens import TokenCounter, node_tokens
from conversation.selection.builder import ContextBuilder
from conversation.selection.result import ContextSelection
from conversation.sources.reader import ChannelReader
from conversation.sources.source import MessageLike

NOW_PLACEHOLDER = "{now}"


@dataclass(frozen=True)
class PreparedPrompt:
    """The request for one trigger, frozen once built: a follow-up's request, a refit or a
    summary spliced in is a new one (``dataclasses.replace``), so what the memory remembers
    of a request is what was sent."""

    selection: ContextSelection
    materialized: MaterializedContext
    graph: MessageGraph
    system: MessageNode
    fitted: FittedPrompt | None = None  # None when no budget was given
    layout: Layout | None = None  # None: time order (a graph built elsewhere)
    # A follow-up's request that starts with the previous one (``conversation.memory``): how
    # many of its messages (the previous request and the answer) are sent again unchanged, and
    # the conversation's cache key, kept from its first request.
    reused: int | None = None
    key: str | None = None
    continues: int | None = None  # the trigger of the request this one starts with
    # The trigger of the request at which its conversation was last cut: an older message this
    # one does not hold was left out there, and its follow-ups do not select it back (None: not
    # cut since its conversation's request was last built afresh).
    cut_at: int | None = None
    # At a cut: the summary written of what fell out, or why none was, for the work log
    # (``conversation.memory.summary``): (status, detail).
    summary_note: tuple[Literal["success", "failure"], str] | None = None

    @property
    def request_messages(self) -> list[dict]:
        return self.graph.to_openai()

    @property
    def stable_end(self) -> int:
        """How many request messages make the part a follow-up in the same conversation sends
        again unchanged: the previous request and its answer when this one continues it, else
        the system prompt and the conversation, up to the label of the other messages (or the
        trigger)."""
        if self.reused is not None:
            return self.reused
        nodes = self.graph.snapshot().nodes()
        for index, node in enumerate(nodes):
            if is_others_label(node):
                return index
        return max(len(nodes) - 1, 0)

    @property
    def cache_key(self) -> str:
        """One key per conversation (its oldest message), the same for its follow-ups, so a
        server that routes by key sends them to the cache that holds their start."""
        if self.key is not None:
            return self.key
        return conversation_key(self.layout.root if self.layout else self.selection.trigger.id)


def conversation_key(root: int) -> str:
    """The prompt-cache key of the conversation whose oldest message is ``root``: one place, so
    a request read back from the store keys as it did when it was sent."""
    return f"conversation-{root}"


@dataclass
class Persona:
    """Who the bot is and where it speaks, for the system prompt."""

    template: str
    bot_name: str
    server: str
    channel: str


async def prepare_prompt(
    trigger: MessageLike,
    reader: ChannelReader,
    builder: ContextBuilder,
    materializer: Materializer,
    persona: Persona,
    *,
    now: datetime | None = None,
    budget: Budget | None = None,
    counter: TokenCounter | None = None,
    narrow: Callable[[ContextSelection], ContextSelection] | None = None,
) -> PreparedPrompt:
    """Build, materialize and, given a ``budget``, cut the context to fit it.

    ``now`` only matters to a persona that uses ``{now}``; otherwise the trigger's own time is
    written after it, so the prompt of a message is the same whenever it is built. ``narrow``
    takes messages out of the selection before it is materialized (the ``/fresh`` seal).
    """
    selection = await builder.build(trigger, reader)
    if narrow is not None:
        selection = narrow(selection)
    return await prompt_for(
        selection,
        materializer,
        persona,
        threshold=selection.threshold
        if selection.threshold is not None
        else conversation_threshold(builder),
        now=now,
        budget=budget,
        counter=counter,
    )


async def prompt_for(
    selection: ContextSelection,
    materializer: Materializer,
    persona: Persona,
    *,
    threshold: float | None,
    now: datetime | None = None,
    budget: Budget | None = None,
    counter: TokenCounter | None = None,
    time_order: bool = False,
) -> PreparedPrompt:
    """The prompt of a selection already built (``threshold``: see ``lay_out``).

    ``time_order`` lays every message out in time order, as the bot did before the layout
    (``bench.prefix`` compares the two).
    """
    layout = None if time_order else lay_out(selection, threshold)
    materialized = await materializer.materialize(layout.selection if layout else selection)
    system = MessageNode(
        role="system",
        content=render_system_prompt(
            persona.template,
            bot_name=persona.bot_name,
            server=persona.server,
            channel=persona.channel,
            now=now or datetime.now(UTC),
        ),
    )
    if NOW_PLACEHOLDER not in persona.template:
        materialized.nodes = _with_time(materialized.nodes)
    prepared = PreparedPrompt(
        selection=selection,
        materialized=materialized,
        graph=MessageGraph(),
        system=system,
        layout=layout,
    )
    return refit_prompt(prepared, budget, counter)


def refit_prompt(
    prepared: PreparedPrompt, budget: Budget | None, counter: TokenCounter | None = None
) -> PreparedPrompt:
    """The same context assembled again under another budget (after a "context too long"
    answer, say): nothing is fetched again, the cuts start over from the whole context."""
    materialized = prepared.materialized
    system = prepared.system
    fitted = None
    others = {str(m.id) for m in prepared.layout.others} if prepared.layout else set()
    nodes: list[MessageNode] = _labelled([system, *materialized.nodes], others)
    if budget is not None:
        counter = counter or TokenCounter()
        label = counter.scale(node_tokens(OTHERS_NODE)) if others else 0

        def fit(within: Budget) -> FittedPrompt:
            return fit_prompt(
                system,
                materialized.nodes,
                within,
                counter,
                articles=materialized.articles,
                attachments=materialized.attachment_texts,
            )

        # The label is needed only while one of the other recent messages is still in; room is
        # kept for it only when it is needed and would not fit otherwise.
        fitted = _with_label(fit(budget), others, label, budget)
        if fitted.total > budget.limit and _has_label(fitted):
            fitted = _with_label(fit(_less(budget, label)), others, label, budget)
        nodes = fitted.nodes
    graph = MessageGraph()
    graph.extend(nodes)
    return PreparedPrompt(
        selection=prepared.selection,
        materialized=materialized,
        graph=graph,
        system=system,
        fitted=fitted,
        layout=prepared.layout,
    )


OTHERS_NODE = MessageNode(role="user", content=OTHERS_LABEL, metadata={"layout": "others"})


def is_others_label(node: MessageNode) -> bool:
    """Whether ``node`` is the label before the channel's other recent messages."""
    return (
        node.message_id is None
        and bool(node.metadata)
        and node.metadata.get("layout") == ("others")
    )


def _labelled(nodes: list[MessageNode], others: set[str]) -> list[MessageNode]:
    """The label before the first of the other recent messages still in (none: no label)."""
    for index, node in enumerate(nodes):
        if node.message_id in others:
            return [*nodes[:index], OTHERS_NODE, *nodes[index:]]
    return nodes


def _has_label(fitted: FittedPrompt) -> bool:
    return any(is_others_label(node) for node in fitted.nodes)


def _less(budget: Budget, tokens: int) -> Budget:
    """The budget with ``tokens`` more kept aside (for the label), while any room is left."""
    reserve = min(budget.reserve + tokens, budget.window - 1)
    return budget.model_copy(update={"reserve": reserve})


def _with_label(fitted: FittedPrompt, others: set[str], label: int, budget: Budget) -> FittedPrompt:
    """The fitted prompt with the label in, counted, against the budget really in force."""
    nodes = _labelled(fitted.nodes, others)
    tokens = list(fitted.tokens)
    total = fitted.total
    if len(nodes) > len(fitted.nodes):
        index = next(i for i, node in enumerate(nodes) if is_others_label(node))
        nodes[index] = OTHERS_NODE.model_copy(
            update={"metadata": FrozenMap({**OTHERS_NODE.metadata, "tokens": label})}
        )
        tokens.insert(index, label)
        total += label
    return FittedPrompt(nodes=nodes, tokens=tokens, total=total, budget=budget, cuts=fitted.cuts)


def conversation_threshold(builder: ContextBuilder) -> float | None:
    """The learned score's threshold in force (None when the rules decide)."""
    return builder.conversation_threshold


def _with_time(nodes: list[MessageNode]) -> list[MessageNode]:
    """The trigger (last) with its time to the minute after its text: the model knows "now"
    without the prompt's beginning changing from one answer to the next."""
    if not nodes or nodes[-1].created_at is None:
        return nodes
    return [*nodes[:-1], time_stamped(nodes[-1])]


def time_stamped(node: MessageNode) -> MessageNode:
    """``node`` with its time to the minute after its text (unchanged without a time): the
    trigger's, and a message joining a follow-up's request after the answer it is older than."""
    if node.created_at is None:
        return node
    when = node.created_at.astimezone(UTC).strftime("%A %Y-%m-%d %H:%M UTC")
    return node.model_copy(update={"content": f"{node.content}\n[sent {when}]"})


def persona_for(template: str, bot_name: str, channel: object) -> Persona:
    """Server and channel names as a person would say them (DMs have no server)."""
    guild = getattr(channel, "guild", None)
    name = getattr(channel, "name", None)
    return Persona(
        template=template,
        bot_name=neutral_name(bot_name, fallback="assistant"),
        server=neutral_name(guild.name) if guild is not None else "direct messages",
        channel=neutral_name(name) if name else "a direct message",
    )
