"""Anthropic's Messages API, natively, through the ``anthropic`` SDK.

The OpenAI-format messages are translated by the message graph (``to_anthropic``: the system
prompt apart, consecutive turns merged, images as image blocks). The ``name`` of each message
is left out first: the materializer already writes who speaks at the start of the text, and
``to_anthropic`` would repeat it as ``[name]`` (teaching the model to prefix its answers too).
Two prompt-cache breakpoints: the end of the system prompt, and the end of the part a
follow-up in the same conversation sends again unchanged (the conversation, before the channel's
other recent messages and the message answered: ``CacheHints.stable_end``; without hints, the
last turn). The next answer in the conversation reads that part from the cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
import httpx2

from bot.config.model_settings import ModelSettings
from bot.model.call import CacheHints, Call, Usage
from bot.model.errors import ModelProtocolError
from bot.model.provider import Provider, as_dict
from bot.model.tool_wire import (
    anthropic_safe,
    mark_anthropic_errors,
    read_anthropic_block,
    read_anthropic_delta,
)
from conversation.graph import from_openai, to_anthropic_upto

_BREAKPOINT = {"type": "ephemeral"}
# The API wants the conversation to open with a user turn; a context that starts with one of
# the bot's own answers gets this before it (the truth: what came before is not shown).
OPENING = "(earlier messages not shown)"


class AnthropicProvider(Provider):
    """Builds the Messages request and reads its events into the call."""

    sdk, path = anthropic, "/v1/messages"

    def __init__(self, settings: ModelSettings, http: httpx2.AsyncClient) -> None:
        super().__init__(settings)
        self.client = anthropic.AsyncAnthropic(
            api_key=self.key, base_url=settings.base_url, max_retries=0, http_client=http,
            open_telemetry=False,
        )  # fmt: skip
        # No key: send no Authorization (not an empty one, nor one the SDK finds elsewhere).
        self.headers = {} if self.key else {"Authorization": anthropic.omit}

    def build(
        self,
        messages: Sequence[Mapping[str, Any]],
        stream: bool,
        cache: CacheHints | None = None,
    ) -> dict[str, Any]:
        unnamed = [{k: v for k, v in m.items() if k != "name"} for m in anthropic_safe(messages)]
        stable = len(unnamed) if cache is None else cache.stable_end
        system, turns, end = _turns(unnamed, stable)
        settings = self.settings
        body: dict[str, Any] = {"model": settings.name, "max_tokens": settings.answer_reserve}
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": _BREAKPOINT}]
        blocks = [block for turn in turns for block in turn["content"]]
        if 0 < end <= len(blocks):
            blocks[end - 1]["cache_control"] = _BREAKPOINT
        mark_anthropic_errors(turns)
        body["messages"] = turns
        body |= {
            k: v
            for k in ("temperature", "top_p", "top_k")
            if (v := getattr(settings, k)) is not None
        }
        body |= {"stop_sequences": settings.stop} if settings.stop else {}
        return body | {"stream": stream, **settings.extra_body}

    async def whole(self, answer: dict[str, Any], call: Call) -> None:
        if not isinstance(answer.get("content"), list):
            raise ModelProtocolError(f"no message from {self.url}: {answer!r:.200}")
        call.model, call.finish_reason = answer.get("model"), answer.get("stop_reason")
        call.usage = _usage(answer.get("usage"), with_output=True)
        blocks = [as_dict(block) for block in answer["content"]]
        for index, block in enumerate(blocks):
            read_anthropic_block(index, block, call)
        call.reasoning += [b["thinking"] for b in blocks if isinstance(b.get("thinking"), str)]
        await call.deliver("".join(b["text"] for b in blocks if isinstance(b.get("text"), str)))

    async def event(self, event: dict[str, Any], call: Call) -> None:
        kind, delta = event.get("type"), as_dict(event.get("delta"))
        if kind == "message_start":
            message = as_dict(event.get("message"))
            call.model, call.usage = message.get("model"), _usage(message.get("usage"))
        elif kind == "content_block_delta" and delta.get("type") in ("text", "text_delta"):
            await call.deliver(delta.get("text", ""))
        elif kind == "content_block_delta" and delta.get("type") in ("thinking", "thinking_delta"):
            call.reasoning.append(delta.get("thinking", ""))
        elif kind == "content_block_start":
            read_anthropic_block(event.get("index"), as_dict(event.get("content_block")), call)
        elif kind == "content_block_delta":
            read_anthropic_delta(event.get("index"), delta, call)
        elif kind == "message_delta":
            call.finish_reason = delta.get("stop_reason") or "end_turn"
            output = as_dict(event.get("usage")).get("output_tokens")
            if call.usage is not None and isinstance(output, int):
                total = (call.usage.prompt_tokens or 0) + output
                update = {"completion_tokens": output, "total_tokens": total}
                call.usage = call.usage.model_copy(update=update)


def _turns(
    messages: Sequence[Mapping[str, Any]], stable_end: int | None
) -> tuple[str, list[dict[str, Any]], int]:
    """The system prompt, the turns, and how many content blocks ``messages[:stable_end]``
    make (None: all of them): the turns of a start of ``messages`` are a start of the turns of
    all of them (merging only appends), which is how a breakpoint finds its block, in the one
    translation of the request."""
    upto = slice(None, stable_end).indices(len(messages))[1]
    system, turns, end = to_anthropic_upto(from_openai(messages), upto)
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING}]})
        end += 1 if end else 0  # the start has the opening turn too
    return system, turns, end


def _usage(usage: object, with_output: bool = False) -> Usage | None:
    """Anthropic counts cached prompt tokens apart; ``prompt_tokens`` is the whole prompt."""
    if not isinstance(usage, dict):
        return None
    cached = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + cached + written
    output = usage.get("output_tokens") if with_output else None
    total = None if output is None else prompt + output
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=total,
        cached_prompt_tokens=cached,
    )
