"""Processes the tests start, forked from one that already imported what they import.

Importing the MCP SDK costs an interpreter about two CPU-seconds (its protocol types are
pydantic models built at import), goose3 about one and a half: the tools tests start an MCP
server (``mcp_server.py``) for nearly every test, and every command or bot a test runs in its
own process spawns two goose3 workers (``conversation/articles/extract.py``); a third of the
suite's CPU time went to those imports. So each test process starts a *zygote*, a Python that
imports them once and then forks a fresh process for each launch, which runs with the launch's
arguments, environment, folder and open files, as a new interpreter would, and shares no state
with the others.

What is started is still a program: this file as a small *launcher* (standard library only, so
it starts in milliseconds), which hands its open files, arguments, environment and folder to
the zygote, passes SIGTERM, SIGINT and SIGHUP on to the forked process, and ends as it ends (its
exit code, or the same signal). A launcher killed outright takes its process with it: the
process watches a pipe only the launcher holds. Two kinds of launch:

- ``fake_mcp_args(*ARGS)``: the arguments after ``sys.executable`` that start the test MCP
  server (none for stdio, ``"http", PORT`` for streamable HTTP);
- ``fork_spawned_processes()`` (``conftest.py``, in each test process): multiprocessing's
  spawned processes (``python -c CODE`` with inherited pipes) start through a launcher too.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
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


def fork_spawned_processes(folder: Path) -> None:
    """multiprocessing's spawn start method runs ``EXECUTABLE [FLAGS] -c CODE`` with the pipes
    it passes: the executable becomes a launcher (a script in ``folder``) that has the zygote
    fork the process instead."""
    import multiprocessing

    launcher = folder / "python-from-zygote"
    launcher.write_text(
        f"#!{sys.executable}\nimport runpy, sys\n"
        f"sys.argv[1:1] = [{_zygote_socket()!r}]\n"
        f"runpy.run_path({str(Path(__file__))!r}, run_name='__main__')\n"
    )
    launcher.chmod(0o755)
    multiprocessing.set_executable(str(launcher))


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
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    # The imports every launch would pay.
    import multiprocessing.spawn  # noqa: F401
    from concurrent.futures import process  # noqa: F401

    import mcp.server.mcpserver  # noqa: F401

    import conversation.articles.extract  # noqa: F401

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
    size = int.from_bytes(_read_exactly(connection, 8), "big")
    launch = json.loads(_read_exactly(connection, size))
    _, fds, _, _ = socket.recv_fds(connection, 1, len(launch["fds"]) + 1)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:  # the launched process
        listener.close()
        connection.close()
        # Each file at the number it had in the launcher: all moved out of the way first (the
        # watched pipe too, or a file put at its number would take its place).
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in fds]
        for fd in fds:
            os.close(fd)
        *high, watched = high
        for fd, target in zip(high, launch["fds"], strict=True):
            os.dup2(fd, target)
            os.close(fd)
        threading.Thread(target=_die_with_launcher, args=(watched,), daemon=True).start()
        os.chdir(launch["cwd"])
        os.environ.clear()
        os.environ.update(launch["env"])
        if launch["code"] is not None:  # python [FLAGS] -c CODE ARGS
            sys.argv = ["-c", *launch["args"]]
            exec(compile(launch["code"], "<string>", "exec"), {"__name__": "__main__"})
        else:
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
    code = None
    if "-c" in args:  # multiprocessing's command line: [FLAGS] -c CODE ARGS
        at = args.index("-c")
        code, args = args[at + 1], args[at + 2 :]
    # Every file this process was given (stdin, stdout, stderr, and the pipes multiprocessing
    # passes), listed before any other is opened.
    passed = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    passed = [fd for fd in passed if _is_open(fd)]
    watched, held = os.pipe()  # the process dies when ``held`` closes, with this one
    os.set_inheritable(held, False)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    launch = {"args": args, "code": code, "fds": passed, "env": dict(os.environ)}
    sent = json.dumps({**launch, "cwd": os.getcwd()}).encode()
    connection.sendall(len(sent).to_bytes(8, "big") + sent)
    socket.send_fds(connection, [b"l"], [*passed, watched])
    # Only the process holds them now (a pipe's reader sees its end when the process ends).
    os.close(watched)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in passed:
        if fd > 2:
            os.close(fd)
        else:
            os.dup2(null, fd)
    replies = connection.makefile("rb")
    pid = int(replies.readline())
    for forwarded in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(forwarded, lambda number, _frame: os.kill(pid, number))
    ended = replies.readline()
    if not ended:
        return 1  # the zygote is gone
    status = int(ended)
    if status < 0:  # killed by a signal: end the same way
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


def _is_open(fd: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        _zygote(sys.argv[2])
    else:
        sys.exit(_launch(sys.argv[1], sys.argv[2:]))
