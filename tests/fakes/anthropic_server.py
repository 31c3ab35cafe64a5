"""A fake Anthropic Messages API on 127.0.0.1, for tests of anything that talks to Claude.

A real aiohttp server (real sockets, real HTTP, real server-sent events) answering
``POST /v1/messages`` as Anthropic does. Usage::

    async with FakeAnthropic() as fake:                # fake.url is the API root, no /v1
        settings = ModelSettings(provider="anthropic", base_url=fake.url, ...)
        fake.queue(RateLimited(retry_after="1"), Answer(text="hello"))
        fake.message_requests[-1].body["system"]       # every request is recorded

Behaviours (one per request; streamed or not as the request asks):

* :class:`Answer` — ``message_start``, ``content_block_start``, ``ping``, one
  ``content_block_delta`` per ``chunk_chars`` characters, ``content_block_stop``,
  ``message_delta`` (stop reason, output tokens), ``message_stop``; ``text=None`` echoes the
  last user text as ``"echo: <text>"``; ``thinking`` streams a thinking block first;
* :class:`RateLimited` — HTTP 429 ``rate_limit_error`` with an optional ``retry-after``;
* :class:`Overloaded` — HTTP 529 ``overloaded_error``;
* :class:`Fail` — any status with an Anthropic error body;
* :class:`BrokenStream` — after ``after_chunks`` deltas: ``"drop"`` (connection cut),
  ``"hang"`` (silence until the server closes) or ``"error_event"`` (an ``event: error``
  overloaded mid-stream, as Anthropic sends);
* :class:`UseTools` — ``stop_reason: "tool_use"`` with a ``tool_use`` block per call (after some
  text if given), streamed as Anthropic does: the block's id and name, then its input as
  ``input_json_delta`` pieces; ``ids`` gives the blocks' ids as a server may (repeated, or
  with characters the API refuses in a request), else each is unique;

The prompt cache is simulated: every prefix of content blocks ending at a ``cache_control``
breakpoint is written; a later request whose blocks start with a written prefix reports its
tokens (words + 3 per block) as ``cache_read_input_tokens``. ``api_key`` makes requests
without it (as ``x-api-key`` or ``Authorization: Bearer``) get a 401; every request must carry
``anthropic-version``, and its ``messages`` must start with a user turn and alternate. Tool
blocks follow the documented rules: each ``tool_use`` id matches ``^[a-zA-Z0-9_-]+$`` and is
unique in the request, each ``tool_use`` is answered by a ``tool_result`` in the next turn, and
each ``tool_result`` answers a ``tool_use`` of the turn before; a request breaking one gets the
API's 400 ``invalid_request_error``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web


@dataclass(frozen=True)
class Answer:
    text: str | None = None
    chunk_chars: int = 8
    chunk_delay: float = 0.0
    first_byte_delay: float = 0.0
    stop_reason: str = "end_turn"
    thinking: str | None = None


@dataclass(frozen=True)
class RateLimited:
    retry_after: str | None = "1"


@dataclass(frozen=True)
class Overloaded:
    pass


@dataclass(frozen=True)
class Fail:
    status: int = 400
    message: str = "messages: roles must alternate"
    error_type: str = "invalid_request_error"


@dataclass(frozen=True)
class BrokenStream:
    mode: Literal["drop", "hang", "error_event"]
    text: str = "This answer will not finish properly, sorry about that."
    after_chunks: int = 2
    chunk_chars: int = 8


@dataclass(frozen=True)
class UseTools:
    """An answer asking for tools: ``calls`` are ``(name, input JSON text)``."""

    calls: tuple[tuple[str, str], ...]
    text: str = ""
    chunk_chars: int = 8
    stop_reason: str = "tool_use"  # "max_tokens": the input text may be cut short
    ids: tuple[str, ...] | None = None  # the blocks' ids as given (None: unique ones)


def _input(text: str) -> Any:
    """A whole answer's input; text that is not JSON (only a stream can carry it) as {}."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return {}


Behaviour = Answer | RateLimited | Overloaded | Fail | BrokenStream | UseTools


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    received_at: datetime
    cache_read_tokens: int = 0


