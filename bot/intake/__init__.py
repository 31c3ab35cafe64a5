"""The intake: what becomes of a message that calls for an answer, until the answer starts.

What lives here: the line of triggers waiting for an answer, one answer at a time per channel
(``queue``), and each trigger claimed once against duplicate deliveries and restarts
(``once``).

May import: ``bot.discord``, ``bot.model``, ``bot.tools``, ``bot.storage``, ``bot.config``,
``bot.errors`` and ``conversation``. The client that feeds it lives above, in ``bot.serve``.
"""
