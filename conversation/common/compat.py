"""Every private or undocumented dependency API ``conversation/`` uses, fenced in one place.

Each is a name a dependency does not promise to keep; ``tests/test_compat.py`` fails loudly, naming
the one that changed, when an upgrade moves it (pyproject.toml bounds the versions tested).
``bot/discord/compat.py`` holds the bot's own; this module never imports ``bot/``.

- ``pyrsistent._pvector.python_pvector``: the pure-Python persistent vector (why: see
  :data:`pvector`).
- ``nextcord.state.ConnectionState(http=..., loop=None)``: a connection state with no gateway,
  to build nextcord objects from payloads (a replayed log).
- ``ConnectionState._add_guild_from_data``: how such a state learns a guild from its payload.
- ``ProcessPoolExecutor._processes``: the worker processes of a pool, to kill a stuck goose3
  worker (Python 3.14 adds ``terminate_workers``; before it there is no public handle).
"""

from __future__ import annotations

import multiprocessing.process
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pyrsistent import PVector
from pyrsistent._pvector import python_pvector

if TYPE_CHECKING:  # the message graph imports this module and stays free of nextcord
    import nextcord
    from nextcord.state import ConnectionState

pvector: Callable[[Iterable[Any]], PVector[Any]] = python_pvector
"""The pure-Python persistent vector, on purpose. The C one (``pyrsistent.pvector``) reports every
element to the garbage collector from every vector object, so each retained version (a branch
head, a snapshot) makes every full collection walk the whole conversation again: measured with
2,000 kept versions of a 1e5-message vector, gc.collect() took 1.9 s and each edit ~1 ms. The
Python vector's nodes are ordinary lists shared between versions, so the collector visits each
once (10 ms there), for a few microseconds more per edit. pyrsistent has no public name for it."""


def detached_state(http: object) -> ConnectionState:
    """A nextcord connection state with no gateway or Discord behind it, to build objects only.

    ``http`` serves what objects fetch (attachments); nothing here may reach Discord.
    """
    from nextcord.state import ConnectionState  # here, so the message graph never loads nextcord

    return ConnectionState(
        dispatch=lambda *args, **kwargs: None,
        handlers={},
        hooks={},
        http=http,  # type: ignore[arg-type]
        loop=None,  # type: ignore[arg-type]
        max_messages=None,
    )


def add_guild(state: ConnectionState, payload: dict[str, Any]) -> nextcord.Guild:
    """The guild of ``payload``, built and kept by ``state`` (so its channels resolve)."""
    return state._add_guild_from_data(payload)  # type: ignore[arg-type]


def pool_processes(executor: Executor) -> list[multiprocessing.process.BaseProcess]:
    """The worker processes of a process pool (none for a thread pool)."""
    return list((getattr(executor, "_processes", None) or {}).values())
