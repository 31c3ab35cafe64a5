"""Running goose3 off the event loop.

goose3 is synchronous and slow on big pages (1-2 s for a 1 MB page here, up to 10 s for a
dense one); on the event loop that silences the gateway heartbeat. In a thread the GIL still
stalls the loop, erratically: ``bench/articles.py`` and a denser variant measured worst stalls
from 15 ms to 250 ms for one 1 MB page, whereas a process pool stayed between 5 and 25 ms (on a
loaded 2-core machine). So the default is a process pool, at the price of a couple of small
worker processes. Workers are spawned, not forked: forking a process that runs threads (the
resolver's, the pool's own) can deadlock the child.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Literal

from goose3 import Goose
from pydantic import BaseModel, ConfigDict

from conversation.articles.models import ArticleFailure, ArticleStatus

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
    so each call makes its own rather than sharing one between threads.
    """
    if not html.strip():
        return Extracted(title="", text="")
    try:
        with Goose({"enable_image_fetching": False}) as goose:
            article = goose.extract(raw_html=html)
    except Exception as exc:
        # lxml's errors carry an unpicklable error log: pass on the message, not the object.
        raise GooseError(f"{type(exc).__name__}: {exc}") from None
    return Extracted(title=(article.title or "").strip(), text=(article.cleaned_text or "").strip())


def _warm_up() -> bool:
    """Imports happen at spawn time; this just makes the pool start its workers early."""
    return True


def make_executor(kind: WorkerKind, max_workers: int) -> Executor:
    if kind == "thread":
        return ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="goose3")
    return ProcessPoolExecutor(
        max_workers=max_workers, mp_context=multiprocessing.get_context("spawn")
    )


class Extractor:
    """Owns the worker pool; ``extract`` turns every goose3 problem into an ``ArticleFailure``."""

    def __init__(self, kind: WorkerKind, max_workers: int, timeout_seconds: float) -> None:
        self._kind = kind
        self._max_workers = max_workers
        self._timeout = timeout_seconds
        self._executor = make_executor(kind, max_workers)

    @property
    def kind(self) -> WorkerKind:
        return self._kind

    def warm_up(self) -> None:
        """Start the workers now so the first article does not pay for spawning them."""
        for _ in range(self._max_workers):
            self._executor.submit(_warm_up)

    async def extract(self, html: str) -> Extracted:
        loop = asyncio.get_running_loop()
        executor = self._executor
        try:
            async with asyncio.timeout(self._timeout):
                return await loop.run_in_executor(executor, extract_article, html)
        except TimeoutError:
            # A worker cannot be interrupted; it finishes in the background and is reused.
            raise ArticleFailure(
                ArticleStatus.TIMEOUT, f"extraction took longer than {self._timeout:g} s"
            ) from None
        except BrokenProcessPool as exc:
            self._replace_broken(executor)
            raise ArticleFailure(
                ArticleStatus.EXTRACT_ERROR, "the extraction worker died (out of memory?)"
            ) from exc
        except GooseError as exc:
            raise ArticleFailure(ArticleStatus.EXTRACT_ERROR, f"goose3 failed: {exc}") from exc

    def _replace_broken(self, broken: Executor) -> None:
        if self._executor is broken:
            log.warning("article extraction pool broke; starting a new one")
            self._executor = make_executor(self._kind, self._max_workers)
            broken.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Waits for the workers to exit (in a thread: a running goose3 call can take a while,
        and the loop must keep turning meanwhile)."""
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)
