"""SIGTERM stops the bot the way Ctrl-C does: cancel, finish cleanly, exit 0.

``docker stop`` and systemd send SIGTERM. Without a handler the process dies without closing the
store or stopping the goose3 worker processes, and as PID 1 in a container it ignores SIGTERM
altogether, so ``docker stop`` waits out its grace period and kills. Cancelling the main task
instead runs every ``finally`` and ``async with`` exit on the way out: in-flight answers are
abandoned and recorded, the Discord connection and the store are closed, the workers stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


async def run_until_terminated(work: Coroutine[Any, Any, None]) -> bool:
    """Run ``work``; SIGTERM cancels it. True when it ended because of SIGTERM."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        if not terminated:
            log.info("SIGTERM received: stopping (in-flight answers are abandoned and recorded)")
        terminated = True
        task.cancel()

    handled = False
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
        # Only the main thread may handle signals (tests run the bot in worker threads too).
        loop.add_signal_handler(signal.SIGTERM, terminate)
        handled = True
    try:
        await task
    except asyncio.CancelledError:
        if not terminated:
            raise
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # we were cancelled ourselves too (Ctrl-C during shutdown)
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGTERM)
    return terminated
