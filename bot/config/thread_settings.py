"""The ``[threads]`` section: a conversation with the bot moved into a thread of its own.

Off by default: a thread changes where members talk, which is the server's call, channel by
channel (``[channels.threads]``). On, when the bot's conversation in a channel reaches
``after_answers`` of its answers, or a member asks ("move this to a thread"), the bot opens a
public thread from its answer and goes on there.
"""

from __future__ import annotations

from pydantic import Field

from conversation.common import StrictSection


class ThreadSettings(StrictSection):
    enabled: bool = Field(False, description="Move a long conversation into a thread.")
    after_answers: int = Field(
        6, ge=1, le=100, description="The bot's answers in a conversation before it moves."
    )
    on_request: bool = Field(
        True, description='A member asking ("move this to a thread") moves it too.'
    )
