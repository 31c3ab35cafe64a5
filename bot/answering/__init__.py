"""One answer, from trigger to record: context, prompt budget, model, reply, stored interaction.

What lives here: the answer itself, step by step (``answerer``), what it came to, as data
(``result``), asking the model with refits after "context too long" (``asking``), each
channel's settings made into working parts, model clients per endpoint included
(``channels``), what each answer sent, for its follow-ups, from memory or the store
(``prompt_memory``) and, in a thread the bot opened, from the channel request it came from
(``thread_memory``), the people forget-user removed, polled from the store so that no
answer sends or remembers them again (``forgotten``), each channel's latest ``/fresh`` seal
as the store recorded it (``seals``), who writes the summary of what a cut leaves out
(``summaries``), the token budget learned per model (``prompt_budget``), tools in
an answer and their stored rounds (``tool_use``, ``tool_record``), the stored record of each
answer (``recording``), written after the channel's turn, in line and retried
(``record_line``), the Prometheus counts of answers (``metrics``), ``/catchup``'s summaries of
the conversations an asker missed, with jump links (``catchup``), the same catch-up as the
model's ``catch_up`` tool for the trigger's author (``catchup_tool``) and the texts the bot
posts about itself (``notices``).

May import: ``bot.intake``, ``bot.discord``, ``bot.model``, ``bot.tools``, ``bot.storage``,
``bot.config``, ``bot.errors`` and ``conversation``. The client that feeds it lives above, in
``bot.serve``.
"""
