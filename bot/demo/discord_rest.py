"""The fake Discord REST API (``/api/v10``), with request recording and scripted faults.

Responses carry exactly ``Content-Type: application/json`` (nextcord compares the header
verbatim) and generous rate-limit headers: without them nextcord 3 assumes a bucket of one
request per second and every paging test would crawl. Errors use Discord's JSON bodies
(``{"message": "Unknown Message", "code": 10008}`` …) so the client raises the same exceptions as
in production.
"""

from __future__ import annotations

import asyncio
import json
import math
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from bot.demo.discord_files import Attachments, Upload, read_multipart
from bot.demo.discord_gateway import INTENT_GUILD_MEMBERS, INTENT_MESSAGE_CONTENT, Gateway
from bot.demo.discord_permissions import ATTACH_FILES, MANAGE_MESSAGES, MENTION_EVERYONE
from bot.demo.discord_reactions import Reactions
from bot.demo.discord_state import (
    EVERYONE_MENTION,
    MESSAGE_FLAG_EPHEMERAL,
    MESSAGE_FLAG_LOADING,
    MESSAGE_FLAG_SUPPRESS_EMBEDS,
    ROLE_MENTION,
    ApiError,
    DiscordState,
    Payload,
    Signal,
    hide_content,
    invalid_form,
    missing_permissions,
    without_members,
)
from bot.demo.discord_threads import Threads, wrong_channel_type
from conversation.replay import DceUser, user_payload

API_PREFIX = "/api/v10"
MAX_CONTENT = 2000
RATE_LIMIT_HEADERS = {"X-RateLimit-Limit": "10000", "X-RateLimit-Remaining": "9999"}
# Typed request-storage keys exist from aiohttp 3.12 on; plain strings work (with a warning) before.
_RequestKey: Any = getattr(web, "RequestKey", None)
BODY: Any = _RequestKey("fake_discord_body", object) if _RequestKey else "fake_discord_body"
FILES: Any = _RequestKey("fake_discord_files", tuple) if _RequestKey else "fake_discord_files"


class RecordedRequest(BaseModel):
    """One REST request as the fake saw it; ``path`` is relative to ``/api/v10``."""

    model_config = ConfigDict(frozen=True)

    method: str
    path: str
    query: dict[str, str]
    body: Any = None
    files: tuple[str, ...] = ()
    status: int
    time: datetime
    delay: float = 0.0
    handled: bool = True  # False: no such route in the fake (answered 404)


@dataclass
class RouteRule:
    """Scripted latency and/or error for requests whose path matches ``pattern`` (fnmatch).

    ``remaining`` counts how many more requests it applies to (None: all); ``hits`` how many it
    has affected so far.
    """

    pattern: str
    method: str | None = None
    delay: float = 0.0
    status: int | None = None
    body: Payload | None = None
    headers: dict[str, str] = field(default_factory=dict)
    remaining: int | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        return (self.method is None or self.method == method) and fnmatchcase(path, self.pattern)


def default_error_body(status: int, path: str) -> Payload:
    """The body Discord sends for a status on this kind of route."""
    if status == 403:
        return {"message": "Missing Access", "code": 50001}
    if status == 404:
        parts = path.strip("/").split("/")
        if len(parts) >= 4 and parts[0] == "channels" and parts[2] == "messages":
            return {"message": "Unknown Message", "code": 10008}
        if parts[0] == "channels":
            return {"message": "Unknown Channel", "code": 10003}
        return {"message": "404: Not Found", "code": 0}
    if status == 401:
        return {"message": "401: Unauthorized", "code": 0}
    if status >= 500:
        return {"message": f"{status}: Internal Server Error", "code": 0}
    return {"message": f"{status}: Error", "code": 0}


def json_response(data: Any, *, status: int = 200, headers: dict[str, str] | None = None):
    return web.Response(
        status=status,
        body=json.dumps(data).encode(),
        headers={"Content-Type": "application/json", **RATE_LIMIT_HEADERS, **(headers or {})},
    )


def no_content() -> web.Response:
    return web.Response(status=204, headers=RATE_LIMIT_HEADERS)


