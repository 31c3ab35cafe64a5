"""A fake OpenAI-compatible server on 127.0.0.1, for tests of anything that talks to a model.

It is a real aiohttp server (real sockets, real HTTP, real server-sent events), so the client
under test runs exactly as in production. Usage::

    async with FakeOpenAI() as fake:                 # random free port
        settings = ModelSettings(base_url=fake.url, ...)   # fake.url ends in /v1
        fake.queue(RateLimited(retry_after="1"), Answer(text="hello"))
        ...                                          # 1st chat request gets a 429, 2nd "hello"
        fake.requests[-1].body["messages"]           # every request is recorded

Behaviours (one per ``/v1/chat/completions`` request; streamed or not as the request asks):

* :class:`Answer` — a normal answer; ``text=None`` echoes the last user message as
  ``"echo: <text>"``; knobs for slowness (``first_byte_delay``, ``chunk_delay``), chunk size,
  OpenRouter-style keep-alive comments, usage, a missing ``[DONE]``;
* :class:`RateLimited` — HTTP 429 with an optional ``Retry-After`` header;
* :class:`Fail` — any HTTP error status with an OpenAI-style error body (500, 401, 400, ...);
* :class:`BrokenStream` — ``"bad_json"``, ``"drop"`` (connection closed mid-answer), ``"hang"``
  (stops sending and never finishes) or ``"eof"`` (ends cleanly but without ``[DONE]`` or a
  finish_reason), each after ``after_chunks`` good chunks;
* :class:`Hang` — never even sends the response headers;
* :class:`CallTools` — asks for tool calls (``finish_reason: "tool_calls"``), after some text
  if given; streamed as OpenAI does: each call's id and name first, its arguments in pieces.

Which behaviour answers a request: the next one from :meth:`FakeOpenAI.queue` (first in, first
out); when the queue is empty, the function given to :meth:`FakeOpenAI.script` (if it returns a
behaviour); else ``default`` (an echoing :class:`Answer`). ``long_answer_with_code()`` builds a
long markdown answer with fenced code blocks, for splitting tests.

Server options: ``api_key`` makes requests without ``Authorization: Bearer <api_key>`` get a
401; ``reject_stream_options`` answers 400 to requests carrying ``stream_options`` (as strict
servers do); ``models`` is what ``GET /v1/models`` lists; ``context_window`` makes it count
each request's tokens (:func:`count_tokens`, a word-piece count unlike the bot's estimate) and
answer a prompt whose tokens plus ``max_tokens`` pass the window as OpenAI does: HTTP 400,
``code: "context_length_exceeded"``, "This model's maximum context length is N tokens. However,
your messages resulted in M tokens..." (``overflow_wording`` picks vLLM's or llama.cpp's form
instead). The reported ``usage.prompt_tokens`` uses the same count.

The prompt cache is simulated per ``prompt_cache_key`` (requests without one share a cache): a
request whose messages start with the whole messages of an earlier request under the same key
reports the tokens of that longest start as ``usage.prompt_tokens_details.cached_tokens`` (and
in :attr:`RecordedRequest.cached_tokens`). Unlike OpenAI there is no 1,024-token minimum.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web

__all__ = [
    "Answer",
    "Behaviour",
    "BrokenStream",
    "CallTools",
    "Fail",
    "FakeOpenAI",
    "Hang",
    "RateLimited",
    "RecordedRequest",
    "long_answer_with_code",
]


@dataclass(frozen=True)
class Answer:
    """A successful completion."""

    text: str | None = None
    """The answer; None echoes the last user message as ``"echo: <its text>"``."""
    chunk_chars: int = 8
    """Streaming: characters of answer per ``data:`` event."""
    first_byte_delay: float = 0.0
    """Seconds before the response headers are sent (a model reading a long prompt)."""
    chunk_delay: float = 0.0
    """Streaming: seconds between two events."""
    finish_reason: str = "stop"
    model: str | None = None
    """Model name reported; None repeats the requested one."""
    keepalive_comments: int = 0
    """Streaming: ``: OPENROUTER PROCESSING`` comment lines sent before the first event."""
    usage: bool = True
    """Report token usage (streaming: only when ``stream_options.include_usage`` was asked)."""
    send_done: bool = True
    """Streaming: end with ``data: [DONE]`` (a finish_reason is sent either way)."""
    reasoning: str | None = None
    """Sent before the answer as ``reasoning_content`` (as DeepSeek-style servers do)."""


@dataclass(frozen=True)
class RateLimited:
    """HTTP 429, as a provider over its quota answers."""

    retry_after: str | None = "1"
    """Value of the ``Retry-After`` header (seconds, or an HTTP date); None leaves it out."""
    message: str = "Rate limit reached for requests"


@dataclass(frozen=True)
class Fail:
    """An HTTP error with an OpenAI-style body ``{"error": {"message": ...}}``."""

    status: int = 500
    message: str = "The server had an error while processing your request."
    retry_after: str | None = None
    raw_body: str | None = None
    """Sent instead of the JSON error body when given (e.g. an HTML proxy page)."""


@dataclass(frozen=True)
class BrokenStream:
    """A reply that goes wrong after ``after_chunks`` good events (or good bytes, unstreamed)."""

    mode: Literal["bad_json", "drop", "hang", "eof"]
    text: str = "This answer will not finish properly, sorry about that."
    after_chunks: int = 2
    chunk_chars: int = 8


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (not even headers) until the server closes."""


