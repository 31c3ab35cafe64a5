"""The single writer: one thread, one connection, one queue.

SQLite allows one writer at a time; funnelling every write of the process through one thread
means no two of our connections ever fight over the lock (no "database is locked" however many
channels answer at once), and the event loop only awaits a future, never the disk. Consecutive
``record`` jobs found waiting in the queue share one commit (each inside its own savepoint, so a
bad record fails alone); a job's future resolves only after its data is committed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

from bot.storage.dialect import Db
from bot.storage.mutations import NodeCache

Job = Callable[[Any, NodeCache], Any]
MAX_GROUP = 64
# A group that lost a deadlock to another process's writer is run again this many times.
MAX_RETRIES = 8


class _Task:
    __slots__ = ("future", "groupable", "job", "transactional")

    def __init__(self, job: Job, transactional: bool, groupable: bool) -> None:
        self.job = job
        self.transactional = transactional
        self.groupable = groupable
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


def rollback(conn: Db) -> None:
    """End a failed transaction; on a connection that is gone there is nothing to end."""
    if conn.dialect.is_broken(conn):
        return
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class Writer:
    def __init__(self, connect: Callable[[], Db], setup: Callable[[Db], None]) -> None:
        self._connect = connect
        self._setup = setup
        self._queue: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="threadwise-store", daemon=True)
        self._thread.start()
        self._ready.result()  # re-raises a failed open or migration here, in the caller

    def submit(
        self, job: Job, *, transactional: bool = True, groupable: bool = False
    ) -> concurrent.futures.Future[Any]:
        task = _Task(job, transactional, groupable)
        with self._lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            self._queue.put(task)
        return task.future

    def close(self, timeout: float | None = None) -> bool:
        """Finish the queued jobs and stop; False when ``timeout`` s passed first (a stalled
        database holds the thread: it is a daemon, and ends with the process)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # ------------------------------------------------------------------ thread side

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as error:
            self._ready.set_exception(error)
            return
        try:
            self._setup(conn)
        except BaseException as error:
            conn.close()
            self._ready.set_exception(error)
            return
        self._ready.set_result(None)
        cache = NodeCache()
        # A task taken from the queue while grouping, to run next; the close sentinel (None)
        # can be taken that way too, so "nothing carried" is a flag, not None.
        carry: _Task | None = None
        carrying = False
        try:
            while True:
                task = carry if carrying else self._queue.get()
                carry, carrying = None, False
                if task is None:
                    break
                if not task.future.set_running_or_notify_cancel():
                    continue
                if conn.dialect.is_broken(conn):
                    # The server restarted or dropped us: a new connection, an empty cache.
                    try:
                        replacement = self._connect()
                    except BaseException as error:
                        task.future.set_exception(error)
                        continue
                    conn.close()
                    conn = replacement
                    cache.clear()
                if not task.transactional:
                    self._run_plain(conn, cache, task)
                    continue
                group = [task]
                while task.groupable and len(group) < MAX_GROUP:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is not None and nxt.groupable:
                        if nxt.future.set_running_or_notify_cancel():
                            group.append(nxt)
                    else:
                        carry, carrying = nxt, True
                        break
                try:
                    self._run_group(conn, cache, group)
                except BaseException as error:  # never leave a caller waiting forever
                    cache.clear()
                    with contextlib.suppress(Exception):
                        rollback(conn)  # nor a transaction open, holding others' locks
                    for member in group:
                        if not member.future.done():
                            member.future.set_exception(error)
        finally:
            conn.close()

    @staticmethod
    def _run_plain(conn: Db, cache: NodeCache, task: _Task) -> None:
        try:
            cache.sync(conn)
            task.future.set_result(task.job(conn, cache))
        except BaseException as error:
            task.future.set_exception(error)

    @staticmethod
    def _run_group(conn: Db, cache: NodeCache, group: list[_Task]) -> None:
        for attempt in range(MAX_RETRIES + 1):
            retry = Writer._try_group(conn, cache, group, last_try=attempt == MAX_RETRIES)
            if not retry:
                return

    @staticmethod
    def _try_group(conn: Db, cache: NodeCache, group: list[_Task], *, last_try: bool) -> bool:
        """One transaction for the group; True when it lost a deadlock and should run again."""
        dialect = conn.dialect
        results: list[tuple[_Task, bool, Any]] = []
        try:
            dialect.begin_write(conn)
            cache.sync(conn)
        except BaseException as error:
            rollback(conn)
            for task in group:
                task.future.set_exception(error)
            return False
        for task in group:
            mark = cache.mark()
            conn.execute("SAVEPOINT job")
            try:
                value = task.job(conn, cache)
            except BaseException as error:
                if dialect.is_retryable(error) and not last_try:
                    # The whole transaction is lost (PostgreSQL aborts it): run the group again.
                    rollback(conn)
                    cache.clear()
                    return True
                if dialect.is_broken(conn):
                    # The connection went with the transaction: every job of it failed.
                    cache.clear()
                    for other in group:
                        if not other.future.done():
                            other.future.set_exception(error)
                    return False
                conn.execute("ROLLBACK TO job")
                conn.execute("RELEASE job")
                cache.rollback_to(mark)
                results.append((task, False, error))
            else:
                conn.execute("RELEASE job")
                results.append((task, True, value))
        try:
            conn.execute("COMMIT")
        except BaseException as error:
            rollback(conn)
            cache.clear()
            if dialect.is_retryable(error) and not last_try:
                return True
            for task in group:
                task.future.set_exception(error)
            return False
        cache.committed()
        for task, ok, value in results:
            if ok:
                task.future.set_result(value)
            else:
                task.future.set_exception(value)
        return False
