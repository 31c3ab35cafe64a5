"""Every line the bot posts about itself rather than as an answer, gathered in one place.

The context must not feed these back to the model as the assistant's words (see
``conversation.prompt.notices``); new notices are picked up here where they are defined: every model
error's ``user_message``, the posting notes, the answering lines and the channel-reading lines.
"""

from __future__ import annotations

from bot.answering.result import STOPPING_LINE, UNEXPECTED_LINE
from bot.discord.posting import CUT_NOTE, EMPTY_ANSWER
from bot.model.errors import OVERLOADED_MESSAGE, ModelError
from conversation.sources import DISCORD_TROUBLE, HISTORY_UNREADABLE


def bot_notices() -> tuple[str, ...]:
    """The texts of the bot's notices, sorted so that equal sets give equal options."""
    texts = {
        STOPPING_LINE,
        UNEXPECTED_LINE,
        OVERLOADED_MESSAGE,
        CUT_NOTE,
        EMPTY_ANSWER,
        HISTORY_UNREADABLE,
        DISCORD_TROUBLE,
    }
    texts.update(error.user_message for error in _error_classes(ModelError))
    return tuple(sorted(texts))


def _error_classes(root: type[ModelError]) -> list[type[ModelError]]:
    found = [root]
    for sub in root.__subclasses__():
        found.extend(_error_classes(sub))
    return found
