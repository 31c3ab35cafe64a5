"""The chat model client: one retry loop (``client``) over a provider's SDK.

What lives here: the client and its retries (``client``), one call's record (``call``), the
providers for OpenAI-compatible servers and Anthropic (``provider`` and one module each), the
errors a server's answer maps to (``errors``) and the recognising of "context too long"
(``context_overflow``). Its settings are ``bot.config.model_settings``.

May import: ``bot.config``, ``bot.errors`` and ``conversation``; never Discord or the store.
"""
