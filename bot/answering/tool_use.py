"""Tools in an answer: whether this trigger gets them, and the model call that uses them.

Tools are offered when ``[tools] enabled`` is on, the toolbox has something to offer (with the
answer's own built-ins: ``catch_up``, ``bot.answering.catchup_tool``), and the trigger is in a
server's channel (in a DM only with ``in_dms``). A channel's ``[channels.tools]`` decides
through the same ``ToolSettings``. The streamed message names what runs
("reading wiki.example.org …") until the model writes again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config.tool_settings import ToolSettings
from bot.model.call import CacheHints, DeltaCallback
from bot.model.client import ModelClient
from bot.model.tool_loop import LoopResult, complete_with_tools
from bot.tools.call_memory import CallMemory
from bot.tools.page_hosts import hosts_in_prompt
from bot.tools.spec import AnswerTool, ToolSpec
from bot.tools.tool_images import ImageShelf
from bot.tools.toolbox import Toolbox
from conversation.prompt import Budget, PreparedPrompt, text_tokens

CHARS_PER_TOKEN = 3
"""Characters of a tool result per token of the budget: on the low side (escaped markup, URLs
and non-English text take more tokens per character than prose), so the room is not overrun."""


TOOL_SHARE = 4
"""At most this fraction (1/4) of the prompt's room is kept aside for tool results."""


def tools_tokens(specs: Sequence[ToolSpec]) -> int:
    """The tool definitions every request carries, as the budget's conservative (uncalibrated)
    estimate: counted in the prompt's room, and beside the prompt when calibrating (the server's
    ``prompt_tokens`` include them)."""
    if not specs:
        return 0
    return text_tokens(json.dumps([spec.openai() for spec in specs], ensure_ascii=False))


def tool_reserve(budget: Budget, settings: ToolSettings, definitions: int = 0) -> int:
    """Tokens kept out of the prompt when tools are offered: the tool definitions
    (``definitions`` tokens), and two full results' worth, at most a quarter of the prompt's
    room. The results share what the prompt then leaves (``room_tokens``); the context gives way
    a little so that a full window still leaves the model room to read what it asked for. At
    most half the room in all."""
    results = min(2 * settings.max_result_chars // CHARS_PER_TOKEN, budget.limit // TOOL_SHARE)
    return min(results + definitions, budget.limit // 2)


@dataclass(frozen=True)
class Offer:
    """The tools one answer offers, taken once when its prompt is budgeted: the room kept for
    them, a prompt rebuilt after "context too long", and every request of the answer use the
    same list, even when an MCP server comes up or goes down meanwhile (a call to a tool of a
    server now down is answered "try again later"). A call already run for a prompt refused as
    too long is not run again for the rebuilt one (``memory``: ``bot.tools.call_memory``)."""

    toolbox: Toolbox  # the shared toolbox
    settings: ToolSettings  # the channel's [tools]
    specs: tuple[ToolSpec, ...]
    tokens: int  # the definitions, as ``tools_tokens`` counts them
    memory: CallMemory = field(default_factory=CallMemory)  # what its calls returned
    images: ImageShelf | None = None  # the images its tools returned, to attach
    own: tuple[AnswerTool, ...] = ()  # its own built-ins (catch_up)

    def with_room(self, budget: Budget) -> Budget:
        """``budget`` less the tools' room (definitions and results)."""
        reserve = budget.reserve + tool_reserve(budget, self.settings, self.tokens)
        return budget.model_copy(update={"reserve": reserve})

    def for_prompt(self, prepared: PreparedPrompt) -> Toolbox:
        """The toolbox the tool loop runs with for this prompt, offering exactly ``specs``;
        read_page may read the hosts its members named (``bot.tools.page_hosts``)."""
        return self.toolbox.for_prompt(
            hosts_in_prompt(prepared), settings=self.settings, specs=self.specs,
            memory=self.memory, images=self.images, own=self.own,
        )  # fmt: skip


def offer_for(
    toolbox: Toolbox | None, settings: ToolSettings, trigger: Any, own: Sequence[AnswerTool] = ()
) -> Offer | None:
    """The tools offered when this trigger may use tools, else None (the plain model call);
    ``own``: the answer's own built-ins, offered with the rest."""
    if toolbox is None or not settings.enabled:
        return None
    if getattr(trigger, "guild", None) is None and not settings.in_dms:
        return None
    specs = tuple(toolbox.for_prompt((), settings=settings, own=own).specs())
    if not specs:
        return None
    images = ImageShelf(settings.max_images_per_answer, settings.max_image_bytes)
    return Offer(toolbox, settings, specs, tools_tokens(specs), images=images, own=tuple(own))


async def complete_using(
    model: ModelClient,
    prepared: PreparedPrompt,
    offer: Offer,
    *,
    on_delta: DeltaCallback,
    on_status: Callable[[str], Awaitable[None]],
    room_tokens: int | None = None,
    cache: CacheHints | None = None,
) -> LoopResult:
    """The tool loop on ``prepared``'s request; ``room_tokens``: what the prompt's budget
    leaves for the tool turns."""
    if room_tokens is not None:  # the definitions take their share of the window first
        room_tokens -= offer.tokens
    room = None if room_tokens is None else max(room_tokens, 0) * CHARS_PER_TOKEN
    settings = offer.settings
    return await complete_with_tools(
        model,
        prepared.request_messages,
        offer.for_prompt(prepared),
        max_steps=settings.max_steps,
        on_delta=on_delta,
        on_status=on_status,
        room_chars=room,
        cache=cache,
        max_calls=settings.max_calls_per_round,
        max_total=settings.max_calls_per_answer,
    )
