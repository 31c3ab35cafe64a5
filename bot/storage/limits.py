"""What the store remembers per model for the token budget: calibration and learned window.

Kept apart from the interaction tables' code: it is a tiny key-value record the answer flow
reads at start-up and rewrites after answers, nothing else touches it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.storage.dialect import Db
from bot.storage.timefmt import now_db


class ModelLimits(BaseModel):
    """Real over estimated prompt tokens (``ratio``, from ``samples`` answers) and the context
    window a server reported for this model, when it reported one."""

    model_config = ConfigDict(frozen=True)

    model: str
    ratio: float = Field(1.0, gt=0)
    samples: int = Field(0, ge=0)
    window: int | None = Field(None, gt=0)
    window_for: int | None = Field(
        None, gt=0, description="The configured context_tokens when the window was learned."
    )


def load(conn: Db) -> dict[str, ModelLimits]:
    return {
        model: ModelLimits(
            model=model, ratio=ratio, samples=samples, window=window, window_for=window_for
        )
        for model, ratio, samples, window, window_for in conn.execute(
            # "window" is quoted: PostgreSQL reserves the word.
            'SELECT model, ratio, samples, "window", window_for FROM model_limits'
        )
    }


def save(conn: Db, limits: ModelLimits) -> None:
    conn.execute(
        'INSERT INTO model_limits (model, ratio, samples, "window", window_for, updated_at) '
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (model) DO UPDATE SET ratio = excluded.ratio, "
        'samples = excluded.samples, "window" = excluded."window", '
        "window_for = excluded.window_for, updated_at = excluded.updated_at",
        (limits.model, limits.ratio, limits.samples, limits.window, limits.window_for, now_db()),
    )
