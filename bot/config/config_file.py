"""The config file read without trusting what the path holds.

The path is the operator's, but what it points to may change under a running bot: a symlink
re-pointed at a named pipe made the reload watcher's read wait for a writer for good (on the
event loop: heartbeats stopped), and a 150 MB file stalled every poll. So only a regular file
of at most ``MAX_CONFIG_BYTES`` is read, opened without blocking and checked on the open file
(a swap between a check and the open cannot slip a pipe in), and anything else is refused in one
line before a byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_CONFIG_BYTES = 1_000_000
"""Far above any real config (the longest system prompt included); a bigger file is a mistake."""


class NotAConfigFile(Exception):
    """The path holds something other than a regular file of at most ``MAX_CONFIG_BYTES``;
    the message says what, in words for the operator."""


def read_config_bytes(path: Path) -> bytes:
    """The file's bytes; ``FileNotFoundError`` or another ``OSError`` when it cannot be opened,
    :class:`NotAConfigFile` when it is not a regular file or is too big."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        refusal = _refusal(os.fstat(descriptor))
        if refusal is not None:
            raise NotAConfigFile(refusal)
    except BaseException:
        os.close(descriptor)
        raise
    with open(descriptor, "rb", closefd=True) as file:
        data = file.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:  # it grew after the check
        raise NotAConfigFile(_too_big(len(data)))
    return data


def _refusal(found: os.stat_result) -> str | None:
    mode = found.st_mode
    if not stat.S_ISREG(mode):
        kind = (
            "a folder" if stat.S_ISDIR(mode)
            else "a named pipe" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "a device"
        )  # fmt: skip
        return f"not a regular file but {kind}: not read"
    if found.st_size > MAX_CONFIG_BYTES:
        return _too_big(found.st_size)
    return None


def _too_big(size: int) -> str:
    return f"{size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a config file may have: not read"
