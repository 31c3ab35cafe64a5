"""The fake Discord gateway: a websocket speaking Discord's JSON gateway protocol (v10).

It follows what nextcord relies on: HELLO, heartbeat ACKs, IDENTIFY → READY then one GUILD_CREATE
per guild, sequence numbers on every dispatch, RESUME replaying the dispatches the client missed
followed by RESUMED, INVALID_SESSION, RECONNECT and Discord's close codes (4004 bad token,
4014 disallowed privileged intents …). ``compress=zlib-stream`` is honoured (one zlib stream per
connection, each frame ending in a sync flush) because nextcord always asks for it.

Sessions outlive their connection: dispatches to a disconnected session are buffered (up to
``BUFFER_LIMIT`` frames) so a client that resumes gets exactly what it missed.

A session identified with ``shard: [id, count]`` gets what Discord sends that shard: the guilds
with ``(guild_id >> 22) % count == id`` and their events, and direct messages only on shard 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import traceback
import zlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web
from pydantic import BaseModel, ConfigDict

from bot.demo.discord_state import DiscordState, Payload, Signal, hide_content
from conversation.replay import user_payload

GATEWAY_PATH = "/gateway-ws"
RESUME_PATH = "/gateway-ws/resume"
BUFFER_LIMIT = 5000

INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_GUILD_MESSAGE_REACTIONS = 1 << 10
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_DIRECT_MESSAGE_REACTIONS = 1 << 13
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT

OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_PRESENCE = 0, 1, 2, 3
OP_RESUME, OP_RECONNECT, OP_REQUEST_MEMBERS, OP_INVALID_SESSION = 6, 7, 8, 9
OP_HELLO, OP_HEARTBEAT_ACK = 10, 11


class GatewayFrame(BaseModel):
    """A frame the client sent (the token is redacted), kept for assertions."""

    model_config = ConfigDict(frozen=True)

    op: int
    data: Any
    session_id: str | None
    time: datetime


class GatewayConnection(BaseModel):
    """One websocket connection the client opened: which URL, which query."""

    model_config = ConfigDict(frozen=True)

    path: str
    query: dict[str, str]
    time: datetime


class _Connection:
    def __init__(self, ws: web.WebSocketResponse, *, compress: bool) -> None:
        self.ws = ws
        self.compressor = zlib.compressobj() if compress else None
        self.lock = asyncio.Lock()
        self.session: Session | None = None
        self.server_closed = False

    async def close(self, code: int, message: bytes) -> None:
        self.server_closed = True
        await self.ws.close(code=code, message=message)

    async def send(self, frame: Payload) -> None:
        text = json.dumps(frame)
        # Compression and write must happen in one order: the zlib stream is shared.
        async with self.lock:
            if self.compressor is not None:
                data = self.compressor.compress(text.encode()) + self.compressor.flush(
                    zlib.Z_SYNC_FLUSH
                )
                await self.ws.send_bytes(data)
            else:
                await self.ws.send_str(text)


@dataclass
class Session:
    id: str
    intents: int
    seq: int = 0
    buffer: deque[Payload] = field(default_factory=lambda: deque(maxlen=BUFFER_LIMIT))
    connection: _Connection | None = None
    valid: bool = True
    shard: tuple[int, int] = (0, 1)

    def receives(self, guild_id: object) -> bool:
        """Whether this session's shard gets events of the guild (``None``: a DM)."""
        shard_id, shard_count = self.shard
        if guild_id is None:
            return shard_id == 0
        return (int(str(guild_id)) >> 22) % shard_count == shard_id


def _guild_of(event: str, data: Payload) -> object:
    if event in ("GUILD_CREATE", "GUILD_UPDATE", "GUILD_DELETE"):
        return data.get("id")
    return data.get("guild_id")


