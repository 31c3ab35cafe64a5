"""The studio's web server: the static page and a small JSON API over a channel log and the store.

It binds to 127.0.0.1 by default and shows message content, so it takes two precautions a
local tool needs: requests must name a loopback host when it listens on loopback (a web page
elsewhere cannot reach it through DNS rebinding), and the page is served with a content
security policy that allows no inline or foreign script, so message text can only ever be text.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from bot.storage import Store, StoreError, summarize
from bot.studio.channel import ChannelStudio, SettingsError, validate_settings

STATIC = Path(__file__).resolve().parent / "static"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
MAX_PAGE = 200
JS_MAX_SAFE_INTEGER = 2**53 - 1

CHANNEL_KEY = web.AppKey("channel", ChannelStudio)
STORE_KEY = web.AppKey("store", Store)
LOOPBACK_ONLY_KEY = web.AppKey("loopback_only", bool)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """A request the page (or a person with curl) got wrong: one line and a status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def make_app(
    channel: ChannelStudio | None, store: Store | None, *, loopback_only: bool = True
) -> web.Application:
    app = web.Application(middlewares=[_guard])
    if channel is not None:
        app[CHANNEL_KEY] = channel
    if store is not None:
        app[STORE_KEY] = store
    app[LOOPBACK_ONLY_KEY] = loopback_only
    app.router.add_get("/", _index)
    app.router.add_get("/api/info", _info)
    app.router.add_get("/api/channel", _channel)
    app.router.add_post("/api/context", _context)
    app.router.add_post("/api/score", _score)
    app.router.add_post("/api/follow", _follow)
    app.router.add_get("/api/store/interactions", _interactions)
    app.router.add_get("/api/store/interactions/{interaction_id}", _interaction)
    app.router.add_static("/static/", STATIC, append_version=False)
    return app


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.app[LOOPBACK_ONLY_KEY] and not is_loopback(request.url.host or ""):
        return _error(421, f"this studio answers only on a loopback host, not {request.host!r}")
    try:
        response = await handler(request)
    except ApiError as error:
        return _error(error.status, str(error))
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _json(data: BaseModel | list[BaseModel] | dict[str, Any]) -> web.Response:
    if isinstance(data, BaseModel):
        plain: Any = data.model_dump(mode="json")
    elif isinstance(data, list):
        plain = [item.model_dump(mode="json") for item in data]
    else:
        plain = data
    return web.Response(text=json.dumps(js_safe(plain)), content_type="application/json")


def js_safe(value: Any) -> Any:
    """Integers JavaScript cannot hold exactly (Discord ids) as strings, everywhere in ``value``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > JS_MAX_SAFE_INTEGER:
        return str(value)
    if isinstance(value, dict):
        return {key: js_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [js_safe(item) for item in value]
    return value


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


async def _info(request: web.Request) -> web.Response:
    return _json({"channel": CHANNEL_KEY in request.app, "store": STORE_KEY in request.app})


def _channel_of(request: web.Request) -> ChannelStudio:
    if CHANNEL_KEY not in request.app:
        raise ApiError(404, "no channel log: start the studio with one (python -m bot studio LOG)")
    return request.app[CHANNEL_KEY]


def _store_of(request: web.Request) -> Store:
    if STORE_KEY not in request.app:
        raise ApiError(404, "no store: start the studio with --store")
    return request.app[STORE_KEY]


async def _body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise ApiError(415, "send the request body as application/json")
    try:
        body = await request.json()
    except ValueError as error:
        raise ApiError(400, f"request body is not JSON: {error}") from error
    if not isinstance(body, dict):
        raise ApiError(400, "request body must be a JSON object")
    return body


def _settings(body: dict[str, Any]) -> Any:
    settings = body.get("settings", {})
    if not isinstance(settings, dict):
        raise ApiError(400, "settings must be an object of [context] keys")
    try:
        return validate_settings(settings)
    except SettingsError as error:
        raise ApiError(400, str(error)) from error


def _warm(body: dict[str, Any]) -> bool:
    """Whether to build from the cache of a bot that saw the log arrive (default: cold)."""
    warm = body.get("warm", False)
    if not isinstance(warm, bool):
        raise ApiError(400, f"warm: true or false (got {warm!r})")
    return warm


def _message_id(value: Any, what: str) -> int:
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 2**63:
        raise ApiError(400, f"{what}: not a Discord id: {value!r}")
    return int(text)


async def _channel(request: web.Request) -> web.Response:
    return _json(_channel_of(request).info())


async def _context(request: web.Request) -> web.Response:
    channel = _channel_of(request)
    body = await _body(request)
    settings = _settings(body)
    trigger = _message_id(body.get("trigger"), "trigger")
    warm = _warm(body)
    try:
        return _json(await channel.context(trigger, settings, warm=warm))
    except KeyError as error:
        raise ApiError(404, str(error.args[0])) from error


async def _score(request: web.Request) -> web.Response:
    channel = _channel_of(request)
    body = await _body(request)
    settings = _settings(body)
    score = await channel.log_score(settings, warm=_warm(body))
    return _json({"score": score.model_dump() if score else None})


async def _follow(request: web.Request) -> web.Response:
    """The follow decisions over the log: ``{"threshold": 0..1 or null, "bot": id or null}``."""
    channel = _channel_of(request)
    body = await _body(request)
    threshold = body.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        raise ApiError(400, f"threshold: a number from 0 to 1, or null (got {threshold!r})")
    bot = body.get("bot")
    bot_id = _message_id(bot, "bot") if bot is not None else None
    return _json(channel.follow(bot_id, None if threshold is None else float(threshold)))


async def _interactions(request: web.Request) -> web.Response:
    store = _store_of(request)
    try:
        limit = min(int(request.query.get("limit", "50")), MAX_PAGE)
        before = request.query.get("before")
        before_seq = int(before) if before else None
    except ValueError as error:
        raise ApiError(400, "limit and before must be whole numbers") from error
    if limit < 1:
        raise ApiError(400, "limit must be at least 1")
    try:
        return _json(store.recent_interactions(limit, before_seq))
    except StoreError as error:
        raise ApiError(500, str(error)) from error


async def _interaction(request: web.Request) -> web.Response:
    store = _store_of(request)
    try:
        record = store.get_interaction(request.match_info["interaction_id"])
    except StoreError as error:
        raise ApiError(404, str(error)) from error
    data = record.model_dump(mode="json")
    data["work_log_summary"] = summarize(record.work_log)
    return _json(data)
