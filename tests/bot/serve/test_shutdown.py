"""Stopping quickly: the services close at once, and the process leaves without the
interpreter's long teardown (``bot.serve.shutdown``, ``bot.__main__``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from bot.serve.shutdown import closed_together


class Service:
    """A service whose close lasts until every service of ``group`` has begun closing: closed
    one after the other, the first close would wait for ever (here: fail after a timeout)."""

    def __init__(self, name: str, group: dict[str, asyncio.Event], log: list[str]) -> None:
        self.name = name
        self.group = group
        self.log = log
        group[name] = asyncio.Event()
        self.fail_open = self.fail_close = False

    async def __aenter__(self) -> str:
        if self.fail_open:
            raise OSError(f"{self.name} cannot open")
        self.log.append(f"open {self.name}")
        return self.name

    async def __aexit__(self, *exc_info: object) -> None:
        self.group[self.name].set()
        async with asyncio.timeout(2):
            await asyncio.gather(*(event.wait() for event in self.group.values()))
        self.log.append(f"closed {self.name}")
        if self.fail_close:
            raise RuntimeError(f"{self.name} failed to close")


def services(*names: str) -> tuple[list[Service], list[str]]:
    group: dict[str, asyncio.Event] = {}
    log: list[str] = []
    return [Service(name, group, log) for name in names], log


async def test_services_open_in_order_and_close_at_once():
    (articles, model, tools), log = services("articles", "model", "tools")
    async with closed_together(articles, model, tools) as opened:
        assert opened == ["articles", "model", "tools"]
    assert log[:3] == ["open articles", "open model", "open tools"]
    assert sorted(log[3:]) == ["closed articles", "closed model", "closed tools"]


async def test_a_close_that_fails_raises_after_the_others_closed():
    (articles, tools), log = services("articles", "tools")
    tools.fail_close = True
    with pytest.raises(RuntimeError, match="tools failed to close"):
        async with closed_together(articles, tools):
            pass
    assert "closed articles" in log


async def test_a_service_that_cannot_open_closes_those_opened_before():
    (articles, model, tools), log = services("articles", "model", "tools")
    del articles.group["tools"]  # tools never opens, so never closes: the others do not wait
    tools.fail_open = True
    with pytest.raises(OSError, match="tools cannot open"):
        async with closed_together(articles, model, tools):
            pytest.fail("not reached")
    assert sorted(line for line in log if line.startswith("closed")) == [
        "closed articles",
        "closed model",
    ]


async def test_cancelled_while_running_still_closes_everything():
    """SIGTERM cancels the serving task: the closes still all run."""
    (articles, tools), log = services("articles", "tools")

    async def serving() -> None:
        async with closed_together(articles, tools):
            await asyncio.Event().wait()

    task = asyncio.create_task(serving())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(line for line in log if line.startswith("closed")) == [
        "closed articles",
        "closed tools",
    ]


def test_python_m_bot_freezes_the_heap_before_the_interpreters_teardown(tmp_path):
    """Without the freeze, collecting every imported module's garbage at exit took 1.6 s of
    CPU after each command, SIGTERM's stop included. A handler registered first runs last,
    after the command."""
    probe = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['bot', 'check-config']\n"
        "runpy.run_module('bot', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "frozen: True"