class Gateway:
    """Websocket endpoint plus the scripted faults tests trigger on live sessions."""

    def __init__(
        self,
        state: DiscordState,
        *,
        token: str,
        allowed_privileged_intents: int,
        heartbeat_interval_ms: int,
    ) -> None:
        self.state = state
        self.token = token
        self.allowed_privileged_intents = allowed_privileged_intents
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.base_url = ""  # set by the server once it knows its port
        self.sessions: dict[str, Session] = {}
        self.frames: list[GatewayFrame] = []
        self.connections: list[GatewayConnection] = []
        self.replayed: list[int] = []  # per successful RESUME: how many dispatches were replayed
        self.send_errors: list[str] = []
        self.server_errors: list[str] = []
        self.changed = Signal()
        self._live: set[_Connection] = set()
        self._open = asyncio.Event()
        self._open.set()
        self._stopping = False

    # ------------------------------------------------------------------ counters for tests

    def frames_with_op(self, op: int) -> list[GatewayFrame]:
        return [frame for frame in self.frames if frame.op == op]

    @property
    def identify_count(self) -> int:
        return len(self.frames_with_op(OP_IDENTIFY))

    @property
    def resume_count(self) -> int:
        return len(self.replayed)

    @property
    def connected_count(self) -> int:
        return sum(1 for conn in self._live if conn.session is not None)

    # ------------------------------------------------------------------ websocket handler

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await self._open.wait()
        if self._stopping:
            return web.Response(status=503, text="fake Discord is stopping")
        ws = web.WebSocketResponse(timeout=2.0, max_msg_size=0)
        await ws.prepare(request)
        query = dict(request.query)
        self.connections.append(
            GatewayConnection(path=request.path, query=query, time=datetime.now(UTC))
        )
        conn = _Connection(ws, compress=query.get("compress") == "zlib-stream")
        self._live.add(conn)
        try:
            if query.get("encoding", "json") != "json":
                await conn.close(4002, message=b"Only encoding=json is supported by the fake.")
                return ws
            if query.get("v", "10") not in {"9", "10"}:
                await conn.close(4012, message=b"Invalid API version.")
                return ws
            await conn.send(
                {
                    "op": OP_HELLO,
                    "d": {"heartbeat_interval": self.heartbeat_interval_ms},
                    "s": None,
                    "t": None,
                }
            )
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    await conn.close(4002, message=b"Decode error.")
                    break
                await self._on_frame(conn, json.loads(message.data))
        except Exception:  # a bug in the fake: recorded so the test fixture can fail on it
            self.server_errors.append(traceback.format_exc())
            await conn.close(1011, message=b"fake Discord bug")
        finally:
            self._live.discard(conn)
            session = conn.session
            if session is not None and session.connection is conn:
                session.connection = None
                # A client closing with 1000/1001 ends its session, as on Discord: stop buffering.
                if not conn.server_closed and ws.close_code in (1000, 1001):
                    session.valid = False
            self.changed.notify()
        return ws

    async def _on_frame(self, conn: _Connection, frame: Payload) -> None:
        op = frame.get("op")
        data = frame.get("d")
        if isinstance(data, dict) and "token" in data:
            data = data | {"token": "<redacted>"}
        session_id = conn.session.id if conn.session else None
        self.frames.append(
            GatewayFrame(op=op, data=data, session_id=session_id, time=datetime.now(UTC))
        )
        self.changed.notify()
        if op == OP_HEARTBEAT:
            await conn.send({"op": OP_HEARTBEAT_ACK, "d": None, "s": None, "t": None})
        elif op == OP_IDENTIFY:
            await self._identify(conn, frame["d"])
        elif op == OP_RESUME:
            await self._resume(conn, frame["d"])
        elif conn.session is None:
            await conn.close(4003, message=b"Not authenticated.")
        elif op == OP_REQUEST_MEMBERS:
            await self._request_members(conn.session, frame["d"])
        elif op == OP_PRESENCE:
            pass  # recorded above; presence has no effect on the fake's world
        else:
            await conn.close(4001, message=b"Unknown opcode.")

    async def _identify(self, conn: _Connection, data: Payload) -> None:
        if conn.session is not None:
            await conn.close(4005, message=b"Already authenticated.")
            return
        if data.get("token") != self.token:
            await conn.close(4004, message=b"Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int):
            await conn.close(4013, message=b"Invalid intent(s).")
            return
        if intents & PRIVILEGED_INTENTS & ~self.allowed_privileged_intents:
            await conn.close(4014, message=b"Disallowed intent(s).")
            return
        shard = data.get("shard", [0, 1])
        if not (
            isinstance(shard, list)
            and len(shard) == 2
            and all(isinstance(n, int) for n in shard)
            and 0 <= shard[0] < shard[1]
        ):
            await conn.close(4010, message=b"Invalid shard.")
            return
        session = Session(
            id=secrets.token_hex(16), intents=intents, connection=conn, shard=(shard[0], shard[1])
        )
        conn.session = session
        self.sessions[session.id] = session
        state = self.state
        guilds = [guild_id for guild_id in state.guilds if session.receives(guild_id)]
        ready: Payload = {
            "v": 10,
            "user": user_payload(state.bot) | {"verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": guild_id, "unavailable": True} for guild_id in guilds],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": self.base_url + RESUME_PATH,
            "private_channels": [],
            "relationships": [],
            "application": {"id": state.application_id, "flags": 0},
            "_trace": ["fake-discord"],
        }
        if "shard" in data:
            ready["shard"] = data["shard"]
        await self._push(session, "READY", ready)
        for guild_id in guilds:
            await self._push(session, "GUILD_CREATE", state.guild_create(guild_id))
        self.changed.notify()

    async def _resume(self, conn: _Connection, data: Payload) -> None:
        session = self.sessions.get(data.get("session_id") or "")
        seq = data.get("seq") or 0
        missed = [frame for frame in session.buffer if frame["s"] > seq] if session else []
        lost = bool(missed) and missed[0]["s"] != seq + 1
        if session is None or not session.valid or data.get("token") != self.token or lost:
            await conn.send({"op": OP_INVALID_SESSION, "d": False, "s": None, "t": None})
            return
        if session.connection is not None and session.connection is not conn:
            session.connection.session = None
        session.connection = conn
        conn.session = session
        for frame in missed:
            await conn.send(frame)
        await self._push(session, "RESUMED", {"_trace": ["fake-discord"]})
        self.replayed.append(len(missed))
        self.changed.notify()

    async def _request_members(self, session: Session, data: Payload) -> None:
        guild = self.state.guilds.get(str(data.get("guild_id")))
        if guild is None:
            return
        members = list(guild.members.values())
        user_ids = {str(user_id) for user_id in data.get("user_ids") or []}
        if user_ids:
            members = [m for m in members if m["user"]["id"] in user_ids]
        elif data.get("query"):
            query = str(data["query"]).lower()
            members = [m for m in members if m["user"]["username"].lower().startswith(query)]
        if data.get("limit"):
            members = members[: int(data["limit"])]
        chunk: Payload = {
            "guild_id": guild.id,
            "members": members,
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": sorted(user_ids - {m["user"]["id"] for m in members}),
        }
        if data.get("nonce") is not None:
            chunk["nonce"] = data["nonce"]
        await self._push(session, "GUILD_MEMBERS_CHUNK", chunk)

    # ------------------------------------------------------------------ dispatching

    async def _push(self, session: Session, event: str, data: Payload) -> None:
        session.seq += 1
        frame = {"op": OP_DISPATCH, "t": event, "s": session.seq, "d": data}
        session.buffer.append(frame)
        conn = session.connection
        if conn is None:
            return
        try:
            await conn.send(frame)
        except (ConnectionError, RuntimeError) as error:
            # The frame stays buffered: the client gets it when it resumes.
            self.send_errors.append(f"{event} s={session.seq}: {error!r}")

    async def dispatch(self, event: str, data: Payload, *, intent: int | None = None) -> None:
        """Send a dispatch to every valid session whose intents include ``intent`` and whose
        shard has the event's guild."""
        guild_id = _guild_of(event, data)
        for session in list(self.sessions.values()):
            if not session.valid or (intent is not None and not session.intents & intent):
                continue
            if not session.receives(guild_id):
                continue
            await self._push(session, event, data)

    async def dispatch_message(self, event: str, payload: Payload) -> None:
        """MESSAGE_CREATE / _UPDATE / _DELETE / _DELETE_BULK, gated and blanked like Discord."""
        intent = INTENT_GUILD_MESSAGES if payload.get("guild_id") else INTENT_DIRECT_MESSAGES
        for session in list(self.sessions.values()):
            if not session.valid or not session.intents & intent:
                continue
            if not session.receives(payload.get("guild_id")):
                continue
            data = payload
            if not event.startswith("MESSAGE_DELETE") and not session.intents & (
                INTENT_MESSAGE_CONTENT
            ):
                data = hide_content(payload, self.state.bot.id)
            await self._push(session, event, data)

    # ------------------------------------------------------------------ scripted faults

    def _connected(self) -> list[_Connection]:
        return [conn for conn in self._live if conn.session is not None]

    async def send_reconnect(self) -> int:
        """Send op 7 RECONNECT on every identified connection; returns how many."""
        targets = self._connected()
        for conn in targets:
            await conn.send({"op": OP_RECONNECT, "d": None, "s": None, "t": None})
        return len(targets)

    async def invalidate_sessions(self, *, resumable: bool = False) -> int:
        """Send op 9 INVALID_SESSION; a non-resumable one also forgets the session."""
        targets = self._connected()
        for conn in targets:
            if not resumable and conn.session is not None:
                conn.session.valid = False
            await conn.send({"op": OP_INVALID_SESSION, "d": resumable, "s": None, "t": None})
        return len(targets)

    async def close_connections(self, code: int = 4000, message: str = "") -> int:
        """Close every connection with a close code (4000 lets nextcord resume)."""
        targets = list(self._live)
        await asyncio.gather(*(conn.close(code, message.encode()) for conn in targets))
        return len(targets)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """New websocket connections wait at the door until the block ends.

        Lets a test make the client miss dispatches deterministically: hold, trigger a
        reconnect, act while the client is away, release, and check what the RESUME replayed.
        """
        self._open.clear()
        try:
            yield
        finally:
            self._open.set()

    async def wait_for_identified(
        self,
        count: int = 1,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> None:
        await self.changed.wait_for(
            lambda: self.connected_count >= count, timeout, f"{count} identified connection(s)"
        )

    async def wait_for_disconnected(
        self,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - named in the TimeoutError
    ) -> None:
        await self.changed.wait_for(
            lambda: self.connected_count == 0, timeout, "all gateway connections to close"
        )

    async def stop(self) -> None:
        self._stopping = True
        self._open.set()
        await self.close_connections(code=1001, message="fake Discord is stopping")
