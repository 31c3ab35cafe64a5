"""The forked test processes behave as the programs they stand in for (``fakes/zygote.py``):
their exit codes, stderr and pipes, a signal passed on, and none left behind a killed launcher."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from tests.fakes.zygote import fake_mcp_args


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serving(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait_until(condition, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_server_that_cannot_start_ends_the_launcher_with_its_code_and_last_words():
    done = subprocess.run(
        [sys.executable, *fake_mcp_args()],
        env={**os.environ, "FAKE_MCP_STDERR": "no database here", "FAKE_MCP_EXIT": "1"},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2  # the server's sys.exit(2)
    assert done.stderr.strip() == "no database here"


def test_sigterm_reaches_the_server_and_the_launcher_ends_as_it_did():
    port = _free_port()
    launcher = subprocess.Popen([sys.executable, *fake_mcp_args("http", str(port))])
    try:
        assert _wait_until(lambda: _serving(port)), "the server never listened"
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(30) == -signal.SIGTERM
        # The launcher ends once the server has: nothing listens any more.
        assert not _serving(port), "the launcher ended before its server"
    finally:
        launcher.kill()
        launcher.wait()


def test_a_killed_launcher_takes_its_server_with_it():
    port = _free_port()
    launcher = subprocess.Popen([sys.executable, *fake_mcp_args("http", str(port))])
    try:
        assert _wait_until(lambda: _serving(port)), "the server never listened"
    finally:
        launcher.kill()
        launcher.wait()
    assert _wait_until(lambda: not _serving(port), 10), "the server outlived its launcher"


def test_spawned_processes_start_from_the_zygote_with_their_pipes_and_exit_codes():
    import multiprocessing
    import multiprocessing.spawn
    from concurrent.futures import ProcessPoolExecutor

    assert os.fsdecode(multiprocessing.spawn.get_executable()).endswith("python-from-zygote")
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        assert pool.submit(pow, 2, 10).result(timeout=60) == 1024
    ended = spawn.Process(target=sys.exit, args=(3,))
    ended.start()
    ended.join(60)
    assert ended.exitcode == 3
