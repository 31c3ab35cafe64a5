"""The one exception type storage raises (defined in the leaf :mod:`bot.errors`)."""

from __future__ import annotations

from bot.errors import StoreError

__all__ = ["StoreError"]
