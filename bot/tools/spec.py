"""What every tool speaks, whoever runs it: its spec as offered to the model, a call the model
asked for, and the outcome the model reads back. A leaf: the model client and the toolbox both
import it, not each other."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolSpec(_Frozen):
    """A tool as the model is told about it (the same for OpenAI and Anthropic)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments object.",
    )
    source: str = Field("built-in", description="Which MCP server offers it, or built-in.")

    def openai(self) -> dict[str, Any]:
        """OpenAI's ``tools`` entry; also how the store and the export keep the tools."""
        function = {"name": self.name, "description": self.description}
        return {"type": "function", "function": function | {"parameters": self.parameters}}


class ToolCallRequest(_Frozen):
    """One call the model asked for; ``arguments`` is the JSON text exactly as it came."""

    id: str
    name: str
    arguments: str = "{}"


ToolStatus = Literal["ok", "error", "timeout", "unknown", "not_run"]
"""``not_run``: past the limits, or cut at the token limit; the model reads why, as an error."""


class ToolOutcome(_Frozen):
    """What became of one call: ``content`` is what the model reads (escaped, defused, cut)."""

    call_id: str
    name: str
    content: str
    status: ToolStatus
    seconds: float = 0.0
    original_chars: int = 0
    detail: str = Field("", description="For the work log: the error or what was returned.")
    reused: bool = Field(
        False, description="Not run: the result of the same call for a prompt refused as too long."
    )

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def parse_arguments(text: str) -> dict[str, Any] | None:
    """A call's arguments as the JSON object they must be, or None: not JSON (a stream cut at
    the token limit), not an object (``[1, 2]``), or nested past what the parser takes."""
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class AnswerTool:
    """A built-in the bot runs itself, bound to one answer (``catch_up`` reads the trigger's
    channel for its author): offered after ``read_page``, before the MCP servers' tools.
    ``run`` returns the result's text, or raises ``bot.tools.read_page.ToolFailed`` with what
    the model is told instead."""

    spec: ToolSpec
    run: Callable[[dict[str, Any]], Awaitable[str]]
    status: str  # what the streamed message says while it runs ("catching up on the channel")
    timeout_seconds: float | None = None  # None: [tools] call_timeout_seconds
