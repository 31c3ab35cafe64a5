"""The model client's public names, where callers have always imported them from."""

from bot.model.client import Attempt, Completion, DeltaCallback, ModelClient, Usage
from bot.model.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelContextTooLongError,
    ModelError,
    ModelNotFoundError,
    ModelPartialError,
    ModelProtocolError,
    ModelRateLimitedError,
    ModelRejectedError,
    ModelServerError,
    ModelStalledError,
    ModelTimeoutError,
)

__all__ = [
    "Attempt",
    "Completion",
    "DeltaCallback",
    "ModelAuthError",
    "ModelClient",
    "ModelConnectionError",
    "ModelContextTooLongError",
    "ModelError",
    "ModelNotFoundError",
    "ModelPartialError",
    "ModelProtocolError",
    "ModelRateLimitedError",
    "ModelRejectedError",
    "ModelServerError",
    "ModelStalledError",
    "ModelTimeoutError",
    "Usage",
]
