"""A heartbeat file for container health checks: fresh while the bot is connected to Discord.

A process can be alive yet useless (a gateway that never came back, a wedged event loop); only
the event loop itself can vouch for both, so it rewrites the file while the client is ready, and
``python -m bot.serve.health`` (the image's HEALTHCHECK) judges the file's age. Off unless
``THREADWISE_HEALTH_FILE`` names the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HEALTH_FILE_VARIABLE = "THREADWISE_HEALTH_FILE"
BEAT_SECONDS = 15.0
STALE_AFTER_SECONDS = 90.0


async def beat(client: Any, path: Path) -> None:
    """Rewrite ``path`` every ``BEAT_SECONDS`` while ``client`` is ready; remove it at the end."""
    last = 0.0
    try:
        while True:
            ready = client.is_ready() and not client.is_closed()
            if ready and time.monotonic() - last >= BEAT_SECONDS:
                await asyncio.to_thread(path.write_text, datetime.now(UTC).isoformat() + "\n")
                last = time.monotonic()
            await asyncio.sleep(1.0)
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)  # instant; no awaiting in a task being cancelled


def start_beating(client: Any) -> asyncio.Task[None] | None:
    name = os.environ.get(HEALTH_FILE_VARIABLE)
    if not name:
        return None
    return asyncio.create_task(beat(client, Path(name)), name="health file")


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0 when the heartbeat file is fresh, 1 (with one line saying why) otherwise."""
    args = list(sys.argv[1:] if argv is None else argv)
    name = os.environ.get(HEALTH_FILE_VARIABLE)
    if not name:
        print(f"unhealthy: {HEALTH_FILE_VARIABLE} is not set", file=sys.stderr)
        return 1
    stale_after = float(args[0]) if args else STALE_AFTER_SECONDS
    try:
        age = time.time() - Path(name).stat().st_mtime
    except OSError:
        print(f"unhealthy: no heartbeat in {name} (not connected to Discord)", file=sys.stderr)
        return 1
    if age > stale_after:
        print(
            f"unhealthy: last heartbeat {age:.0f} s ago (more than {stale_after:.0f})",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