@dataclass(frozen=True)
class CallTools:
    """An answer asking for tool calls: ``calls`` are ``(name, arguments JSON text)``."""

    calls: tuple[tuple[str, str], ...]
    text: str = ""
    chunk_chars: int = 8
    id_prefix: str = "call_"
    finish_reason: str = "tool_calls"  # "length": the arguments may be cut short


Behaviour = Answer | RateLimited | Fail | BrokenStream | Hang | CallTools
Script = Callable[["RecordedRequest"], Behaviour | None]


@dataclass
class RecordedRequest:
    """One request the fake received, as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    """The parsed JSON body; None when there was none or it was not JSON."""
    received_at: datetime
    behaviour: Behaviour | None = None
    """What the fake answered with (chat requests only)."""
    client_disconnected: bool = False
    """True when the client hung up before the answer was fully written."""
    cached_tokens: int = 0
    """Prompt tokens the simulated prompt cache held (reported in ``usage``)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of a chat request (empty list otherwise)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return self.body["messages"]
        return []

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


@dataclass
class FakeOpenAI:
    """The fake server; use as ``async with FakeOpenAI(...) as fake`` (see the module doc)."""

    default: Behaviour = field(default_factory=Answer)
    api_key: str | None = None
    reject_stream_options: bool = False
    models: Sequence[str] = ("fake-model",)
    context_window: int | None = None
    overflow_wording: Literal["openai", "vllm", "llamacpp", "bare"] = "openai"
    requests: list[RecordedRequest] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._queue: list[Behaviour] = []
        self._script: Script | None = None
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._arrived = asyncio.Condition()
        self._prompts: dict[str, list[list[Any]]] = {}  # prompt_cache_key -> prompts seen

    # -- scripting -----------------------------------------------------------------------------

    def queue(self, *behaviours: Behaviour) -> None:
        """Answer the next chat requests with these behaviours, in order."""
        self._queue.extend(behaviours)

    def script(self, function: Script | None) -> None:
        """Choose the behaviour per request when the queue is empty (None: use ``default``)."""
        self._script = function

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/chat/completions`` requests only."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    async def wait_for_chat_requests(self, count: int) -> None:
        """Wait until at least ``count`` chat requests arrived (wrap in ``asyncio.timeout``)."""
        async with self._arrived:
            await self._arrived.wait_for(lambda: len(self.chat_requests) >= count)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL to configure, e.g. ``http://127.0.0.1:43817/v1``."""
        if self._port is None:
            raise RuntimeError("FakeOpenAI is not started; use `async with FakeOpenAI()`")
        return f"http://127.0.0.1:{self._port}/v1"

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[union-attr]
        self._port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def close(self) -> None:
        self._closing.set()  # releases every hanging handler
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- handlers ------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            headers=dict(request.headers),
            raw=raw,
            body=body,
            received_at=datetime.now(UTC),
        )
        async with self._arrived:
            self.requests.append(recorded)
            self._arrived.notify_all()
        return recorded

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if (denied := self._check_key(request)) is not None:
            return denied
        data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    def _check_key(self, request: web.Request) -> web.Response | None:
        if self.api_key is None:
            return None
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return _error(401, "Incorrect API key provided.", code="invalid_api_key")

    def _pick(self, recorded: RecordedRequest) -> Behaviour:
        if self._queue:
            return self._queue.pop(0)
        if self._script is not None and (chosen := self._script(recorded)) is not None:
            return chosen
        return self.default

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        if (denied := self._check_key(request)) is not None:
            return denied
        body = recorded.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is a required property")
        if self.reject_stream_options and "stream_options" in body:
            return _error(400, "Unrecognized request argument supplied: stream_options")
        if (overflow := self._overflow(body)) is not None:
            return overflow
        behaviour = self._pick(recorded)
        recorded.behaviour = behaviour
        model = str(body.get("model") or "fake-model")
        match behaviour:
            case RateLimited(retry_after=retry_after, message=message):
                return _error(429, message, retry_after=retry_after, code="rate_limit_exceeded")
            case Fail(status=status, message=message, retry_after=retry_after, raw_body=raw):
                if raw is not None:
                    return web.Response(status=status, text=raw, content_type="text/html")
                return _error(status, message, retry_after=retry_after)
            case Hang():
                await self._closing.wait()
                return _error(503, "server shutting down")
        try:
            match behaviour:
                case BrokenStream():
                    return await self._broken(request, recorded, behaviour, model)
                case Answer():
                    return await self._answer(request, recorded, behaviour, model)
                case CallTools():
                    return await self._call_tools(request, recorded, behaviour, model)
        except ConnectionResetError:
            # The client went away mid-answer (its own timeout, say): normal for tests.
            recorded.client_disconnected = True
            return web.Response(status=499)
        raise AssertionError(f"unknown behaviour {behaviour!r}")

    def _use_cache(self, recorded: RecordedRequest) -> int:
        """Tokens of the longest run of whole messages an earlier prompt under the same key
        started with; this prompt is kept for the next ones."""
        messages = recorded.messages
        key = str(recorded.body.get("prompt_cache_key") or "")
        seen = self._prompts.setdefault(key, [])
        shared = 0
        for earlier in seen:
            count = 0
            for old, new in zip(earlier, messages, strict=False):
                if old != new:
                    break
                count += 1
            shared = max(shared, count)
        seen.append(list(messages))
        return count_tokens(messages[:shared]) if shared else 0

    def _overflow(self, body: dict[str, Any]) -> web.Response | None:
        """The 400 a server with a context window gives a request that does not fit it."""
        if self.context_window is None:
            return None
        prompt = count_tokens(body["messages"])
        answer = body.get("max_tokens") or 0
        window = self.context_window
        if prompt + answer <= window:
            return None
        if self.overflow_wording == "vllm":
            message = (
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{prompt + answer} tokens ({prompt} in the messages, {answer} in the "
                "completion). Please reduce the length of the messages or completion."
            )
            return _error(400, message, code=None)
        if self.overflow_wording == "llamacpp":
            error = {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": window,
            }
            return web.json_response({"error": error}, status=400)
        if self.overflow_wording == "bare":
            return _error(400, "Please reduce the length of the messages.")
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt} tokens. Please reduce the length of the messages."
        )
        return _error(400, message, code="context_length_exceeded")

    async def _answer(
        self, request: web.Request, recorded: RecordedRequest, answer: Answer, model: str
    ) -> web.StreamResponse:
        text = answer.text if answer.text is not None else _echo(recorded.messages)
        model = answer.model or model
        if answer.first_byte_delay:
            await self._sleep(answer.first_byte_delay)
        pieces = _pieces(text, answer.chunk_chars)
        recorded.cached_tokens = self._use_cache(recorded)
        usage = _usage(
            recorded.messages, len(pieces), recorded.cached_tokens, recorded.body.get("tools")
        )
        if not recorded.stream:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if answer.reasoning is not None:
                message["reasoning_content"] = answer.reasoning
            payload: dict[str, Any] = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": answer.finish_reason}
                ],
            }
            if answer.usage:
                payload["usage"] = usage
            return web.json_response(payload)
        response = await _start_stream(request)
        for _ in range(answer.keepalive_comments):
            await response.write(b": OPENROUTER PROCESSING\n\n")
        await _send(response, _chunk(model, {"role": "assistant", "content": ""}))
        if answer.reasoning:
            for piece in _pieces(answer.reasoning, answer.chunk_chars):
                await self._pause(answer.chunk_delay)
                await _send(response, _chunk(model, {"reasoning_content": piece}))
        for piece in pieces:
            await self._pause(answer.chunk_delay)
            await _send(response, _chunk(model, {"content": piece}))
        await self._pause(answer.chunk_delay)
        await _send(response, _chunk(model, {}, finish_reason=answer.finish_reason))
        options = recorded.body.get("stream_options")
        if answer.usage and isinstance(options, dict) and options.get("include_usage"):
            await _send(response, {**_chunk(model, None), "choices": [], "usage": usage})
        if answer.send_done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _call_tools(
        self, request: web.Request, recorded: RecordedRequest, asked: CallTools, model: str
    ) -> web.StreamResponse:
        number = len(self.chat_requests)
        ids = [f"{asked.id_prefix}{number}_{i}" for i in range(len(asked.calls))]
        usage = _usage(recorded.messages, 1, tools=recorded.body.get("tools"))
        if not recorded.stream:
            calls = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, (n, a) in zip(ids, asked.calls, strict=True)
            ]
            message = {"role": "assistant", "content": asked.text or None, "tool_calls": calls}
            choice = {"index": 0, "message": message, "finish_reason": asked.finish_reason}
            payload = {"id": "chatcmpl-fake", "object": "chat.completion", "model": model}
            return web.json_response(payload | {"choices": [choice], "usage": usage})
        response = await _start_stream(request)
        await _send(response, _chunk(model, {"role": "assistant", "content": ""}))
        for piece in _pieces(asked.text, asked.chunk_chars):
            await _send(response, _chunk(model, {"content": piece}))
        for index, (call_id, (name, arguments)) in enumerate(zip(ids, asked.calls, strict=True)):
            first = {"index": index, "id": call_id, "type": "function",
                     "function": {"name": name, "arguments": ""}}  # fmt: skip
            await _send(response, _chunk(model, {"tool_calls": [first]}))
            for piece in _pieces(arguments, asked.chunk_chars):
                more = {"index": index, "function": {"arguments": piece}}
                await _send(response, _chunk(model, {"tool_calls": [more]}))
        await _send(response, _chunk(model, {}, finish_reason=asked.finish_reason))
        options = recorded.body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            await _send(response, {**_chunk(model, None), "choices": [], "usage": usage})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _broken(
        self, request: web.Request, recorded: RecordedRequest, broken: BrokenStream, model: str
    ) -> web.StreamResponse:
        pieces = _pieces(broken.text, broken.chunk_chars)[: broken.after_chunks]
        if not recorded.stream:
            good = '{"id": "chatcmpl-fake", "choices": [{"index": 0, "message": {"ro'
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            if broken.mode == "drop":
                response.content_length = len(good) * 2  # promise more than is ever sent
            await response.prepare(request)
            await response.write(good.encode())
            if broken.mode == "bad_json" or broken.mode == "eof":
                await response.write_eof()
                return response
            return await self._break(request, response, broken.mode)
        response = await _start_stream(request)
        await _send(response, _chunk(model, {"role": "assistant", "content": ""}))
        for piece in pieces:
            await _send(response, _chunk(model, {"content": piece}))
        if broken.mode == "bad_json":
            await response.write(b'data: {"choices": [{"delta": {"content": "oops"\n\n')
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        if broken.mode == "eof":
            await response.write_eof()
            return response
        return await self._break(request, response, broken.mode)

    async def _break(
        self, request: web.Request, response: web.StreamResponse, mode: str
    ) -> web.StreamResponse:
        if mode == "hang":
            await self._closing.wait()
            return response
        # "drop": cut the TCP connection without finishing the HTTP response.
        transport = request.transport
        if transport is not None:
            transport.abort()
        return response

    async def _pause(self, seconds: float) -> None:
        if seconds:
            await self._sleep(seconds)

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake up early when the server is closing (tests must not wait)."""
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            pass


# --------------------------------------------------------------------------------------------
# Wire format helpers
# --------------------------------------------------------------------------------------------


def _error(
    status: int, message: str, *, retry_after: str | None = None, code: str | None = None
) -> web.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = {"error": {"message": message, "type": "fake_error", "code": code}}
    return web.json_response(body, status=status, headers=headers)


async def _start_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    return response


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


def _chunk(
    model: str, delta: dict[str, Any] | None, finish_reason: str | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _echo(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return f"echo: {_text_of(message.get('content'))}"
    return "echo: (no user message)"


_WORD_PIECES = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")
_JSON_PIECES = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]+")


def count_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake's own tokenizer: letters in pieces of up to five, digits in threes, every other
    character alone, four tokens of framing per message (roughly what BPE vocabularies do)."""
    total = 3
    for message in messages:
        if not isinstance(message, dict):
            continue
        text = _text_of(message.get("content"))
        total += 4 + sum(
            math.ceil(len(piece) / 5) if piece.isalpha() else 1
            for piece in _WORD_PIECES.findall(text)
        )
    return total


def _usage(
    messages: list[dict[str, Any]], completion_tokens: int, cached: int = 0, tools: Any = None
) -> dict:
    prompt = count_tokens(messages)
    if isinstance(tools, list) and tools:  # as real servers do, the definitions count too
        pieces = _JSON_PIECES.findall(json.dumps(tools))  # JSON's punctuation runs merge
        prompt += sum(math.ceil(len(p) / 5) if p.isalpha() else 1 for p in pieces)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def long_answer_with_code(min_chars: int = 5000) -> str:
    """A markdown answer of at least ``min_chars`` characters with prose and fenced code."""
    sections: list[str] = []
    number = 0
    while sum(len(s) + 2 for s in sections) < min_chars:
        number += 1
        sections.append(
            f"Step {number}. Here is how the parser handles case {number}. It reads the input "
            "line by line, keeps the state between lines, and reports every error it finds. "
            "Nothing is dropped silently; the log says why."
        )
        code_lines = "\n".join(
            f"    if line.startswith('case{number}_{i}'):\n        handle(line, state={i})"
            for i in range(12)
        )
        sections.append(
            f"```python\ndef parse_{number}(lines):\n{code_lines}\n    return state\n```"
        )
    return "\n\n".join(sections)
