"""Timestamps as fixed-width UTC ISO text, so that string order is time order in SQL."""

from __future__ import annotations

from datetime import UTC, datetime


def to_db(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: storage needs timezone-aware times")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def from_db(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def now_db() -> str:
    return to_db(datetime.now(UTC))
