"""The private dependency APIs fenced in ``bot/discord/compat.py`` and
``conversation/common/compat.py`` are still there and still behave as we rely on.

When an upgrade of nextcord or pyrsistent changes one, this file fails first, naming it, instead
of the bot failing somewhere far from the cause. pyproject.toml bounds the versions tested here.
"""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

import nextcord
import pyrsistent
from nextcord.state import ConnectionState
from packaging.requirements import Requirement

from bot.discord import compat as bot_compat
from conversation.common import compat

ROOT = Path(__file__).resolve().parents[1]


def test_pyrsistents_python_vector_is_the_pure_python_one() -> None:
    vector = compat.pvector(range(100)).append(100)
    assert list(vector) == list(range(101)), "pyrsistent._pvector.python_pvector changed"
    assert isinstance(vector, pyrsistent.PVector)
    # The reason to use it: its nodes are plain lists the garbage collector visits once, where
    # the C vector makes every retained version walk every element again.
    assert type(vector).__name__ == "PythonPVector", "python_pvector now returns another vector"


def test_a_detached_connection_state_builds_messages_without_discord() -> None:
    parameters = inspect.signature(ConnectionState.__init__).parameters
    for name in ("dispatch", "handlers", "hooks", "http", "loop", "max_messages"):
        assert name in parameters, f"nextcord ConnectionState() no longer takes {name}="
    state = compat.detached_state(http=None)
    guild = compat.add_guild(
        state,
        {
            "id": "10",
            "name": "g",
            "owner_id": "1",
            "roles": [],
            "channels": [{"id": "11", "type": 0, "name": "general", "position": 0}],
            "members": [],
            "member_count": 0,
        },
    )
    assert isinstance(guild, nextcord.Guild), "ConnectionState._add_guild_from_data changed"
    assert guild.get_channel(11) is not None


def test_the_rest_base_is_one_class_attribute_for_the_process() -> None:
    previous = bot_compat.rest_base()
    try:
        bot_compat.set_rest_base("http://127.0.0.1:9/api/v10")
        route = nextcord.http.Route("GET", "/users/@me")
        assert route.url == "http://127.0.0.1:9/api/v10/users/@me", "nextcord Route.BASE changed"
    finally:
        bot_compat.set_rest_base(previous)
    assert bot_compat.rest_base() == previous


async def test_a_client_keeps_its_connection_state_where_we_read_it() -> None:
    client = nextcord.Client(intents=nextcord.Intents.none())
    assert isinstance(client._connection, ConnectionState), "nextcord Client._connection changed"


def test_a_process_pool_shows_its_worker_processes() -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from conversation.common.compat import pool_processes

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        assert pool.submit(abs, -1).result(timeout=60) == 1
        (process,) = pool_processes(pool)
        assert process.is_alive()
    with ThreadPoolExecutor(max_workers=1) as threads:
        assert pool_processes(threads) == []


def test_the_tested_versions_are_bounded_in_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = {Requirement(text).name: Requirement(text) for text in project["dependencies"]}
    for name in ("nextcord", "pyrsistent"):
        assert any(spec.operator in ("<", "<=") for spec in requirements[name].specifier), (
            f"{name}: bound it in pyproject.toml at the versions tests/test_compat.py passed on"
        )
        installed = getattr(__import__(name), "__version__", None)
        if installed is not None:
            assert requirements[name].specifier.contains(installed), f"{name} {installed}"
