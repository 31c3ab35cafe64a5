"""The message graph: immutable nodes in a DAG, edits as versions, what the model saw kept.

Modules: ``node`` (one message, frozen when created), ``message_graph`` (the graph, its
snapshots and the list-of-dicts view the answering code edits), ``formats`` (lossless
translation of node sequences to and from the OpenAI and Anthropic formats).

May import ``conversation.common`` only. A change goes here when what a message carries, or how
an edit or a squash is kept, changes.
"""
