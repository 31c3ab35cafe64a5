"""A local fake Discord that the real nextcord client connects to.

One aiohttp server on 127.0.0.1 (random free port) serves the REST API under ``/api/v10`` and the
gateway websocket. It is loaded with DiscordChatExporter logs (``conversation.replay.dce``), records
every REST request and gateway frame, echoes the bot's posts and edits as gateway dispatches, lets
tests speak as users (``user_says`` …), and scripts faults: latency and errors per route, gateway
RECONNECT / INVALID_SESSION / close codes, and refused privileged intents (close 4014).

nextcord is pointed at it by setting the class attribute ``nextcord.http.Route.BASE`` to
:attr:`FakeDiscord.api_base` (see :meth:`FakeDiscord.nextcord_pointed_here`), then started with
:attr:`FakeDiscord.token`. Everything runs on the test's event loop; nothing is global but that
one class attribute, which the context manager restores.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.demo.discord_files import ATTACHMENTS_PATH
from bot.demo.discord_gateway import (
    GATEWAY_PATH,
    INTENT_GUILDS,
    PRIVILEGED_INTENTS,
    RESUME_PATH,
    Gateway,
)
from bot.demo.discord_interactions import InteractionApi
from bot.demo.discord_permissions import DEFAULT_BOT_PERMISSIONS
from bot.demo.discord_reactions import ReactionChange
from bot.demo.discord_rest import API_PREFIX, RecordedRequest, RestApi, RouteRule
from bot.demo.discord_state import (
    EVERYONE_MENTION,
    MESSAGE_FLAG_LOADING,
    ROLE_MENTION,
    Clock,
    DiscordState,
    InteractionRecord,
    Payload,
)
from conversation.replay import ChannelExport, DceUser, load_export, user_payload

DEFAULT_BOT_ID = 1_100_000_000_000_000_001
DEFAULT_BOT_NAME = "threadwise"
DEFAULT_TOKEN = "fake-bot-token"


class ManualClock:
    """A clock tests move by hand, so "forty minutes later" costs no waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


