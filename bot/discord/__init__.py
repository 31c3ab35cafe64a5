"""Discord's rules and surface, without the answer itself: what only Discord decides.

What lives here: when a message is a trigger and who may make the bot answer (``triggers``,
``dm_roles``), who may see what (``visibility``, ``message_links``), what the bot's messages
may ping (``mentions``), how an answer is posted and split (``posting``, ``chunking``,
``limits``), the status reaction on the trigger while it is prepared (``status_reaction``),
conversations moved into threads (``conversation_threads``),
where a channel is for its ``[[channels]]`` table (``places``) and every private nextcord API
we rely on (``compat``).

Not here, since neither is Discord: whether a message that calls no one follows the bot's
conversation (the ``Follower``, ``conversation.selection``, which walks conversation's cache and
asks its score) and where an exported log's channel was (``bot.config.export_settings``).

May import: ``bot.config``, ``bot.errors`` and ``conversation``; never the model, the store or
the answering layer, so each rule here can be read and tested with Discord alone.
"""
