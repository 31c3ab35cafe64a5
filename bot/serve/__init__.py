"""The running bot: the nextcord client and everything about the process that serves it.

What lives here: the client and its gateway events (``client``), the slash commands
(``commands``; ``/model``'s rules in ``model_command``), ``run`` with its exit codes, the shards
of a big bot (``sharding``), the start-up summary and model probe (``startup``), hot reload
handed to each part of the client (``live_config``), the MCP servers and ``read_page`` for the
whole run (``tools``), the metrics endpoint (``metrics_server``), the container's heartbeat file
(``health``) and SIGTERM handled like Ctrl-C (``shutdown``).

May import every layer below it (``bot.answering``, ``bot.intake``, ``bot.discord``,
``bot.model``, ``bot.tools``, ``bot.storage``, ``bot.studio``, ``bot.config``, ``bot.errors``)
and ``conversation``; only the command line imports it.
"""
