"""The test MCP server (``mcp_server.py``) started as a program, without paying the SDK's import.

Importing the MCP SDK costs an interpreter about two CPU-seconds (its protocol types are
pydantic models built at import), and the tools tests start a server for nearly every test:
about a sixth of the suite's CPU time went to importing it again. So the first server a test
process asks for starts a *zygote*, a Python that imports the SDK once and then forks a fresh
server for each launch; the forked server runs ``mcp_server.py`` as ``__main__``, with the
launch's arguments, environment, folder, stdin, stdout and stderr, so it is the same server a
new interpreter would be, with no state shared between launches.

What the bot (or a test) starts is still a program, ``fake_mcp_args(*ARGS)`` as its arguments:
this file as a small *launcher* (standard library only, so it starts in a few milliseconds),
which hands its stdin, stdout, stderr, arguments, environment and folder to the zygote, passes
SIGTERM, SIGINT and SIGHUP on to the server, and ends as the server ends (its exit code, or
the same signal). A launcher killed outright takes its server with it: the server watches a
pipe only the launcher holds. So what the bot sees (a process speaking MCP over stdio, that
exits, is signalled and restarted) is what it saw with ``python mcp_server.py ARGS``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SERVER = Path(__file__).with_name("mcp_server.py")
_zygotes: dict[int, tuple[subprocess.Popen[bytes], str]] = {}
"""This test process's zygote and its socket (by pid: a forked process starts its own)."""


def fake_mcp_args(*args: str) -> list[str]:
    """The arguments, after ``sys.executable``, that start the test MCP server with ``args``
    (none for stdio, ``"http", PORT`` for streamable HTTP)."""
    return [str(Path(__file__)), _zygote_socket(), *args]


def _zygote_socket() -> str:
    found = _zygotes.get(os.getpid())
    if found is not None and found[0].poll() is None:
        return found[1]
    path = os.path.join(tempfile.mkdtemp(prefix="threadwise-mcp-"), "zygote")
    zygote = subprocess.Popen(
        [sys.executable, str(Path(__file__)), "--zygote", path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert zygote.stdout is not None
    ready = zygote.stdout.readline()
    if ready.strip() != b"ready":
        raise RuntimeError(f"the MCP zygote did not start: {ready!r}")
    _zygotes[os.getpid()] = (zygote, path)
    atexit.register(_stop, zygote)
    return path


def _stop(zygote: subprocess.Popen[bytes]) -> None:
    assert zygote.stdin is not None
    zygote.stdin.close()  # it ends when this pipe closes
    try:
        zygote.wait(5)
    except subprocess.TimeoutExpired:
        zygote.kill()


# ----------------------------------------------------------------------------- the zygote


def _zygote(path: str) -> None:
    import mcp.server.mcpserver  # noqa: F401  (the import every launch would pay)

    assert threading.active_count() == 1, "forking is only safe without threads"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    waiting: dict[int, socket.socket] = {}  # server pid -> its launcher's connection
    os.write(1, b"ready\n")
    while True:
        readable, _, _ = select.select([listener, 0], [], [], 0.02)
        if 0 in readable and not os.read(0, 4096):
            return  # the test process is gone
        if listener in readable:
            connection, _ = listener.accept()
            pid = _fork_server(connection, listener)
            connection.sendall(f"{pid}\n".encode())
            waiting[pid] = connection
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = waiting.pop(pid, None)
            if connection is not None:
                with contextlib.suppress(OSError):  # its launcher may be gone
                    connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                connection.close()


def _fork_server(connection: socket.socket, listener: socket.socket) -> int:
    _, fds, _, _ = socket.recv_fds(connection, 1, 4)
    size = int.from_bytes(_read_exactly(connection, 8), "big")
    launch = json.loads(_read_exactly(connection, size))
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:  # the server
        listener.close()
        connection.close()
        stdin, stdout, stderr, watched = fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        threading.Thread(target=_die_with_launcher, args=(watched,), daemon=True).start()
        os.chdir(launch["cwd"])
        os.environ.clear()
        os.environ.update(launch["env"])
        sys.argv = [str(SERVER), *launch["args"]]
        import runpy

        runpy.run_path(str(SERVER), run_name="__main__")
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _die_with_launcher(watched: int) -> None:
    while os.read(watched, 1):
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise EOFError("the launcher went away")
        data += chunk
    return data


# ----------------------------------------------------------------------------- the launcher


def _launch(path: str, args: list[str]) -> int:
    watched, held = os.pipe()  # the server dies when ``held`` closes, with this process
    os.set_inheritable(held, False)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    launch = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(connection, [b"l"], [0, 1, 2, watched])
    connection.sendall(len(launch).to_bytes(8, "big") + launch)
    os.close(watched)
    replies = connection.makefile("rb")
    pid = int(replies.readline())
    for forwarded in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(forwarded, lambda number, _frame: os.kill(pid, number))
    ended = replies.readline()
    if not ended:
        return 1  # the zygote is gone
    code = int(ended)
    if code < 0:  # killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        _zygote(sys.argv[2])
    else:
        sys.exit(_launch(sys.argv[1], sys.argv[2:]))
