"""Anthropic's Messages API, natively, through the ``anthropic`` SDK.

The OpenAI-format messages are translated by the message graph (``to_anthropic``: the system
prompt apart, consecutive turns merged, images as image blocks). The ``name`` of each message
is left out first: the materializer already writes who speaks at the start of the text, and
``to_anthropic`` would repeat it as ``[name]`` (teaching the model to prefix its answers too).
Two prompt-cache breakpoints: the system prompt, and the end of the conversation, so the next
answer in the channel reads everything this one sent, as long as its start stays the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
import httpx2
from anthropic import AsyncStream

from bot.model.call import Call, Usage
from bot.model.errors import ModelProtocolError
from bot.model.settings import ModelSettings
from conversation.graph import MessageGraph

_BREAKPOINT = {"type": "ephemeral"}


class AnthropicProvider:
    """Builds the Messages request and reads its events into the call."""

    sdk = anthropic

    def __init__(self, settings: ModelSettings, http: httpx2.AsyncClient) -> None:
        self.settings, self.url = settings, f"{settings.base_url}/v1/messages"
        key = settings.api_key.get_secret_value() if settings.api_key else ""
        self._sdk = anthropic.AsyncAnthropic(
            api_key=key, base_url=settings.base_url, max_retries=0, http_client=http,
            timeout=http.timeout, open_telemetry=False,
        )  # fmt: skip
        # No key: send no Authorization (not an empty one, nor one the SDK finds elsewhere).
        self._headers: dict[str, Any] = {} if key else {"Authorization": anthropic.omit}
        self._headers.update({k: v.get_secret_value() for k, v in settings.extra_headers.items()})

    def build(self, messages: Sequence[Mapping[str, Any]], stream: bool) -> dict[str, Any]:
        unnamed = [{k: v for k, v in m.items() if k != "name"} for m in messages]
        system, turns = MessageGraph.from_openai(unnamed).to_anthropic()
        settings = self.settings
        body: dict[str, Any] = {"model": settings.name}
        body["max_tokens"] = settings.answer_reserve  # required: max_tokens, else reserve_tokens
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": _BREAKPOINT}]
        if turns:
            turns[-1]["content"][-1]["cache_control"] = _BREAKPOINT
        body["messages"] = turns
        for key in ("temperature", "top_p", "top_k"):
            if (value := getattr(settings, key)) is not None:
                body[key] = value
        if settings.stop:
            body["stop_sequences"] = settings.stop
        return body | {"stream": stream, **settings.extra_body}

    def retry_at_once(self, error: object) -> bool:
        return False

    async def send(self, body: dict[str, Any], call: Call) -> int:
        create = self._sdk.post(
            "/v1/messages", body=body, cast_to=object, stream=body["stream"],
            stream_cls=AsyncStream[object], options={"headers": self._headers},
        )  # fmt: skip
        if not body["stream"]:
            answer = await create
            if not isinstance(answer, dict) or not isinstance(answer.get("content"), list):
                raise ModelProtocolError(f"no message from {self.url}: {answer!r:.200}")
            call.model, call.finish_reason = answer.get("model"), answer.get("stop_reason")
            call.usage = _usage(answer.get("usage"), with_output=True)
            blocks = [b for b in answer["content"] if isinstance(b, dict)]
            call.reasoning += [b.get("thinking", "") for b in blocks if b.get("type") == "thinking"]
            await call.deliver(
                "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            )
            return 200
        events = await call.within_idle(create)
        async for event in call.events(events):
            await self._event(event if isinstance(event, dict) else {}, call)
        return events.response.status_code

    async def _event(self, event: dict[str, Any], call: Call) -> None:
        kind, delta = event.get("type"), event.get("delta") or {}
        if kind == "message_start":
            message = event.get("message") or {}
            call.model, call.usage = message.get("model"), _usage(message.get("usage"))
        elif kind == "content_block_delta" and delta.get("type") == "text_delta":
            await call.deliver(delta.get("text", ""))
        elif kind == "content_block_delta" and delta.get("type") == "thinking_delta":
            call.reasoning.append(delta.get("thinking", ""))
        elif kind == "message_delta":
            call.finish_reason = delta.get("stop_reason") or "end_turn"
            output = (event.get("usage") or {}).get("output_tokens")
            if call.usage is not None and isinstance(output, int):
                total = (call.usage.prompt_tokens or 0) + output
                update = {"completion_tokens": output, "total_tokens": total}
                call.usage = call.usage.model_copy(update=update)


def _usage(usage: object, with_output: bool = False) -> Usage | None:
    """Anthropic counts cached prompt tokens apart; ``prompt_tokens`` is the whole prompt."""
    if not isinstance(usage, dict):
        return None
    cached = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + cached + written
    output = usage.get("output_tokens") if with_output else None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=None if output is None else prompt + output,
        cached_prompt_tokens=cached,
    )
