"""The chat model client: one retry loop (``client``) over a provider's SDK.

What lives here: the client and its retries (``client``), one call's record (``call``), the
provider base that posts and reads (``provider``) with one module per API
(``openai_provider``, ``anthropic_provider``), the errors a server's answer maps to
(``errors``), the recognising of "context too long" (``context_overflow``), and tools: how each
API offers and reads them (``tool_wire``) and the loop of calls and results (``tool_loop``).
Its settings are ``bot.config.model_settings``.

May import: ``bot.tools`` (the tool specs), ``bot.config``, ``bot.errors`` and
``conversation``; never Discord or the store.
"""
