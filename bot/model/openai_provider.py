"""Any OpenAI-compatible ``/chat/completions`` server, through the ``openai`` SDK.

With cache hints, ``prompt_cache_key`` names the conversation (OpenAI routes requests with the
same key to the same prompt cache, so a follow-up finds its start there); an operator's
``extra_body`` may set or override it. Servers that do not know the field ignore it (vLLM,
llama.cpp, Ollama and OpenRouter do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import openai

from bot.config.model_settings import ModelSettings
from bot.model.call import CacheHints, Call, Usage
from bot.model.errors import ModelError, ModelRejectedError, reported_error
from bot.model.provider import Provider, as_dict
from bot.model.tool_wire import read_openai_calls

SAMPLING = ("temperature", "max_tokens", "top_p", "top_k", "presence_penalty",
            "frequency_penalty", "seed", "stop")  # fmt: skip


class OpenAIProvider(Provider):
    """Sends the messages unchanged; drops ``stream_options`` for good once a server refuses it."""

    sdk, path, stream_options_ok = openai, "/chat/completions", True

    def __init__(self, settings: ModelSettings, http: httpx2.AsyncClient) -> None:
        super().__init__(settings)
        self.client = openai.AsyncOpenAI(
            api_key=self.key, base_url=settings.base_url, max_retries=0, http_client=http,
            _enforce_credentials=False,
        )  # fmt: skip
        # Only the config decides what is sent: no OPENAI_ORG_ID, OPENAI_PROJECT_ID or
        # OPENAI_API_KEY from the environment to whatever server base_url names.
        self.headers = {"OpenAI-Organization": openai.omit, "OpenAI-Project": openai.omit}
        self.headers |= {} if self.key else {"Authorization": openai.omit}

    def build(
        self,
        messages: Sequence[Mapping[str, Any]],
        stream: bool,
        cache: CacheHints | None = None,
    ) -> dict[str, Any]:
        body = {"model": self.settings.name, "messages": [dict(m) for m in messages]}
        body |= {k: v for k in SAMPLING if (v := getattr(self.settings, k)) is not None}
        body |= {"prompt_cache_key": cache.key} if cache is not None and cache.key else {}
        body |= {"stream": stream, **self.settings.extra_body}
        if stream and self.stream_options_ok:
            body["stream_options"] = {"include_usage": True}
        return body

    def retry_at_once(self, error: ModelError) -> bool:
        refused = isinstance(error, ModelRejectedError) and error.status in (400, 422)
        if refused and self.stream_options_ok and "stream_options" in error.detail:
            self.stream_options_ok = False
            return True
        return False

    async def whole(self, answer: dict[str, Any], call: Call) -> None:
        call.model, call.usage = answer.get("model"), _usage(answer.get("usage"))
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = answer.get("error") or "the answer has no choices"
            raise reported_error(error, self.url, self.settings.name)
        call.finish_reason = choices[0].get("finish_reason")
        await _read(self.object(choices[0].get("message")), call)

    async def event(self, event: dict[str, Any], call: Call) -> None:
        call.model = event.get("model") or call.model
        call.usage = _usage(event.get("usage")) or call.usage
        for choice in event.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                await _read(as_dict(choice.get("delta")), call)
                call.finish_reason = choice.get("finish_reason") or call.finish_reason


async def _read(message: dict[str, Any], call: Call) -> None:
    """A message or delta: DeepSeek-style servers send ``reasoning_content`` (or ``reasoning``)
    beside the text, and some send ``content`` as a list of parts."""
    thought = message.get("reasoning_content") or message.get("reasoning")
    call.reasoning += [thought] if isinstance(thought, str) else []
    read_openai_calls(message, call)
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    await call.deliver(content if isinstance(content, str) else "")


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    return Usage(
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        total_tokens=usage.get("total_tokens"),
        cached_prompt_tokens=details.get("cached_tokens") if isinstance(details, dict) else None,
    )
