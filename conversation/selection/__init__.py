"""Which earlier messages a trigger is about, and whether a message continues the bot's talk.

Modules: ``builder`` (the tik/tok walk: reply references followed one level a step, history
explored under time sealing, ``min_linear`` and ``max_total`` kept), ``result`` (what the
builder returns: the selected messages and why each is there), ``relevance`` (the learned score
every candidate is weighed by, read from ``relevance_weights.json``), ``reach`` (how far a
candidate reaches into the conversation by its links), ``addressing`` (names written at the start
of a message read as addresses), ``message_links`` (a pasted Discord message link joins the
context like a reply), ``follow`` (answering follow-ups without a mention, from
``follow_weights.json``).

May import ``conversation.common`` and ``conversation.sources``. A change goes here when the
context should hold other messages; the weights files are written by ``lab/`` (see its README).
"""
