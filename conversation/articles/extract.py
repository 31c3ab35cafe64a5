"""Running goose3 off the event loop, and ending a run that takes too long.

goose3 is synchronous and slow on big pages (1-2 s for a 1 MB page here, up to 10 s for a
dense one); on the event loop that silences the gateway heartbeat. In a thread the GIL still
stalls the loop, erratically: ``bench/articles.py`` and a denser variant measured worst stalls
from 15 ms to 250 ms for one 1 MB page, whereas a process pool stayed between 5 and 25 ms (on a
loaded 2-core machine). So the default is a process pool, at the price of a couple of small
worker processes. Workers are spawned, not forked: forking a process that runs threads (the
resolver's, the pool's own) can deadlock the child.

goose3 also has quadratic corners (thousands of ``<meta>`` tags, tens of thousands of tiny
elements) that keep a worker busy for minutes on a page under the size cap. ``trim`` removes
what it can before goose3 runs; for the rest, each worker is a pool of its own, so the one that
overran its time can be killed and replaced without touching the others: two hostile links
cost two workers ``extract_timeout_seconds`` each, not the whole bot's article reading.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from concurrent.futures import BrokenExecutor, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Literal

from goose3 import Goose
from pydantic import BaseModel, ConfigDict

from conversation.articles.charset import decode_html
from conversation.articles.models import ArticleFailure, ArticleStatus
from conversation.articles.trim import trim_for_goose
from conversation.common.compat import pool_processes

log = logging.getLogger(__name__)

WorkerKind = Literal["process", "thread"]


class Extracted(BaseModel):
    """What goose3 found in a page; crosses the process boundary, hence a plain model."""

    model_config = ConfigDict(frozen=True)

    title: str
    text: str


class GooseError(Exception):
    """goose3 failed on a page; a plain message so it survives the trip back from a worker."""


def extract_article(html: str) -> Extracted:
    """goose3 on an already downloaded page. Runs in a worker.

    goose3 is never given the URL: with a URL and an empty or missing page it downloads the
    page itself, with its own unguarded client. A Goose object costs well under a millisecond,
    so each call makes its own rather than sharing one between threads. It sees the page
    through ``trim_for_goose``.
    """
    if not html.strip():
        return Extracted(title="", text="")
    try:
        trimmed = trim_for_goose(html)
        with Goose({"enable_image_fetching": False}) as goose:
            article = goose.extract(raw_html=trimmed)
    except Exception as exc:
        # lxml's errors carry an unpicklable error log: pass on the message, not the object.
        raise GooseError(f"{type(exc).__name__}: {exc}") from None
    return Extracted(title=(article.title or "").strip(), text=(article.cleaned_text or "").strip())


def extract_page(page: str | bytes, charset: str | None = None) -> Extracted:
    """``extract_article`` on a page as downloaded: bytes are decoded here, in the worker,
    because decoding 2 MB takes long enough to be felt on the event loop."""
    html = page if isinstance(page, str) else decode_html(page, charset)
    return extract_article(html)


def _warm_up() -> bool:
    """Imports happen at spawn time; this just makes the pool start its worker early."""
    return True


def make_executor(kind: WorkerKind) -> Executor:
    """One worker: a pool of one process (or thread), so it can be ended on its own."""
    if kind == "thread":
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="goose3")
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


def _kill(executor: Executor) -> None:
    """End a worker now, whatever it is doing. A thread cannot be ended: it is left to finish
    in the background, and no new work goes to it."""
    for process in pool_processes(executor):
        if process.is_alive():
            process.kill()
    executor.shutdown(wait=False, cancel_futures=True)


def _stop_all(executors: list[Executor], grace_seconds: float) -> None:
    """Ask every worker to exit, wait at most ``grace_seconds`` in all, then kill the rest."""
    processes = [process for executor in executors for process in pool_processes(executor)]
    for executor in executors:
        executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace_seconds
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(1.0)


class Extractor:
    """Owns the workers; ``extract`` turns every goose3 problem into an ``ArticleFailure``.

    A worker is held for one page at a time. The time limit runs from when a worker takes the
    page (waiting for a free one is bounded by the caller's own deadline); a worker that
    overruns it, dies, or whose caller gives up is killed and replaced by a fresh one.
    """

    CLOSE_GRACE_SECONDS = 2.0

    def __init__(self, kind: WorkerKind, max_workers: int, timeout_seconds: float) -> None:
        self._kind = kind
        self._timeout = timeout_seconds
        self._closed = False
        self._workers: set[Executor] = set()
        self._idle: asyncio.Queue[Executor] = asyncio.Queue()
        for _ in range(max_workers):
            self._idle.put_nowait(self._new_worker())

    @property
    def kind(self) -> WorkerKind:
        return self._kind

    def _new_worker(self) -> Executor:
        executor = make_executor(self._kind)
        self._workers.add(executor)
        return executor

    def warm_up(self) -> None:
        """Start the workers now so the first article does not pay for spawning them."""
        for executor in self._workers:
            executor.submit(_warm_up)

    async def extract(self, page: str | bytes, charset: str | None = None) -> Extracted:
        """Title and text of ``page`` (text, or bytes to decode with the declared ``charset``)."""
        executor = await self._idle.get()
        if self._closed:
            self._idle.put_nowait(executor)
            raise ArticleFailure(ArticleStatus.ERROR, "article extraction is shutting down")
        try:
            async with asyncio.timeout(self._timeout):
                extracted = await asyncio.wrap_future(executor.submit(extract_page, page, charset))
        except TimeoutError:
            self._replace(executor)
            raise ArticleFailure(
                ArticleStatus.TIMEOUT, f"extraction took longer than {self._timeout:g} s"
            ) from None
        except BrokenExecutor as exc:
            self._replace(executor)
            raise ArticleFailure(
                ArticleStatus.EXTRACT_ERROR, "the extraction worker died (out of memory?)"
            ) from exc
        except GooseError as exc:
            self._idle.put_nowait(executor)
            raise ArticleFailure(ArticleStatus.EXTRACT_ERROR, f"goose3 failed: {exc}") from exc
        except BaseException:
            # Cancelled (the caller's deadline, shutdown) or an unforeseen error: the worker
            # may still be busy with this page, so it is not trusted with the next one.
            self._replace(executor)
            raise
        self._idle.put_nowait(executor)
        return extracted

    def _replace(self, executor: Executor) -> None:
        self._workers.discard(executor)
        _kill(executor)
        if self._closed:
            return
        log.warning("article extraction worker stopped; starting a new one")
        fresh = self._new_worker()
        # Offered once started, so the next page's time limit is not spent on spawning it.
        # (Should it fail to start, the page it is given fails as "worker died" and it is
        # replaced again.)
        started = asyncio.wrap_future(fresh.submit(_warm_up))
        started.add_done_callback(lambda done: self._offer(fresh, done))

    def _offer(self, executor: Executor, started: asyncio.Future[bool]) -> None:
        if not started.cancelled():
            started.exception()  # a worker that failed to start fails its first page instead
        if executor in self._workers:  # not closed meanwhile
            self._idle.put_nowait(executor)

    def refuse_work(self) -> None:
        """The first step of closing: pages not yet in a worker fail, and a worker stopped from
        now on (its caller cancelled) is not replaced."""
        self._closed = True

    async def aclose(self) -> None:
        """Stops the workers: idle ones exit at once, busy ones get ``CLOSE_GRACE_SECONDS`` and
        are then killed, so a page stuck in goose3 does not hold up shutdown. (In a thread:
        joining processes blocks, and the loop must keep turning meanwhile.)"""
        self.refuse_work()
        workers = list(self._workers)
        self._workers.clear()
        await asyncio.to_thread(_stop_all, workers, self.CLOSE_GRACE_SECONDS)
