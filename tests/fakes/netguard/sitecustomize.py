"""Keeps the test suite off the internet, in the pytest process and in every Python it starts.

A test that names a real host (a log linking ``wiki.example.org`` replayed without its offline
pages, a default Discord URL) would otherwise ask the machine's resolver, which answers at once
here and may hang for seconds elsewhere: the suite passes on one machine and stalls on another.
Any lookup of, or connection to, an address that is not the loopback is refused at once, as a
closed network would refuse it, and written to the file ``THREADWISE_TEST_NETLOG`` names so the
test that caused it fails with the host's name (``tests/conftest.py`` reads it after each test).

It is a ``sitecustomize`` so that subprocesses (``python -m bot ...``, MCP servers) load it too:
``tests/conftest.py`` puts this folder first on ``PYTHONPATH``. It imports nothing of the
project: it runs before the project is on ``sys.path``.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

LOG_VARIABLE = "THREADWISE_TEST_NETLOG"
OFFLINE = "the tests may not reach the internet"
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", ""})


def _is_local(host: object) -> bool:
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    if name.lower().rstrip(".") in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False  # a name only a resolver could answer
    return address.is_loopback or address.is_unspecified


def _refuse(what: str, host: object, error: OSError) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "a subprocess").split(" ")[0]
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{what} {host!r} (pid {os.getpid()}, {test})\n")
    raise error


def install() -> None:
    """Wrap the resolver and ``connect`` once; Unix sockets and the loopback pass untouched."""
    if getattr(socket, "_threadwise_guarded", False):
        return
    resolve = socket.getaddrinfo
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not _is_local(host):
            _refuse("lookup of", host, socket.gaierror(socket.EAI_NONAME, OFFLINE))
        return resolve(host, *args, **kwargs)

    def guarded_connect(self, address):  # type: ignore[no-untyped-def]
        if isinstance(address, tuple) and not _is_local(address[0]):
            _refuse("connection to", address[0], OSError(errno.ENETUNREACH, OFFLINE))
        return connect(self, address)

    def guarded_connect_ex(self, address):  # type: ignore[no-untyped-def]
        if isinstance(address, tuple) and not _is_local(address[0]):
            _refuse("connection to", address[0], OSError(errno.ENETUNREACH, OFFLINE))
        return connect_ex(self, address)

    socket.getaddrinfo = guarded_getaddrinfo
    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket._threadwise_guarded = True  # type: ignore[attr-defined]


if os.environ.get(LOG_VARIABLE):
    install()
