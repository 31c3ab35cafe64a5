"""Discord's rules and surface, without the answer itself.

What lives here: when a message is a trigger and who may make the bot answer (``triggers``,
``dm_roles``), who may see what (``visibility``, ``message_links``), what the bot's messages
may ping (``mentions``), how an answer is posted and split (``posting``, ``chunking``,
``limits``), where a channel is for its ``[[channels]]`` table (``places``) and every private
nextcord API we rely on (``compat``).

May import: ``bot.config``, ``bot.errors`` and ``conversation``; never the model, the store or
the answering layer, so each rule here can be read and tested with Discord alone.
"""