class RestApi:
    """Route handlers over a :class:`DiscordState`; bot messages are echoed to the gateway.

    Application commands and interactions have their own routes (``discord_interactions``);
    threads, reactions and attached files their own bookkeeping, used here.
    """

    def __init__(self, state: DiscordState, gateway: Gateway, *, token: str) -> None:
        self.state = state
        self.gateway = gateway
        self.token = token
        self.threads = Threads(state, gateway)
        self.reactions = Reactions(state, gateway)
        self.attachments = Attachments(state.mint.mint)
        self.requests: list[RecordedRequest] = []
        self.rules: list[RouteRule] = []
        self.server_errors: list[str] = []
        self.changed = Signal()

    # ------------------------------------------------------------------ app and middleware

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        get, post = app.router.add_get, app.router.add_post
        put, patch, delete = app.router.add_put, app.router.add_patch, app.router.add_delete
        get("/users/@me", self.get_me)
        post("/users/@me/channels", self.create_dm)
        get("/users/{user_id}", self.get_user)
        get("/gateway", self.get_gateway)
        get("/gateway/bot", self.get_gateway_bot)
        get("/guilds/{guild_id}", self.get_guild)
        get("/guilds/{guild_id}/channels", self.get_guild_channels)
        get("/guilds/{guild_id}/members/{user_id}", self.get_member)
        get("/channels/{channel_id}", self.get_channel)
        get("/channels/{channel_id}/thread-members", self.list_thread_members)
        # Discord documents PUT and takes POST too, which nextcord (2.6 and 3.x) sends.
        put("/channels/{channel_id}/thread-members/@me", self.join_thread)
        post("/channels/{channel_id}/thread-members/@me", self.join_thread)
        get("/channels/{channel_id}/thread-members/{user_id}", self.get_thread_member)
        get("/channels/{channel_id}/messages", self.get_messages)
        post("/channels/{channel_id}/messages", self.post_message)
        message = "/channels/{channel_id}/messages/{message_id}"
        get(message, self.get_message)
        patch(message, self.edit_message)
        delete(message, self.delete_message)
        post(message + "/threads", self.start_thread)
        reaction = message + "/reactions/{emoji}"
        put(reaction + "/@me", self.add_reaction)
        delete(reaction + "/{user_id}", self.remove_reaction)
        get(reaction, self.reaction_users)
        delete(reaction, self.clear_reactions)
        delete(message + "/reactions", self.clear_reactions)
        post("/channels/{channel_id}/typing", self.typing)
        return app

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        path = request.path.removeprefix(API_PREFIX) or "/"
        started = datetime.now(UTC)
        delay = 0.0
        handled = True
        files: tuple[Upload, ...] = ()
        body: Any = None
        try:
            body, files = await self._read_body(request)
            request[BODY] = body
            request[FILES] = files
            self._check_auth(request, path)
            delay, fault = self._apply_rules(request.method, path)
            if delay:
                await asyncio.sleep(delay)
            if fault is not None:
                response: web.StreamResponse = self._fault_response(fault, path)
            else:
                response = await handler(request)
        except ApiError as error:
            response = json_response(error.body, status=error.status)
        except web.HTTPNotFound:
            handled = False
            response = json_response(default_error_body(404, "/"), status=404)
        except web.HTTPMethodNotAllowed:
            handled = False
            response = json_response({"message": "405: Method Not Allowed", "code": 0}, status=405)
        except Exception as error:  # a bug in the fake: recorded, and answered without retries
            self.server_errors.append(f"{request.method} {path}: {traceback.format_exc()}")
            body_text = {"message": f"fake Discord bug: {error!r}", "code": 0}
            response = json_response(body_text, status=503)
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=path,
                query=dict(request.query),
                body=body,
                files=tuple(upload.filename for upload in files),
                status=response.status,
                time=started,
                delay=delay,
                handled=handled,
            )
        )
        self.changed.notify()
        return response

    async def _read_body(self, request: web.Request) -> tuple[Any, tuple[Upload, ...]]:
        if request.content_type.startswith("multipart/"):
            return await read_multipart(request)
        raw = await request.read()
        if not raw:
            return None, ()
        try:
            return json.loads(raw), ()
        except ValueError as error:
            raise ApiError(400, 50109, "The request body contains invalid JSON.") from error

    def _check_auth(self, request: web.Request, path: str) -> None:
        # Interaction callbacks and webhooks authenticate by the token in their URL.
        if path.startswith(("/interactions/", "/webhooks/")):
            return
        if request.headers.get("Authorization") != f"Bot {self.token}":
            raise ApiError(401, 0, "401: Unauthorized")

    def _apply_rules(self, method: str, path: str) -> tuple[float, RouteRule | None]:
        delay = 0.0
        fault: RouteRule | None = None
        for rule in self.rules:
            if not rule.matches(method, path):
                continue
            if rule.status is not None:
                if fault is not None:
                    continue  # the first matching error wins; later ones keep their count
                fault = rule
            rule.hits += 1
            if rule.remaining is not None:
                rule.remaining -= 1
            delay += rule.delay
        return delay, fault

    def _fault_response(self, rule: RouteRule, path: str) -> web.Response:
        assert rule.status is not None
        body = rule.body if rule.body is not None else default_error_body(rule.status, path)
        return json_response(body, status=rule.status, headers=rule.headers)

    def add_rule(self, rule: RouteRule) -> RouteRule:
        if rule.status == 429:
            retry_after = float((rule.body or {}).get("retry_after", 0.05))
            rule.body = {
                "message": "You are being rate limited.",
                "retry_after": retry_after,
                "global": False,
                "code": 0,
            } | (rule.body or {})
            is_global = bool(rule.body.get("global"))
            rule.headers = {
                "X-RateLimit-Limit": "10000",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": str(retry_after),
                "Retry-After": str(math.ceil(retry_after)),
                "X-RateLimit-Scope": "global" if is_global else "user",
                "Via": "1.1 google",
                **({"X-RateLimit-Global": "true"} if is_global else {}),
            } | rule.headers
        self.rules.append(rule)
        return rule

    # ------------------------------------------------------------------ users and gateway

    async def get_me(self, request: web.Request) -> web.Response:
        me = user_payload(self.state.bot) | {"verified": True, "mfa_enabled": False, "flags": 0}
        return json_response(me)

    async def get_user(self, request: web.Request) -> web.Response:
        user = self.state.users.get(request.match_info["user_id"])
        if user is None:
            raise ApiError(404, 10013, "Unknown User")
        return json_response(user_payload(user))

    async def create_dm(self, request: web.Request) -> web.Response:
        recipient_id = str((request[BODY] or {}).get("recipient_id", ""))
        user = self.state.users.get(recipient_id)
        if user is None:
            raise invalid_form("recipient_id", "USER_UNKNOWN", "Unknown user")
        return json_response(self.state.open_dm(user))

    async def get_gateway(self, request: web.Request) -> web.Response:
        return json_response({"url": self.gateway.base_url + "/gateway-ws"})

    async def get_gateway_bot(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        url = self.gateway.base_url + "/gateway-ws"
        return json_response({"url": url, "shards": 1, "session_start_limit": limit})

    # ------------------------------------------------------------------ guilds and channels

    def _guild(self, request: web.Request):
        guild = self.state.guilds.get(request.match_info["guild_id"])
        if guild is None:
            raise ApiError(404, 10004, "Unknown Guild")
        return guild

    async def get_guild(self, request: web.Request) -> web.Response:
        payload = self.state.guild_create(self._guild(request).id)
        for key in ("members", "channels", "threads", "voice_states", "presences"):
            payload.pop(key)
        return json_response(payload)

    async def get_guild_channels(self, request: web.Request) -> web.Response:
        guild = self._guild(request)
        return json_response([self.state.channels[cid] for cid in guild.channel_ids])

    async def get_member(self, request: web.Request) -> web.Response:
        member = self._guild(request).members.get(request.match_info["user_id"])
        if member is None:
            raise ApiError(404, 10007, "Unknown Member")
        return json_response(member)

    async def get_channel(self, request: web.Request) -> web.Response:
        channel = self.state.channel(request.match_info["channel_id"])
        return json_response(self.state.as_bot_sees(channel))

    # ------------------------------------------------------------------ threads

    async def start_thread(self, request: web.Request) -> web.Response:
        channel_id = self.state.channel(request.match_info["channel_id"])["id"]
        thread = await self.threads.start_from_message(
            channel_id,
            request.match_info["message_id"],
            request[BODY] or {},
            by=self.state.bot,
            permissions=self.state.bot_permissions_in(channel_id),
        )
        return json_response(thread, status=201)

    async def join_thread(self, request: web.Request) -> web.Response:
        thread = self.state.channel(request.match_info["channel_id"])
        if "thread_metadata" not in thread:
            raise wrong_channel_type()
        if thread["thread_metadata"].get("archived"):
            raise ApiError(400, 50083, "Thread is archived")
        await self.threads.joined(thread["id"], self.state.bot)
        return no_content()

    async def get_thread_member(self, request: web.Request) -> web.Response:
        info = request.match_info
        return json_response(self.state.thread_member(info["channel_id"], info["user_id"]))

    async def list_thread_members(self, request: web.Request) -> web.Response:
        thread = self.state.channel(request.match_info["channel_id"])
        if "thread_metadata" not in thread:
            raise wrong_channel_type()
        if not self.gateway.allowed_privileged_intents & INTENT_GUILD_MEMBERS:
            raise ApiError(403, 50001, "Missing Access")  # needs the members privilege
        members = self.state.thread_members.get(thread["id"], {})
        return json_response([self.state.thread_member(thread["id"], user) for user in members])

    # ------------------------------------------------------------------ reactions

    async def add_reaction(self, request: web.Request) -> web.Response:
        info = request.match_info
        channel_id = self.state.channel(info["channel_id"])["id"]
        await self.reactions.add(
            channel_id,
            info["message_id"],
            self.state.bot,
            info["emoji"],
            permissions=self.state.bot_permissions_in(channel_id),
        )
        return no_content()

    async def remove_reaction(self, request: web.Request) -> web.Response:
        info = request.match_info
        channel_id = self.state.channel(info["channel_id"])["id"]
        user_id = self.state.bot.id if info["user_id"] == "@me" else info["user_id"]
        user = self.state.users.get(user_id)
        if user is None:
            raise ApiError(404, 10013, "Unknown User")
        await self.reactions.remove(
            channel_id,
            info["message_id"],
            user,
            info["emoji"],
            permissions=self.state.bot_permissions_in(channel_id),
        )
        return no_content()

    async def reaction_users(self, request: web.Request) -> web.Response:
        info = request.match_info
        limit = _int_param(request.query, "limit", 25)
        if not 1 <= limit <= 100:
            raise invalid_form("limit", "NUMBER_TYPE_MAX", "Must be between 1 and 100.")
        users = self.reactions.users(
            info["channel_id"],
            info["message_id"],
            info["emoji"],
            limit=limit,
            after=_snowflake_param(request.query, "after"),
        )
        return json_response(users)

    async def clear_reactions(self, request: web.Request) -> web.Response:
        """All of a message's reactions, or (with ``{emoji}`` in the route) one emoji's."""
        info = request.match_info
        channel_id = self.state.channel(info["channel_id"])["id"]
        await self.reactions.clear(
            channel_id,
            info["message_id"],
            info.get("emoji"),
            permissions=self.state.bot_permissions_in(channel_id),
        )
        return no_content()

    # ------------------------------------------------------------------ messages

    def _visible(self, payload: Payload) -> Payload:
        """A message as REST serves it: no ``member`` (only gateway events carry the author's
        and the mentioned people's member fields), and no content without the intent."""
        payload = without_members(payload)
        if self.gateway.allowed_privileged_intents & INTENT_MESSAGE_CONTENT:
            return payload
        return hide_content(payload, self.state.bot.id)

    async def get_messages(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self.state.channel(channel_id)
        query = request.query
        limit = _int_param(query, "limit", 50)
        if not 1 <= limit <= 100:
            raise invalid_form("limit", "NUMBER_TYPE_MAX", "Must be between 1 and 100.")
        page = self.state.page(
            channel_id,
            limit,
            before=_snowflake_param(query, "before"),
            after=_snowflake_param(query, "after"),
            around=_snowflake_param(query, "around"),
        )
        return json_response([self._visible(message) for message in page])

    async def get_message(self, request: web.Request) -> web.Response:
        raw = self.state.raw_message(
            request.match_info["channel_id"], request.match_info["message_id"]
        )
        return json_response(self._visible(self.state.render(raw)))

    async def post_message(self, request: web.Request) -> web.Response:
        channel_id = self.state.channel(request.match_info["channel_id"])["id"]
        permissions = self.state.bot_permissions_in(channel_id)
        uploads: tuple[Upload, ...] = request[FILES]
        if uploads and not permissions & ATTACH_FILES:
            raise missing_permissions()
        self.threads.check_post(channel_id, permissions=permissions)
        message = self.bot_message(channel_id, request[BODY] or {}, uploads)
        await self.threads.posted(channel_id, self.state.bot)
        await self.gateway.dispatch_message("MESSAGE_CREATE", message)
        return json_response(message)

    def bot_message(
        self,
        channel_id: str,
        body: Payload,
        uploads: tuple[Upload, ...] = (),
        *,
        extra: Payload | None = None,
        stored: bool = True,
    ) -> Payload:
        """Validate a message body the bot sent and store the message Discord would create
        (``stored=False``: an ephemeral one, kept out of the channel)."""
        content = body.get("content") or ""
        if not isinstance(content, str):
            content = str(content)
        if len(content) > MAX_CONTENT:
            raise invalid_form(
                "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
            )
        loading = (extra or {}).get("flags", 0) & MESSAGE_FLAG_LOADING
        empty = not (content or body.get("embeds") or uploads or body.get("components"))
        if empty and not loading:
            raise ApiError(400, 50006, "Cannot send an empty message")
        reply_to = self._reply_target(body.get("message_reference"))
        mentions, roles, everyone = self._mentions(channel_id, content, body, reply_to)
        flags = int(body.get("flags") or 0) | int((extra or {}).get("flags", 0))
        attachments = self.attachments.for_message(
            channel_id,
            uploads,
            body.get("attachments"),
            ephemeral=bool(flags & MESSAGE_FLAG_EPHEMERAL),
        )
        message_extra: Payload = {
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "attachments": attachments,
            "tts": bool(body.get("tts", False)),
            "flags": int(body.get("flags") or 0),
        }
        if body.get("nonce") is not None:
            message_extra["nonce"] = body["nonce"]
        return self.state.create_message(
            channel_id,
            self.state.bot,
            content,
            reply_to=reply_to,
            mentions=mentions,
            mention_roles=roles,
            mention_everyone=everyone,
            extra=message_extra | (extra or {}),
            stored=stored,
        )

    def _reply_target(self, reference: Any) -> str | None:
        if not reference:
            return None
        message_id = str(reference.get("message_id", ""))
        if message_id.isdigit() and int(message_id) in self.state.message_channel:
            return message_id
        if reference.get("fail_if_not_exists", True):
            raise invalid_form(
                "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
            )
        return None

    def _mentions(
        self, channel_id: str, content: str, body: Payload, reply_to: str | None
    ) -> tuple[list[DceUser], list[str], bool]:
        """Who the message pings, applying ``allowed_mentions`` the way Discord does."""
        allowed = body.get("allowed_mentions")
        if allowed is None:
            parse = {"users", "roles", "everyone"}
            users: set[str] = set()
            roles: set[str] = set()
            replied_user = True
        else:
            parse = set(allowed.get("parse") or [])
            users = {str(u) for u in allowed.get("users") or []}
            roles = {str(r) for r in allowed.get("roles") or []}
            replied_user = bool(allowed.get("replied_user", False))
        mentioned = [
            user
            for user in self.state.mentioned_users(content)
            if "users" in parse or user.id in users
        ]
        if reply_to is not None and replied_user:
            where = self.state.message_channel[int(reply_to)]
            author_id = self.state.messages[where].by_id[int(reply_to)]["author"]["id"]
            author = self.state.users.get(author_id)
            if author is not None and author not in mentioned:
                mentioned.append(author)
        guild_id = self.state.channels[channel_id].get("guild_id")
        guild = self.state.guilds.get(guild_id) if guild_id else None
        mention_roles = [
            role_id
            for role_id in dict.fromkeys(ROLE_MENTION.findall(content))
            if guild is not None
            and role_id in guild.roles
            and ("roles" in parse or role_id in roles)
        ]
        everyone = (
            guild is not None
            and "everyone" in parse
            and EVERYONE_MENTION.search(content) is not None
            and bool(self.state.bot_permissions_in(channel_id) & MENTION_EVERYONE)
        )
        return mentioned, mention_roles, everyone

    async def edit_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        message_id = request.match_info["message_id"]
        raw = self.state.raw_message(channel_id, message_id)
        if raw["author"]["id"] != self.state.bot.id:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        uploads: tuple[Upload, ...] = request[FILES]
        if uploads and not self.state.bot_permissions_in(channel_id) & ATTACH_FILES:
            raise missing_permissions()
        changes = self.edit_changes(raw, request[BODY] or {}, uploads)
        message = self.state.edit_message(channel_id, message_id, changes)
        await self.gateway.dispatch_message("MESSAGE_UPDATE", message)
        return json_response(message)

    def edit_changes(
        self, raw: Payload, body: Payload, uploads: tuple[Upload, ...] = ()
    ) -> Payload:
        """What an edit of the bot's message changes, validated as Discord does. Files are
        added to the attachments kept (all of them unless the body lists which)."""
        channel_id = raw["channel_id"]
        changes: Payload = {}
        if "content" in body:
            content = body["content"] or ""
            if len(content) > MAX_CONTENT:
                raise invalid_form(
                    "content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."
                )
            mentions, roles, everyone = self._mentions(channel_id, content, body, None)
            changes |= {
                "content": content,
                "mentions": [self.state.mention(channel_id, user) for user in mentions],
                "mention_roles": roles,
                "mention_everyone": everyone,
            }
        for key in ("embeds", "components"):
            if key in body:
                changes[key] = body[key] or []
        if uploads or "attachments" in body:
            changes["attachments"] = self.attachments.for_message(
                channel_id,
                uploads,
                body.get("attachments"),
                kept=raw.get("attachments") or [],
                ephemeral=bool(raw.get("flags", 0) & MESSAGE_FLAG_EPHEMERAL),
            )
        # Of the flags, an edit changes only whether embeds are suppressed; the loading state
        # of a deferral ends.
        flags = int(raw.get("flags") or 0) & ~(MESSAGE_FLAG_LOADING | MESSAGE_FLAG_SUPPRESS_EMBEDS)
        if "flags" in body:
            flags |= int(body["flags"] or 0) & MESSAGE_FLAG_SUPPRESS_EMBEDS
        else:
            flags |= int(raw.get("flags") or 0) & MESSAGE_FLAG_SUPPRESS_EMBEDS
        changes["flags"] = flags
        return changes

    async def delete_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        message_id = request.match_info["message_id"]
        raw = self.state.raw_message(channel_id, message_id)
        if raw["author"]["id"] != self.state.bot.id:
            if self.state.is_private(channel_id):
                raise ApiError(403, 50003, "Cannot execute action on a DM channel")
            if not self.state.bot_permissions_in(channel_id) & MANAGE_MESSAGES:
                raise missing_permissions()
        event = self.state.delete_message(channel_id, message_id)
        await self.gateway.dispatch_message("MESSAGE_DELETE", event)
        return no_content()

    async def typing(self, request: web.Request) -> web.Response:
        self.state.channel(request.match_info["channel_id"])
        return no_content()


def _int_param(query: Any, name: str, default: int) -> int:
    value = query.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError as error:
        raise invalid_form(name, "NUMBER_TYPE_COERCE", f"Value {value!r} is not int.") from error


def _snowflake_param(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    if not value.isdigit():
        raise invalid_form(name, "NUMBER_TYPE_COERCE", f"Value {value!r} is not snowflake.")
    return int(value)
