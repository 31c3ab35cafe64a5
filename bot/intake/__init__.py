"""The intake: what becomes of a message that calls for an answer, until the answer starts.

What lives here: the trigger as one value, the message and why it is answered (``trigger``),
what decides whether an arriving message is one (``admission``), each trigger claimed once
against duplicate deliveries and restarts (``once``), the store asked a bounded time
only, and not while it stalls (``store_wait``), the bot's latest answers read back from
the store at start, for following (``recall``), a burst of messages getting one answer
(``burst``) and the line of triggers waiting for an answer, one answer at a time per channel
(``queue``).

May import: ``bot.discord``, ``bot.model``, ``bot.tools``, ``bot.storage``, ``bot.config``,
``bot.errors`` and ``conversation``. The client that feeds it lives above, in ``bot.serve``; the
answer it feeds, in ``bot.answering``.
"""
