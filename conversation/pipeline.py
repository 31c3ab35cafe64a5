"""From a trigger to the exact messages the model is sent: build, materialize, assemble."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from conversation.builder import ContextBuilder
from conversation.graph import MessageGraph
from conversation.materialize import MaterializedContext, Materializer, render_system_prompt
from conversation.reader import ChannelReader
from conversation.selection import ContextSelection
from conversation.source import MessageLike


@dataclass
class PreparedPrompt:
    selection: ContextSelection
    materialized: MaterializedContext
    graph: MessageGraph

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
) -> PreparedPrompt:
    selection = await builder.build(trigger, reader)
    materialized = await materializer.materialize(selection)
    system = render_system_prompt(
        persona.template,
        bot_name=persona.bot_name,
        server=persona.server,
        channel=persona.channel,
        now=now or datetime.now(UTC),
    )
    graph = MessageGraph()
    graph.append({"role": "system", "content": system})
    graph.extend(materialized.nodes)
    return PreparedPrompt(selection=selection, materialized=materialized, graph=graph)


def persona_for(template: str, bot_name: str, channel: object) -> Persona:
    """Server and channel names as a person would say them (DMs have no server)."""
    guild = getattr(channel, "guild", None)
    name = getattr(channel, "name", None)
    return Persona(
        template=template,
        bot_name=bot_name,
        server=guild.name if guild is not None else "direct messages",
        channel=name if name else "a direct message",
    )
