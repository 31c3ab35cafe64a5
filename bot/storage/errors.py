"""The one exception type storage raises for problems an operator or caller can act on."""

from __future__ import annotations


class StoreError(Exception):
    """A storage problem stated in one line (unknown id, newer schema, duplicate record...)."""
