"""Every private or undocumented nextcord API the bot uses, fenced in one place.

Each is a name nextcord does not promise to keep; ``tests/test_compat.py`` fails loudly, naming
the one that changed, when an upgrade moves it (pyproject.toml bounds the versions tested).
``conversation/common/compat.py`` holds those of ``conversation/`` (pyrsistent's vector, a detached
connection state).

- ``nextcord.http.Route.BASE``: the REST base URL, a class attribute and so process-wide.
- ``Client._connection``: the client's connection state, needed to build a ``Message`` from a
  raw event's payload.
- ``Thread._state``: a thread's connection state, whose HTTP client asks Discord whether one user
  joined the thread (nextcord only wraps the list of all members, which needs the privileged
  members intent; ``GET /channels/{id}/thread-members/{user}`` does not).
"""

from __future__ import annotations

from typing import Any

import nextcord
from nextcord.http import Route


def rest_base() -> str:
    """Where every nextcord client in this process sends its REST requests."""
    return str(Route.BASE)


def set_rest_base(url: str) -> None:
    """Point every nextcord client in this process at ``url`` (one per process: a class
    attribute), before its first request."""
    Route.BASE = url  # type: ignore[misc]


def message_from_payload(
    client: nextcord.Client, channel: Any, data: dict[str, Any]
) -> nextcord.Message:
    """A ``Message`` built from a raw gateway payload, bound to ``client``'s connection state."""
    return nextcord.Message(state=client._connection, channel=channel, data=data)  # type: ignore[arg-type]


async def is_thread_member(thread: nextcord.Thread, user_id: int) -> bool:
    """Whether Discord counts ``user_id`` among ``thread``'s members (it answers 404 if not)."""
    route = Route(
        "GET",
        "/channels/{channel_id}/thread-members/{user_id}",
        channel_id=thread.id,
        user_id=user_id,
    )
    try:
        await thread._state.http.request(route)
    except nextcord.NotFound:
        return False
    return True
