"""``python -m bot demo``: the whole bot at work with no token, no model server and no network.

Stand-ins for what the bot talks to, real servers on 127.0.0.1 speaking the real protocols (the
tests run the bot against the same ones): ``discord_server`` (a Discord the real nextcord client
logs in to: REST in ``discord_rest``, slash commands and interaction answers in
``discord_interactions``, the gateway in ``discord_gateway``, the guilds, channels and messages
in ``discord_state``, threads in ``discord_threads``, reactions in ``discord_reactions``,
attached files in ``discord_files``, what the bot may do in a channel in
``discord_permissions``) and ``openai_server`` (an OpenAI-compatible chat server).
``scene`` plays the demo's short scene through them with the real client; ``bot.cli.demo``
prints it.

Sits above ``bot.serve`` (it runs the real client, recorder and store) and below ``bot.cli``;
needs only the runtime dependencies, so it works right after ``pip install -e .``.
"""
