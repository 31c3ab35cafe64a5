"""From a trigger to the exact messages the model is sent: build, materialize, fit, assemble.

The order of the prompt is chosen for servers' prompt caches (llama.cpp, vLLM and Ollama reuse
the longest prefix they already read; OpenAI and Anthropic bill it cheaper): nothing that
changes per request comes early. The current time, when the persona does not place ``{now}``
itself, is the trigger's own time to the minute, written after the trigger's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from conversation.budget import Budget, FittedPrompt, fit_prompt
from conversation.builder import ContextBuilder
from conversation.graph import MessageGraph
from conversation.materialize import MaterializedContext, Materializer, render_system_prompt
from conversation.names import neutral_name
from conversation.node import MessageNode
from conversation.reader import ChannelReader
from conversation.selection import ContextSelection
from conversation.source import MessageLike
from conversation.tokens import TokenCounter

NOW_PLACEHOLDER = "{now}"


@dataclass
class PreparedPrompt:
    selection: ContextSelection
    materialized: MaterializedContext
    graph: MessageGraph
    system: MessageNode
    fitted: FittedPrompt | None = None  # None when no budget was given

    @property
    def request_messages(self) -> list[dict]:
        return self.graph.to_openai()


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
) -> PreparedPrompt:
    """Build, materialize and, given a ``budget``, cut the context to fit it.

    ``now`` only matters to a persona that uses ``{now}``; otherwise the trigger's own time is
    written after it, so the prompt of a message is the same whenever it is built.
    """
    selection = await builder.build(trigger, reader)
    materialized = await materializer.materialize(selection)
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
        selection=selection, materialized=materialized, graph=MessageGraph(), system=system
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
    nodes: list[MessageNode] = [system, *materialized.nodes]
    if budget is not None:
        fitted = fit_prompt(
            system,
            materialized.nodes,
            budget,
            counter or TokenCounter(),
            articles=materialized.articles,
            attachments=materialized.attachment_texts,
        )
        nodes = fitted.nodes
    graph = MessageGraph()
    graph.extend(nodes)
    return PreparedPrompt(
        selection=prepared.selection,
        materialized=materialized,
        graph=graph,
        system=system,
        fitted=fitted,
    )


def _with_time(nodes: list[MessageNode]) -> list[MessageNode]:
    """The trigger (last) with its time to the minute after its text: the model knows "now"
    without the prompt's beginning changing from one answer to the next."""
    if not nodes or nodes[-1].created_at is None:
        return nodes
    trigger = nodes[-1]
    when = trigger.created_at.astimezone(UTC).strftime("%A %Y-%m-%d %H:%M UTC")
    stamped = trigger.model_copy(update={"content": f"{trigger.content}\n[sent {when}]"})
    return [*nodes[:-1], stamped]


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
