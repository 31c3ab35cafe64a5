"""Discord's fixed limits the bot must fit in, each said once."""

from __future__ import annotations

DISCORD_MESSAGE_LIMIT = 2000
"""Characters in one message's content (answers are split to fit; ``/context`` is cut to fit)."""
