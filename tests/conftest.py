"""Shared fixtures: local fake servers the real clients talk to (no mocks of nextcord/aiohttp)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.fakes.discord_server import FakeDiscord, make_nextcord_client

# ----------------------------------------------------------------------------- fake Discord


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    """A started fake Discord with nextcord's REST base pointed at it; empty until logs load.

    Fails the test if the fake itself hit a bug (its tracebacks are in ``server_errors``).
    """
    async with FakeDiscord() as fake:
        with fake.nextcord_pointed_here():
            yield fake
    assert not fake.server_errors, "fake Discord raised:\n" + "\n".join(fake.server_errors)


@pytest.fixture
async def connect_client(
    fake_discord: FakeDiscord,
) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """``await connect_client(client=None, **make_nextcord_client kwargs)``: a ready client.

    Load logs first so their guilds arrive in GUILD_CREATE; every client is closed at teardown.
    """
    async with contextlib.AsyncExitStack() as stack:

        async def connect(client: Any = None, **kwargs: Any) -> Any:
            client = client or make_nextcord_client(**kwargs)
            return await stack.enter_async_context(fake_discord.running(client))

        yield connect
