"""What one answer came to, as data (``AnswerResult``): what its record (``recording``), the
metrics (``metrics``) and the demo read, kept apart from the answer's steps
(``answerer``) so that reading a result never imports them.

Each step hands over a value: the model's turns (``Asked``: the prompt last sent, every
attempt, the prompts refused as too long) and how the answer ended (``Ending``: its outcome,
its text, the error); ``AnswerResult`` puts them together with the trigger, the times and the
messages posted. Here too are the lines the bot posts when an answer fails on its side
(``notices`` gathers them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bot.answering.catchup_tool import CatchupRun
from bot.config.model_settings import ModelSettings
from bot.intake.trigger import Trigger
from bot.model.call import Completion
from bot.model.tool_loop import ToolProgress
from bot.tools.tool_images import ToolImage
from conversation.prompt import PreparedPrompt

Outcome = Literal["success", "failure", "partial"]
ABANDONED = "abandoned: the bot stopped before the answer was finished"
STOPPING_LINE = "I am being restarted and could not finish this answer; please ask again shortly."
UNEXPECTED_LINE = "Something went wrong on my side, sorry."


@dataclass(frozen=True)
class Asked:
    """What the model was asked and what it said, across attempts and refits."""

    # The prompt last sent (or made ready, when the answer failed before it was sent): the
    # record holds exactly the accepted prompt.
    prepared: PreparedPrompt | None = None
    completion: Completion | None = None  # None: no whole answer came
    request: dict[str, Any] | None = None  # the body of the last request, as sent
    attempts: list[Any] = field(default_factory=list)  # every one, refused prompts' included
    refits: list[str] = field(default_factory=list)  # prompts refused as too long, and why
    tool_use: ToolProgress | None = None  # the tool rounds, when tools were offered
    # The tool rounds of prompts refused as too long, by the prompt's number (1: the first
    # sent): their calls ran, so they are recorded.
    refused_tool_use: list[tuple[int, ToolProgress]] = field(default_factory=list)
    catch_ups: list[CatchupRun] = field(default_factory=list)  # its catch_up tool's calls


@dataclass(frozen=True)
class Ending:
    """How an answer ended: its outcome, its text as kept (whole, or as far as it came) and,
    when it failed, why."""

    outcome: Outcome
    answer: str
    error: str | None = None
    # The images from tools attached to the answer (``bot.tools.tool_images``): the record
    # keeps their references, the next request their descriptions.
    images: tuple[ToolImage, ...] = ()

    @property
    def abandoned(self) -> bool:
        """The bot stopped before the answer was finished."""
        return self.error == ABANDONED


@dataclass(frozen=True)
class AnswerResult:
    """Everything the interaction record needs about one answer."""

    trigger: Trigger
    started_at: datetime
    ended_at: datetime
    model_settings: ModelSettings  # the channel's [model], as it answered
    asked: Asked
    ending: Ending
    posted_ids: list[int]
    overhead_seconds: float | None = None  # trigger to model request, our own cost


Recorder = Callable[[AnswerResult], Awaitable[None]]
