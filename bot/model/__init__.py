"""The chat model client: one retry loop (``client``) over a provider's SDK."""
