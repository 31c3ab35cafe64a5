"""Discord ids and the times they encode, in one place for the cache, the slim messages and the
log replay alike.

Every Discord id (a snowflake) carries its creation time in milliseconds since Discord's epoch, so
a time can be turned into the smallest id minted at that moment and back. The cache answers "what
came before 14:02?" by id intervals this way, without a message to compare against.
"""

from __future__ import annotations

from datetime import UTC, datetime

DISCORD_EPOCH_MS = 1_420_070_400_000


def snowflake_time(snowflake: int | str) -> datetime:
    """The creation time Discord encodes in every snowflake."""
    return datetime.fromtimestamp(((int(snowflake) >> 22) + DISCORD_EPOCH_MS) / 1000, tz=UTC)


def time_snowflake(moment: datetime, *, sequence: int = 0) -> int:
    """The smallest snowflake of a moment (plus ``sequence``), as Discord would mint it."""
    millis = int(moment.timestamp() * 1000) - DISCORD_EPOCH_MS
    return (millis << 22) + sequence
