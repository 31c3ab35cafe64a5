"""The message graph: immutable nodes in a DAG, edits as versions, what the model saw kept.

Modules: ``node`` (one message, frozen when created), ``state`` (the graph at one moment as
persistent vectors, and its pure transitions: edits, squashes, branches), ``views`` (what the
graph hands out: messages read like dicts, snapshots, training samples), ``message_graph`` (the
list-of-dicts facade the answering code edits, recording every change), ``formats`` (lossless
translation of node sequences to and from the OpenAI and Anthropic formats).

May import ``conversation.common`` only. A change goes here when what a message carries, or how
an edit or a squash is kept, changes.
"""

from conversation.graph.formats import from_openai, node_from_openai, to_anthropic_upto, to_openai
from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import MessageFormatError, MessageNode

__all__ = [
    "MessageFormatError",
    "MessageGraph",
    "MessageNode",
    "from_openai",
    "node_from_openai",
    "to_anthropic_upto",
    "to_openai",
]