@dataclass
class FakeAnthropic:
    """The fake server; use as ``async with FakeAnthropic(...) as fake``."""

    default: Behaviour = field(default_factory=Answer)
    api_key: str | None = None
    requests: list[RecordedRequest] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._queue: list[Behaviour] = []
        self._cache: set[str] = set()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    def queue(self, *behaviours: Behaviour) -> None:
        self._queue.extend(behaviours)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeAnthropic is not started")
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """The model list, behind the same key and version checks as every request."""
        self.requests.append(
            RecordedRequest(request.path, dict(request.headers), None, datetime.now(UTC))
        )
        keys = {request.headers.get("x-api-key"), request.headers.get("Authorization")}
        if self.api_key is not None and not keys & {self.api_key, f"Bearer {self.api_key}"}:
            return _error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        return web.json_response({"data": [{"type": "model", "id": "claude-fake"}]})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        recorded = RecordedRequest(request.path, dict(request.headers), body, datetime.now(UTC))
        self.requests.append(recorded)
        keys = {request.headers.get("x-api-key"), request.headers.get("Authorization")}
        if self.api_key is not None and not keys & {self.api_key, f"Bearer {self.api_key}"}:
            return _error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "invalid_request_error", "messages: Field required")
        if not isinstance(body.get("max_tokens"), int):
            return _error(400, "invalid_request_error", "max_tokens: Field required")
        roles = [m.get("role") if isinstance(m, dict) else None for m in body["messages"]]
        if roles[:1] != ["user"] or any(a == b for a, b in itertools.pairwise(roles)):
            # The Messages API's own rule: user first, then user and assistant in turn.
            return _error(
                400, "invalid_request_error", "messages: roles must alternate, user first"
            )
        refused = _tool_blocks_refused(body["messages"])
        if refused is not None:
            return _error(400, "invalid_request_error", refused)
        behaviour = self._queue.pop(0) if self._queue else self.default
        match behaviour:
            case RateLimited(retry_after=wait):
                headers = {"retry-after": wait} if wait is not None else {}
                return _error(429, "rate_limit_error", "Number of requests over limit", headers)
            case Overloaded():
                return _error(529, "overloaded_error", "Overloaded")
            case Fail(status=status, message=message, error_type=kind):
                return _error(status, kind, message)
        if isinstance(behaviour, UseTools) and "tools" not in body:
            return _error(400, "invalid_request_error", "tools: required with tool_use")
        recorded.cache_read_tokens = self._use_cache(body)
        text = behaviour.text if behaviour.text is not None else _echo(body["messages"])
        usage = {
            "input_tokens": _tokens(_blocks(body)) - recorded.cache_read_tokens,
            "cache_read_input_tokens": recorded.cache_read_tokens,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        }
        model = str(body.get("model"))
        if isinstance(behaviour, Answer) and behaviour.first_byte_delay:
            await self._sleep(behaviour.first_byte_delay)
        if isinstance(behaviour, UseTools):
            return await self._use_tools(request, behaviour, body, model, usage)
        if not body.get("stream"):
            return web.json_response(_message(model, text, behaviour, usage))
        try:
            return await self._stream(request, behaviour, model, text, usage)
        except ConnectionResetError:
            return web.Response(status=499)

    async def _stream(
        self, request: web.Request, behaviour: Behaviour, model: str, text: str, usage: dict
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        start = _message(model, "", behaviour, usage) | {"stop_reason": None, "content": []}
        await _event(response, "message_start", {"message": start})
        index = 0
        if isinstance(behaviour, Answer) and behaviour.thinking:
            await _event(response, "content_block_start", {"index": 0, "content_block": {
                "type": "thinking", "thinking": ""}})  # fmt: skip
            delta = {"type": "thinking_delta", "thinking": behaviour.thinking}
            await _event(response, "content_block_delta", {"index": 0, "delta": delta})
            await _event(response, "content_block_stop", {"index": 0})
            index = 1
        block = {"type": "text", "text": ""}
        await _event(response, "content_block_start", {"index": index, "content_block": block})
        await _event(response, "ping", {})
        size = behaviour.chunk_chars  # type: ignore[union-attr]
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        if isinstance(behaviour, BrokenStream):
            pieces = pieces[: behaviour.after_chunks]
        for piece in pieces:
            if isinstance(behaviour, Answer) and behaviour.chunk_delay:
                await self._sleep(behaviour.chunk_delay)
            delta = {"type": "text_delta", "text": piece}
            await _event(response, "content_block_delta", {"index": index, "delta": delta})
        if isinstance(behaviour, BrokenStream):
            if behaviour.mode == "error_event":
                error = {"type": "overloaded_error", "message": "Overloaded"}
                await _event(response, "error", {"error": error})
            elif behaviour.mode == "hang":
                await self._closing.wait()
            elif request.transport is not None:
                request.transport.abort()
            return response
        await _event(response, "content_block_stop", {"index": index})
        delta = {"stop_reason": behaviour.stop_reason, "stop_sequence": None}  # type: ignore[union-attr]
        await _event(response, "message_delta", {"delta": delta, "usage": {
            "output_tokens": len(pieces)}})  # fmt: skip
        await _event(response, "message_stop", {})
        await response.write_eof()
        return response

    async def _use_tools(
        self, request: web.Request, asked: UseTools, body: dict, model: str, usage: dict
    ) -> web.StreamResponse:
        number = len(self.message_requests)
        ids = list(asked.ids or (f"toolu_{number}_{i}" for i in range(len(asked.calls))))
        blocks: list[dict[str, Any]] = [{"type": "text", "text": asked.text}] if asked.text else []
        blocks += [
            {"type": "tool_use", "id": i, "name": n, "input": _input(a)}
            for i, (n, a) in zip(ids, asked.calls, strict=True)
        ]
        stop = asked.stop_reason
        message = _message(model, "", asked, usage) | {"content": blocks, "stop_reason": stop}
        if not body.get("stream"):
            return web.json_response(message)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        start = message | {"stop_reason": None, "content": []}
        await _event(response, "message_start", {"message": start})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                await _event(response, "content_block_start", {"index": index, "content_block": {
                    "type": "text", "text": ""}})  # fmt: skip
                delta = {"type": "text_delta", "text": block["text"]}
                await _event(response, "content_block_delta", {"index": index, "delta": delta})
            else:
                await _event(response, "content_block_start", {"index": index, "content_block": {
                    **block, "input": {}}})  # fmt: skip
                text = asked.calls[index - (1 if asked.text else 0)][1]
                for i in range(0, len(text), asked.chunk_chars):
                    delta = {
                        "type": "input_json_delta",
                        "partial_json": text[i : i + asked.chunk_chars],
                    }
                    await _event(response, "content_block_delta", {"index": index, "delta": delta})
            await _event(response, "content_block_stop", {"index": index})
        await _event(response, "message_delta", {"delta": {"stop_reason": stop,
                     "stop_sequence": None}, "usage": {"output_tokens": 1}})  # fmt: skip
        await _event(response, "message_stop", {})
        await response.write_eof()
        return response

    def _use_cache(self, body: dict) -> int:
        """Tokens of the longest written prefix this request starts with; writes its own."""
        marked = _blocks(body)
        blocks = [{k: v for k, v in b.items() if k != "cache_control"} for b in marked]
        keys = [json.dumps(blocks[: i + 1], sort_keys=True) for i in range(len(blocks))]
        read = max((i + 1 for i, key in enumerate(keys) if key in self._cache), default=0)
        for i, block in enumerate(marked):
            if "cache_control" in block:
                self._cache.add(keys[i])
        return _tokens(blocks[:read])

    async def _sleep(self, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            pass


TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def _tool_blocks_refused(messages: list[dict]) -> str | None:
    """The API's message for the first rule on tool blocks the request breaks; None if none."""
    seen: set[str] = set()
    asked: list[str] = []  # the tool_use ids of the turn before
    for number, message in enumerate(messages):
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        answered = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        for answer in answered:
            if answer not in asked:
                return (
                    f"messages.{number}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {answer}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
        missing = [i for i in asked if i not in answered]
        if missing:
            return (
                f"messages.{number - 1}: `tool_use` ids were found without `tool_result` "
                f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block must "
                "have a corresponding `tool_result` block in the next message."
            )
        asked = []
        for position, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            block_id = block.get("id")
            if not isinstance(block_id, str) or not TOOL_USE_ID.fullmatch(block_id):
                return (
                    f"messages.{number}.content.{position}.tool_use.id: String should match "
                    "pattern '^[a-zA-Z0-9_-]+$'"
                )
            if block_id in seen:
                return f"messages.{number}.content.{position}: `tool_use` ids must be unique"
            seen.add(block_id)
            asked.append(block_id)
    return None


def _blocks(body: dict) -> list[dict]:
    """System blocks then every message's blocks (with the role), in order."""
    system = body.get("system") or []
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
    for message in body["messages"]:
        content = message["content"]
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks.extend({"role": message["role"], **block} for block in content)
    return blocks


def _tokens(blocks: list[dict]) -> int:
    return sum(len(str(b.get("text", "")).split()) + 3 for b in blocks)


def _echo(messages: list[dict]) -> str:
    for message in reversed(messages):
        content = message["content"]
        if message["role"] == "user":
            if isinstance(content, str):
                return f"echo: {content}"
            texts = [b["text"] for b in content if b.get("type") == "text"]
            return f"echo: {texts[-1] if texts else ''}"
    return "echo: (no user message)"


def _message(model: str, text: str, behaviour: Behaviour, usage: dict) -> dict[str, Any]:
    stop = behaviour.stop_reason if isinstance(behaviour, Answer) else "end_turn"
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": stop,
        "stop_sequence": None, "usage": usage,
    }  # fmt: skip


async def _event(response: web.StreamResponse, kind: str, data: dict) -> None:
    payload = json.dumps({"type": kind, **data})
    await response.write(f"event: {kind}\ndata: {payload}\n\n".encode())


def _error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status, headers=headers or {})