class FakeDiscord:
    """The fake server; see the module docstring. Use as ``async with FakeDiscord() as fake``."""

    def __init__(
        self,
        *,
        bot_id: int = DEFAULT_BOT_ID,
        bot_name: str = DEFAULT_BOT_NAME,
        bot_global_name: str | None = None,
        bot_nick: str | None = None,
        application_id: int | None = None,
        token: str = DEFAULT_TOKEN,
        clock: Clock | None = None,
        allowed_privileged_intents: int = PRIVILEGED_INTENTS,
        bot_permissions: int = DEFAULT_BOT_PERMISSIONS,
        heartbeat_interval_ms: int = 41_250,
    ) -> None:
        self.token = token
        self.state = DiscordState(
            bot_id=bot_id,
            bot_name=bot_name,
            bot_global_name=bot_global_name,
            bot_nick=bot_nick,
            application_id=application_id or bot_id,
            clock=clock or (lambda: datetime.now(UTC)),
            bot_permissions=bot_permissions,
        )
        self.gateway = Gateway(
            self.state,
            token=token,
            allowed_privileged_intents=allowed_privileged_intents,
            heartbeat_interval_ms=heartbeat_interval_ms,
        )
        self.rest = RestApi(self.state, self.gateway, token=token)
        self.interactions = InteractionApi(self.rest)
        self._runner: web.AppRunner | None = None
        self._port = 0

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("fake Discord already started")
        app = web.Application()
        app.router.add_get(GATEWAY_PATH, self.gateway.handle)
        app.router.add_get(RESUME_PATH, self.gateway.handle)
        app.router.add_get(ATTACHMENTS_PATH, self.rest.attachments.serve)
        api = self.rest.app()
        self.interactions.add_routes(api.router)
        app.add_subapp(API_PREFIX, api)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self._port = runner.addresses[0][1]
        self.gateway.base_url = f"ws://127.0.0.1:{self._port}"
        self.rest.attachments.base_url = self.base_url

    async def stop(self) -> None:
        if self._runner is None:
            return
        await self.gateway.stop()
        await self._runner.cleanup()
        self._runner = None

    async def __aenter__(self) -> FakeDiscord:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_base(self) -> str:
        """What ``nextcord.http.Route.BASE`` must be set to."""
        return self.base_url + API_PREFIX

    @property
    def server_errors(self) -> list[str]:
        """Bugs in the fake itself (tracebacks); a fixture fails the test if any."""
        return self.rest.server_errors + self.gateway.server_errors

    @contextlib.contextmanager
    def nextcord_pointed_here(self) -> Iterator[None]:
        """Point every nextcord client in this process at the fake, restoring on exit."""
        from bot.discord.compat import rest_base, set_rest_base

        previous = rest_base()
        set_rest_base(self.api_base)
        try:
            yield
        finally:
            set_rest_base(previous)

    @contextlib.asynccontextmanager
    async def running(self, client: Any, *, ready_timeout: float = 5.0) -> AsyncIterator[Any]:
        """Start a nextcord client against the fake, yield it once ready, close it after.

        A client that fails to start (bad token, refused intents …) raises its own exception
        here, e.g. ``nextcord.PrivilegedIntentsRequired``.
        """
        task = asyncio.create_task(client.start(self.token), name="fake-discord-client")
        ready = asyncio.create_task(client.wait_until_ready(), name="fake-discord-ready")
        try:
            done, _ = await asyncio.wait(
                {task, ready}, timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if ready not in done:
                if task in done:
                    task.result()  # the client's own error
                raise TimeoutError(f"nextcord client not ready after {ready_timeout}s")
            yield client
        finally:
            ready.cancel()
            await client.close()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(ready, return_exceptions=True)
            if task.done():
                task.exception()  # retrieved: it was raised above if it mattered
            else:
                await asyncio.wait_for(task, ready_timeout)

    # ------------------------------------------------------------------ world building

    @property
    def bot(self) -> DceUser:
        return self.state.bot

    @property
    def bot_id(self) -> int:
        return int(self.state.bot.id)

    @property
    def application_id(self) -> int:
        return int(self.state.application_id)

    @property
    def allowed_privileged_intents(self) -> int:
        return self.gateway.allowed_privileged_intents

    @allowed_privileged_intents.setter
    def allowed_privileged_intents(self, mask: int) -> None:
        self.gateway.allowed_privileged_intents = mask

    async def load_log(self, source: str | Path | ChannelExport) -> ChannelExport:
        """Load a DCE channel log (guild channel, thread or DM); ids are kept as in the log.

        Loaded while clients are connected, a new guild is dispatched as GUILD_CREATE and a new
        channel as CHANNEL_CREATE (THREAD_CREATE for a thread).
        """
        export = source if isinstance(source, ChannelExport) else load_export(source)
        new_guild, new_channels = self.state.load_export(export)
        if new_guild is not None:
            guild = self.state.guild_create(new_guild)
            await self.gateway.dispatch("GUILD_CREATE", guild, intent=INTENT_GUILDS)
        elif not export.is_private:
            for channel_id in new_channels:
                channel = self.state.channels[channel_id]
                event = "THREAD_CREATE" if "thread_metadata" in channel else "CHANNEL_CREATE"
                await self.gateway.dispatch(event, channel, intent=INTENT_GUILDS)
        return export

    async def add_thread(
        self,
        thread_id: int,
        parent_id: int,
        name: str,
        *,
        private: bool = False,
        archived: bool = False,
        members: Iterable[int | str | DceUser] = (),
    ) -> Payload:
        """A thread under a guild channel, joined by ``members``; an active one is dispatched
        as THREAD_CREATE, an archived one only answers REST (as on Discord, where the bot's
        cache holds active threads only)."""
        joined = [self.state.user(member).id for member in members]
        thread = self.state.add_thread(
            str(thread_id),
            str(parent_id),
            name,
            private=private,
            archived=archived,
            members=joined,
        )
        if not archived:
            await self.gateway.dispatch("THREAD_CREATE", thread, intent=INTENT_GUILDS)
        return thread

    async def add_text_channel(
        self, channel_id: int, guild_id: int, name: str, *, category_id: int | None = None
    ) -> Payload:
        """A text channel in a loaded guild, optionally under a category; dispatched as
        CHANNEL_CREATE (the category first) to connected clients."""
        created = self.state.add_text_channel(
            str(channel_id),
            str(guild_id),
            name,
            category_id=None if category_id is None else str(category_id),
        )
        for channel in created:
            await self.gateway.dispatch("CHANNEL_CREATE", channel, intent=INTENT_GUILDS)
        return created[-1]

    def add_user(
        self, user_id: int, name: str, *, nick: str | None = None, bot: bool = False
    ) -> DceUser:
        """Register a user who is not in any loaded log, so tests can speak as them."""
        user = DceUser(id=str(user_id), name=name, nickname=nick, is_bot=bot)
        return self.state.add_user(user)

    # ------------------------------------------------------------------ speaking as users

    async def user_says(
        self,
        channel_id: int | str,
        author: int | str | DceUser,
        content: str,
        *,
        reply_to: int | str | None = None,
        mentions: Iterable[int | str | DceUser] = (),
        mention_author: bool = True,
        extra: Payload | None = None,
    ) -> Payload:
        """A user posts a message: stored, then dispatched as MESSAGE_CREATE.

        Mentions are parsed from ``<@id>`` in the content as Discord does; ``mentions`` adds
        users as mentioned without changing the content. A reply carries ``referenced_message``
        and, with ``mention_author`` (the Discord client's default), pings the replied author.
        ``extra``: more payload fields (``embeds``, a ``webhook_id``).
        """
        user = self.state.user(author)
        self.rest.threads.check_post(str(channel_id))
        message = self.state.create_message(
            channel_id,
            user,
            content,
            reply_to=reply_to,
            mentions=self._mentions(content, mentions, reply_to if mention_author else None),
            mention_roles=self._roles(channel_id, content),
            mention_everyone=self._everyone(channel_id, content),
            extra=extra,
        )
        await self.rest.threads.posted(message["channel_id"], user)
        await self.gateway.dispatch_message("MESSAGE_CREATE", message)
        return message

    def _mentions(
        self,
        content: str,
        extra: Iterable[int | str | DceUser],
        replied_to: int | str | None,
    ) -> list[DceUser]:
        users = {user.id: user for user in self.state.mentioned_users(content)}
        for item in extra:
            user = self.state.user(item)
            users.setdefault(user.id, user)
        if replied_to is not None:
            where = self.state.message_channel.get(int(replied_to))
            if where is not None:
                author_id = self.state.messages[where].by_id[int(replied_to)]["author"]["id"]
                users.setdefault(author_id, self.state.user(author_id))
        return list(users.values())

    def _roles(self, channel_id: int | str, content: str) -> list[str]:
        guild = self.state.guilds.get(self.state.guild_of(channel_id) or "")
        if guild is None:
            return []
        return [r for r in dict.fromkeys(ROLE_MENTION.findall(content)) if r in guild.roles]

    def _everyone(self, channel_id: int | str, content: str) -> bool:
        return bool(self.state.guild_of(channel_id)) and bool(EVERYONE_MENTION.search(content))

    async def edit_message(
        self, channel_id: int | str, message_id: int | str, content: str
    ) -> Payload:
        """A user edits their message: MESSAGE_UPDATE with the full new payload."""
        mentions = self._mentions(content, (), None)
        message = self.state.edit_message(
            channel_id,
            message_id,
            {
                "content": content,
                "mentions": [self.state.mention(str(channel_id), user) for user in mentions],
                "mention_roles": self._roles(channel_id, content),
                "mention_everyone": self._everyone(channel_id, content),
            },
        )
        await self.gateway.dispatch_message("MESSAGE_UPDATE", message)
        return message

    async def delete_message(self, channel_id: int | str, message_id: int | str) -> None:
        """A message disappears: MESSAGE_DELETE; later fetches answer 404 Unknown Message."""
        event = self.state.delete_message(channel_id, message_id)
        await self.gateway.dispatch_message("MESSAGE_DELETE", event)

    async def delete_messages(self, channel_id: int | str, message_ids: list[int | str]) -> None:
        """A moderator's bulk deletion: one MESSAGE_DELETE_BULK for all of them."""
        events = [self.state.delete_message(channel_id, i) for i in message_ids]
        bulk = {key: value for key, value in events[0].items() if key != "id"}
        await self.gateway.dispatch_message(
            "MESSAGE_DELETE_BULK", bulk | {"ids": [event["id"] for event in events]}
        )

    async def user_starts_thread(
        self,
        channel_id: int | str,
        message_id: int | str,
        user: int | str | DceUser,
        name: str,
        *,
        auto_archive_duration: int = 1440,
    ) -> Payload:
        """A user starts a public thread from a message, with the events Discord sends
        (``discord_threads``); returns the thread."""
        body = {"name": name, "auto_archive_duration": auto_archive_duration}
        return await self.rest.threads.start_from_message(
            str(channel_id), str(message_id), body, by=self.state.user(user)
        )

    async def user_reacts(
        self,
        channel_id: int | str,
        message_id: int | str,
        user: int | str | DceUser,
        emoji: str,
    ) -> bool:
        """A user reacts to a message (MESSAGE_REACTION_ADD); False if they had already."""
        return await self.rest.reactions.add(channel_id, message_id, self.state.user(user), emoji)

    async def user_unreacts(
        self,
        channel_id: int | str,
        message_id: int | str,
        user: int | str | DceUser,
        emoji: str,
    ) -> bool:
        """A user takes their reaction back (MESSAGE_REACTION_REMOVE); False if there was none."""
        return await self.rest.reactions.remove(
            channel_id, message_id, self.state.user(user), emoji
        )

    # ------------------------------------------------------------------ permissions

    def bot_permissions_in(self, channel_id: int | str) -> int:
        """What the bot may do in a channel (``discord_permissions``), as Discord computes it."""
        return self.state.bot_permissions_in(channel_id)

    async def set_bot_overwrite(
        self, channel_id: int | str, *, allow: int = 0, deny: int = 0
    ) -> Payload:
        """Give or take permissions from the bot in one guild channel (and its threads) with a
        member overwrite, as a server admin would; ``allow=deny=0`` removes it. Dispatched as
        CHANNEL_UPDATE, so the client's cache knows, as on Discord."""
        channel = self.state.channel(channel_id)
        if channel.get("guild_id") is None or "thread_metadata" in channel:
            raise ValueError(f"channel {channel_id} takes no overwrites: not a guild channel")
        overwrites = [
            o
            for o in channel.get("permission_overwrites") or []
            if (str(o["id"]), int(o.get("type", 0))) != (self.state.bot.id, 1)
        ]
        if allow or deny:
            overwrites.append(
                {"id": self.state.bot.id, "type": 1, "allow": str(allow), "deny": str(deny)}
            )
        channel["permission_overwrites"] = overwrites
        await self.gateway.dispatch("CHANNEL_UPDATE", channel, intent=INTENT_GUILDS)
        return channel

    # ------------------------------------------------------------------ reading the world

    def messages(self, channel_id: int | str) -> list[Payload]:
        """The channel's messages, oldest first, as Discord would serve them now."""
        store = self.state.store(channel_id)
        return [self.state.render(store.by_id[message_id]) for message_id in store.ids]

    def message(self, channel_id: int | str, message_id: int | str) -> Payload:
        return self.state.render(self.state.raw_message(channel_id, message_id))

    def bot_messages(
        self, channel_id: int | str | None = None, *, after: int | str | None = None
    ) -> list[Payload]:
        """Messages the bot posted (also interaction replies), oldest first."""
        channel_ids = [str(channel_id)] if channel_id is not None else list(self.state.messages)
        found = []
        for cid in channel_ids:
            store = self.state.store(cid)
            start = bisect.bisect_right(store.ids, int(after)) if after is not None else 0
            for message_id in store.ids[start:]:
                payload = store.by_id[message_id]
                if payload["author"]["id"] == self.state.bot.id:
                    found.append(self.state.render(payload))
        return sorted(found, key=lambda payload: int(payload["id"]))

    def thread_members(self, thread_id: int | str) -> list[int]:
        """Who joined a thread, in the order they joined."""
        return [int(user_id) for user_id in self.state.thread_members.get(str(thread_id), {})]

    def reactions_on(self, message_id: int | str) -> dict[str, list[int]]:
        """Who reacted with what on a message now."""
        on = self.rest.reactions.on(message_id)
        return {emoji: [int(user_id) for user_id in users] for emoji, users in on.items()}

    def reaction_changes(
        self, message_id: int | str | None = None, *, user: int | str | DceUser | None = None
    ) -> list[ReactionChange]:
        """Every reaction added or taken away (on one message, by one user), oldest first."""
        user_id = None if user is None else int(self.state.user(user).id)
        return [
            change
            for change in self.rest.reactions.changes
            if (message_id is None or change.message_id == int(message_id))
            and (user_id is None or change.user_id == user_id)
        ]

    async def wait_for_reaction_changes(
        self,
        message_id: int | str,
        count: int = 1,
        *,
        user: int | str | DceUser | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> list[ReactionChange]:
        """The message's reaction changes (by ``user``), once there are ``count`` of them."""
        found = await self.rest.reactions.changed.wait_for(
            lambda: (
                len(changes := self.reaction_changes(message_id, user=user)) >= count and changes
            ),
            timeout,
            f"{count} reaction change(s) on message {message_id}",
        )
        return list(found)

    def attachment_bytes(self, attachment: Payload | str) -> bytes:
        """What was uploaded as an attachment (its payload, or its id)."""
        return self.rest.attachments.data(attachment)

    async def wait_for_bot_message(
        self,
        channel_id: int | str | None = None,
        *,
        after: int | str | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> Payload:
        """The first bot message (in the channel, newer than ``after``), waiting for it."""
        found = await self.rest.changed.wait_for(
            lambda: self.bot_messages(channel_id, after=after),
            timeout,
            f"a bot message in channel {channel_id} after {after}",
        )
        return found[0]

    # ------------------------------------------------------------------ recorded requests

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.rest.requests

    def requests_to(self, method: str | None = None, pattern: str = "*") -> list[RecordedRequest]:
        """Recorded requests by method and fnmatch path pattern (relative to /api/v10)."""
        probe = RouteRule(pattern=pattern, method=method)
        return [r for r in self.rest.requests if probe.matches(r.method, r.path)]

    def clear_requests(self) -> None:
        self.rest.requests.clear()

    async def wait_for_request(
        self,
        method: str | None,
        pattern: str,
        *,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> list[RecordedRequest]:
        found = await self.rest.changed.wait_for(
            lambda: (hits := self.requests_to(method, pattern)) and len(hits) >= count and hits,
            timeout,
            f"{count} {method or 'any'} request(s) to {pattern}",
        )
        return list(found)

    # ------------------------------------------------------------------ scripted REST faults

    def add_latency(
        self,
        pattern: str,
        seconds: float,
        *,
        method: str | None = None,
        count: int | None = None,
    ) -> RouteRule:
        """Delay matching requests (``count`` of them, None: all) by ``seconds``."""
        return self.rest.add_rule(
            RouteRule(pattern=pattern, method=method, delay=seconds, remaining=count)
        )

    def add_error(
        self,
        pattern: str,
        status: int,
        *,
        method: str | None = None,
        count: int | None = 1,
        code: int | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        is_global: bool = False,
    ) -> RouteRule:
        """Answer matching requests with an error (``count`` times, None: always).

        Bodies default to what Discord sends for the status and route (403 Missing Access,
        404 Unknown Message/Channel, 429 with ``retry_after`` and rate-limit headers …).
        """
        body: Payload | None = None
        if code is not None or message is not None:
            body = {"message": message or f"{status}", "code": code or 0}
        if status == 429:
            body = (body or {}) | {"retry_after": retry_after or 0.05, "global": is_global}
        rule = RouteRule(pattern=pattern, method=method, status=status, body=body, remaining=count)
        return self.rest.add_rule(rule)

    def forbid_history(self, channel_id: int | str, *, count: int | None = None) -> RouteRule:
        """The bot lost access to a channel's history: 403 Missing Access (code 50001)."""
        return self.add_error(f"/channels/{channel_id}/messages*", 403, method="GET", count=count)

    def clear_rules(self) -> None:
        self.rest.rules.clear()

    # ------------------------------------------------------------------ interactions

    async def invoke_command(
        self,
        channel_id: int | str,
        user: int | str | DceUser,
        name: str,
        options: list[Payload] | None = None,
        *,
        permissions: int | None = None,
    ) -> InteractionRecord:
        """A user runs a registered slash command: INTERACTION_CREATE is dispatched.

        ``permissions``: the member's resolved permissions in the channel (default: the bot's).
        """
        channel = self.state.channel(channel_id)
        guild_id = channel.get("guild_id")
        author = self.state.user(user)
        command = self.state.find_command(name, guild_id)
        interaction_id = str(self.state.mint.mint())
        data: Payload = {
            "id": command["id"],
            "name": command["name"],
            "type": command.get("type", 1),
            "options": options or [],
        }
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        payload: Payload = {
            "id": interaction_id,
            "application_id": self.state.application_id,
            "type": 2,
            "token": secrets.token_urlsafe(32),
            "version": 1,
            "data": data,
            "channel_id": channel["id"],
            "channel": channel,
            "app_permissions": str(self.state.bot_permissions_in(channel["id"])),
            "locale": "en-US",
            "entitlements": [],
        }
        if guild_id is not None:
            member = self.state.ensure_member(guild_id, author)
            payload |= {
                "guild_id": guild_id,
                "guild_locale": "en-US",
                "member": member
                | {
                    "permissions": str(
                        self.state.bot_permissions if permissions is None else permissions
                    )
                },
            }
        else:
            payload["user"] = user_payload(author)
        record = InteractionRecord(id=interaction_id, token=payload["token"], payload=payload)
        self.state.interactions[interaction_id] = record
        await self.gateway.dispatch("INTERACTION_CREATE", payload)
        return record

    async def wait_for_interaction_response(
        self,
        record: InteractionRecord,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> Payload:
        """The interaction's callback body (``{"type": 4, "data": …}``), waiting for it."""
        callbacks = await self.rest.changed.wait_for(
            lambda: record.callbacks, timeout, f"a response to interaction {record.id}"
        )
        return callbacks[0]

    def interaction_messages(self, record: InteractionRecord) -> list[Payload]:
        """The messages answering an interaction as its user sees them now, ephemeral ones too:
        the original response, then the follow-ups (a deferral still loading included, with
        the Loading flag; deleted ones left out)."""
        ids = [record.original_message_id, *record.followup_message_ids]
        found = (self.interactions.find(record, message_id) for message_id in dict.fromkeys(ids))
        return [message for message in found if message is not None]

    async def wait_for_interaction_messages(
        self,
        record: InteractionRecord,
        count: int = 1,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> list[Payload]:
        """:meth:`interaction_messages` once ``count`` of them are answers (not loading)."""

        def answered() -> list[Payload]:
            messages = self.interaction_messages(record)
            done = [m for m in messages if not m["flags"] & MESSAGE_FLAG_LOADING]
            return messages if len(done) >= count else []

        return await self.rest.changed.wait_for(
            answered, timeout, f"{count} answer(s) to interaction {record.id}"
        )


def make_nextcord_client(
    *, message_content: bool = True, members: bool = False, **kwargs: Any
) -> Any:
    """A plain ``nextcord.Client`` tuned for the fake: short ``guild_ready_timeout``.

    Default intents plus MESSAGE_CONTENT (what the bot asks for); ``kwargs`` go to the client.
    """
    import nextcord

    intents = nextcord.Intents.default()
    intents.message_content = message_content
    intents.members = members
    kwargs.setdefault("guild_ready_timeout", 0.1)
    return nextcord.Client(intents=intents, **kwargs)
