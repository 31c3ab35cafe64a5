"""threadwise's Discord bot, in packages by job; each imports only from the layers below it.

From the bottom up (``tests/test_import_graph.py`` holds this order and fails on any import that
goes up, or on any circle):

* ``bot.errors``: the operator errors every layer raises (a leaf).
* ``bot.config``: ``config.toml`` read, checked, reported and watched.
* ``bot.storage``: the interactions kept on SQLite or PostgreSQL.
* ``bot.tools``: what the model may call: MCP servers and the built-in ``read_page``.
* ``bot.model``: the chat model client and its providers.
* ``bot.discord``: Discord's rules and surface: triggers, permissions, visibility, posting.
* ``bot.intake``: a message that calls for an answer, as a value, until the answer starts:
  whether it is one, the burst window, the line, each trigger answered once.
* ``bot.answering``: one answer, trigger to record: context, model, reply, store.
* ``bot.studio``: the local tuning and browsing page.
* ``bot.serve``: the running process: the client, start-up, reload, shards, health, shutdown.
* ``bot.demo``: ``python -m bot demo``, and the local stand-in Discord and model it (and the
  tests) run the bot against.
* ``bot.cli``: the command line, one module per command family.

``conversation/`` (the context builder and the message graph) sits below all of them and never
imports ``bot``.
"""
