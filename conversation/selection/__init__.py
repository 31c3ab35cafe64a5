"""Which earlier messages a trigger is about, and whether a message continues the bot's talk.

Modules: ``builder`` (the tik/tok walk: reply references followed one level a step, history explored
under time sealing, ``min_linear`` and ``max_total`` kept), ``exploration`` (the state of a build by
the participation rules), ``scoring`` (the candidates of a scored build and the reasons told from
their scores), ``walk`` (how far back a build reads: a second history page only when the
conversation reaches the first one's edge), ``result`` (what the builder returns: the selected
messages and why each is there).

The learned score: ``relevance`` (``RelevanceModel``: which candidates enter and which the trigger
likely answers), ``clues`` (what the score reads of a message), ``features`` (what it weighs, and
the words of an explanation), ``reach`` (how far a candidate reaches into the conversation by its
links), ``stages`` (the fitted logistic and tree models, evaluated in pure Python), ``weights``
(``relevance_weights.json`` read and checked).

Links between messages: ``addressing`` (names written at the start of a message read as
addresses), ``message_links`` (a pasted Discord message link joins the context like a reply).
Following: ``follow_model`` (the fitted decision: whether a message that calls no one continues
the bot's conversation, from ``follow_weights.json``), ``follower`` (the ``Follower``: that
decision in a live channel, fed from its cache, under the follow settings).
Starting over: ``seal`` (the bot's ``/fresh`` message: nothing before it is read).

May import ``conversation.common`` and ``conversation.sources``. A change goes here when the
context should hold other messages; the weights files are written by ``lab/`` (see its README).
"""
