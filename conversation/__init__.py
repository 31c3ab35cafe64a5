"""The conversation package: which messages a reply is about, and the graph of what was said.

Never imports ``bot/``: the builder, the sources, materialization and the message graph work on
their own, for the bot, the replay tools and the tests alike.
"""

from conversation.graph import ImmutableSnapshotError, MessageGraph, Snapshot, StaleViewError
from conversation.node import MessageFormatError, MessageNode, ToolCall

__all__ = [
    "ImmutableSnapshotError",
    "MessageFormatError",
    "MessageGraph",
    "MessageNode",
    "Snapshot",
    "StaleViewError",
    "ToolCall",
]
