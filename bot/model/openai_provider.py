"""Any OpenAI-compatible ``/chat/completions`` server, through the ``openai`` SDK.

The SDK sends the body exactly as built (auth, errors and the event stream are its job); the
events are read as plain JSON (``cast_to=object``): building a typed chunk per event cost about
0.1 ms of CPU each, which under load delayed every other answer sharing the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import openai
from openai import AsyncStream

from bot.model.call import Call, Usage
from bot.model.errors import ModelError, ModelProtocolError, ModelRejectedError, reported_error
from bot.model.settings import ModelSettings

SAMPLING = ("temperature", "max_tokens", "top_p", "top_k", "presence_penalty",
            "frequency_penalty", "seed", "stop")  # fmt: skip


class OpenAIProvider:
    """Sends the messages unchanged; drops ``stream_options`` for good once a server refuses it."""

    sdk = openai

    def __init__(self, settings: ModelSettings, http: httpx2.AsyncClient) -> None:
        self.settings, self.stream_options_ok = settings, True
        self.url = f"{settings.base_url}/chat/completions"
        key = settings.api_key.get_secret_value() if settings.api_key else ""
        self._sdk = openai.AsyncOpenAI(
            api_key=key, base_url=settings.base_url, max_retries=0, http_client=http,
            timeout=http.timeout, _enforce_credentials=False,
        )  # fmt: skip
        # Only the config decides what is sent: no OPENAI_ORG_ID, OPENAI_PROJECT_ID or
        # OPENAI_API_KEY from the environment to whatever server base_url names.
        self._headers: dict[str, Any] = {"OpenAI-Organization": openai.omit}
        self._headers |= {"OpenAI-Project": openai.omit} | (
            {} if key else {"Authorization": openai.omit}
        )
        self._headers |= {k: v.get_secret_value() for k, v in settings.extra_headers.items()}

    def build(self, messages: Sequence[Mapping[str, Any]], stream: bool) -> dict[str, Any]:
        body = {"model": self.settings.name, "messages": [dict(m) for m in messages]}
        body |= {k: v for k in SAMPLING if (v := getattr(self.settings, k)) is not None}
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

    async def send(self, body: dict[str, Any], call: Call) -> int:
        stream = body["stream"]
        accept = "text/event-stream" if stream else "application/json"
        headers = {**self._headers, "Accept": accept}
        create = self._sdk.post(
            "/chat/completions", body=body, cast_to=object, stream=stream,
            stream_cls=AsyncStream[object], options={"headers": headers},
        )  # fmt: skip
        if not stream:
            await self._whole(await create, call)
            return 200
        answer = await call.within_idle(create)
        response = answer.response
        kind = response.headers.get("content-type", "").lower()
        if "json" in kind:  # a server that ignores stream=true and answers in one piece
            await self._whole(json.loads(await response.aread()), call)
        elif "text/event-stream" in kind:
            async for chunk in call.events(answer):
                await self._chunk(_object(chunk, self.url), call)
        else:
            snippet = (await response.aread())[:300].decode(errors="replace")
            raise ModelProtocolError(
                f"expected an event stream from {self.url}, got {kind or 'no'} content type: "
                f"{snippet!r}"
            )
        return response.status_code

    async def _whole(self, answer: object, call: Call) -> None:
        answer = _object(answer, self.url)
        call.model, call.usage = answer.get("model"), _usage(answer.get("usage"))
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = answer.get("error") or "the answer has no choices"
            raise reported_error(error, self.url, self.settings.name)
        message = _object(choices[0].get("message"), self.url)
        call.finish_reason = choices[0].get("finish_reason")
        _reasoning(message, call)
        await call.deliver(_text(message.get("content")))

    async def _chunk(self, chunk: dict[str, Any], call: Call) -> None:
        call.model = chunk.get("model") or call.model
        call.usage = _usage(chunk.get("usage")) or call.usage
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                delta = choice.get("delta") or {}
                _reasoning(delta, call)
                await call.deliver(_text(delta.get("content")))
                call.finish_reason = choice.get("finish_reason") or call.finish_reason


def _object(value: object, url: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelProtocolError(f"the answer from {url} is not a JSON object: {value!r:.200}")
    return value


def _text(content: object) -> str:
    """A ``content`` as text: a string, or a list of parts on some servers."""
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return content if isinstance(content, str) else ""


def _reasoning(message: dict[str, Any], call: Call) -> None:
    """DeepSeek-style servers send ``reasoning_content`` (or ``reasoning``) beside the text."""
    thought = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(thought, str):
        call.reasoning.append(thought)


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
