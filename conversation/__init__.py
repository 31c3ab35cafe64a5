"""The conversation package: which messages a reply is about, and the graph of what was said.

Never imports ``bot/``: the builder, the sources, materialization and the message graph work on
their own, for the bot, the replay tools and the tests alike.

Packages by job, from the bottom up; each imports only its own and the ones before it
(``tests/test_import_graph.py`` holds this order and fails on an import that goes up, or a
circle):

* ``conversation.common``: the settings, text made encodable, the fenced private APIs.
* ``conversation.sources``: the channel as the builder reads it: live, cached, a page at a time.
* ``conversation.articles``: linked articles fetched safely, extracted and rendered as XML.
* ``conversation.graph``: the immutable message graph and its nodes, and the providers' formats.
* ``conversation.selection``: the builder (the learned score by default, the tik/tok rules as
  the other mode); following.
* ``conversation.prompt``: the selected messages materialized, laid out and fitted to the window.
* ``conversation.memory``: what each request sent, so a follow-up's request starts with it.
* ``conversation.replay``: channel logs replayed as real messages, the gold labels' score, and
  the follow decisions over a log.

The fitting of the score and the quality studies live apart, in ``lab/`` at the top level.
"""

from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import MessageFormatError, MessageNode, ToolCall
from conversation.graph.views import ImmutableSnapshotError, Snapshot, StaleViewError

__all__ = [
    "ImmutableSnapshotError",
    "MessageFormatError",
    "MessageGraph",
    "MessageNode",
    "Snapshot",
    "StaleViewError",
    "ToolCall",
]
