"""Shared fixtures: local fake servers the real clients talk to (no mocks of nextcord/aiohttp)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.demo.discord_server import FakeDiscord, make_nextcord_client
from tests.fakes.zygote import fork_spawned_processes

# ----------------------------------------------------------------------------- bytecode

# The suite starts about a hundred interpreters that import the bot, and each xdist worker
# imports every test module: where PYTHONDONTWRITEBYTECODE is set (the Dockerfile sets it; so
# may a machine), each of them compiled the bot again and pytest rewrote every test module's
# asserts again, about a tenth of the suite's CPU time. The caches go to __pycache__
# (gitignored); this runs in pytest's main process before it starts the workers, which
# inherit it, as does every Python a test starts.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


# ----------------------------------------------------------------------------- workers


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core, and one more. Many tests wait on a server, a process or
    a timeout rather than compute; a third worker on two cores computes meanwhile. Measured
    from a fresh clone on the two-core machine, idle: 5 min 8 s with two workers, 4 min 13 s
    with three, the CPU time the same (7.7 and 7.4 CPU-minutes)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return cores + 1


@pytest.fixture(scope="session", autouse=True)
def _spawned_processes_fork(tmp_path_factory: pytest.TempPathFactory) -> None:
    """multiprocessing's spawned processes here (the goose3 workers of every command a test
    runs in this process) start forked from one that imported goose3 once: ``fakes/zygote.py``
    says why and how they stay separate programs."""
    fork_spawned_processes(tmp_path_factory.mktemp("zygote"))


# ----------------------------------------------------------------------------- no internet

NETGUARD = Path(__file__).parent / "fakes" / "netguard"


def _guard_the_network() -> Path:
    """Refuse non-loopback lookups and connections here and in every Python the tests start
    (``tests/fakes/netguard/sitecustomize.py`` says why); returns the file they are noted in."""
    spec = importlib.util.spec_from_file_location(
        "threadwise_netguard", NETGUARD / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    handle, name = tempfile.mkstemp(prefix="threadwise-netlog-", suffix=".txt")
    os.close(handle)
    os.environ[guard.LOG_VARIABLE] = name
    os.environ["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(NETGUARD), os.environ.get("PYTHONPATH", "")) if part
    )
    guard.install()
    return Path(name)


NETLOG = _guard_the_network()


@pytest.fixture(autouse=True)
def _stays_offline() -> Iterator[None]:
    """Fails the test that reached (or had a subprocess reach) for a host off this machine."""
    before = NETLOG.stat().st_size
    yield
    with NETLOG.open(encoding="utf-8") as log:
        log.seek(before)
        attempts = log.read().splitlines()
    if attempts:
        pytest.fail("reached for the internet: " + "; ".join(sorted(set(attempts))[:3]))


def pytest_unconfigure(config: pytest.Config) -> None:
    NETLOG.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- order


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (the studies, the bot as a process: 10 to 75 s each on a busy
    machine) start first. Collected in file order, the studies came last, and the suite ended
    with one worker on a minute-long study while the other had nothing left; first, the other
    workers take the short tests meanwhile (xdist's worksteal). A stable sort: each worker
    collects the same order, as xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


# ----------------------------------------------------------------------------- PostgreSQL


class PostgresServer:
    """A PostgreSQL 16 started for the test session from the ``pgserver`` wheel."""

    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.data_dir = data_dir
        self._schemas = 0

    def fresh_url(self) -> str:
        """A URL whose tables live in a new, empty schema (cheaper than a database per test)."""
        import psycopg

        self._schemas += 1
        schema = f"t{os.getpid()}_{self._schemas}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in self.url else "?"
        return f"{self.url}{separator}options=-csearch_path%3D{schema}"

    def data_bytes(self, url: str) -> bytes:
        """The data files of every table, index and TOAST table in the schema ``url`` names
        (the WAL is left out: PostgreSQL recycles it on its own schedule; other tests' schemas
        are left out: their random ids would make a short needle turn up by chance)."""
        import psycopg

        with psycopg.connect(url) as conn:
            paths = [
                path
                for (path,) in conn.execute(
                    "SELECT pg_relation_filepath(r.oid) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "JOIN pg_class r ON r.oid IN (c.oid, c.reltoastrelid) "
                    "OR r.oid IN (SELECT indexrelid FROM pg_index "
                    "WHERE indrelid = c.reltoastrelid) "
                    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')"
                )
                if path
            ]
        files = [f for path in sorted(set(paths)) for f in self.data_dir.glob(path + "*")]
        return b"".join(f.read_bytes() for f in files if f.is_file())


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the whole session (it takes seconds to start); skipped where the wheel
    is missing or the server cannot start on this machine."""
    try:
        import pgserver
        import psycopg
    except ImportError as error:
        pytest.skip(f"PostgreSQL tests need pgserver and psycopg: {error}")
    data_dir = Path(tempfile.mkdtemp(prefix="threadwise-pg-"))
    try:
        server = pgserver.get_server(data_dir / "data", cleanup_mode="stop")
    except Exception as error:
        shutil.rmtree(data_dir, ignore_errors=True)
        pytest.skip(f"PostgreSQL could not start here: {' '.join(str(error).split())[:200]}")
    try:
        import psycopg

        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            # A throwaway server: durability costs time and buys nothing here.
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        yield PostgresServer(server.get_uri(), data_dir / "data")
    finally:
        # Its data is deleted next: stop it without the shutdown checkpoint.
        postmaster = getattr(getattr(server, "_postmaster_info", None), "process", None)
        if postmaster is not None and postmaster.is_running():
            postmaster.send_signal(signal.SIGQUIT)
            with contextlib.suppress(Exception):
                postmaster.wait(10)
        server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A PostgreSQL URL of an empty schema of its own."""
    return postgres_server.fresh_url()


@pytest.fixture(scope="session")
def sentence_model() -> Any:
    """The meaning extra's sentence model (``conversation.selection.meaning``): skipped where
    the extra is not installed (the default install), failed there when
    ``THREADWISE_REQUIRE_MEANING`` is set (``.ci/run`` installs the extra and sets it)."""
    from conversation.selection import load_embedder

    loaded = load_embedder()
    if loaded is None:
        if os.environ.get("THREADWISE_REQUIRE_MEANING"):
            pytest.fail("the meaning extra is required here: pip install -e '.[meaning]'")
        pytest.skip("the meaning extra is not installed (pip install -e '.[meaning]')")
    return loaded
