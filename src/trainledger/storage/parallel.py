"""Chunked work shared by the caller's thread and helper threads.

For work that releases the GIL (numpy copies, ``os.preadv``) and that the caller waits for
anyway: a checkpoint snapshot, reading a checkpoint. One thread copies about 7 GB/s on the
reference machine, two about 13 GB/s. The chunks are handed out one at a time, each thread
taking the next, so a helper that the OS does not schedule (busy cores) delays the whole by at
most one chunk: the caller takes the rest, and a helper that never started is not waited for.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["executor", "helper_threads", "run_chunks"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def helper_threads() -> int:
    """Threads for chunked work: the cores this process may run on, at most 4 (memory
    bandwidth is saturated by then)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def run_chunks(count: int, do: Callable[[int], None], threads: int = 0) -> None:
    """``do(i)`` for each ``i`` in ``range(count)``, exactly once, on the caller's thread and
    up to ``threads - 1`` helpers (0: ``helper_threads()``). The first error is raised after
    the other threads stopped taking chunks."""
    helpers = min(threads or helper_threads(), count) - 1
    if helpers <= 0:
        for i in range(count):
            do(i)
        return
    order = itertools.count()  # next() is atomic under the GIL: each chunk is taken once
    failed = threading.Event()

    def work() -> None:
        try:
            while not failed.is_set() and (i := next(order)) < count:
                do(i)
        except BaseException:
            failed.set()
            raise

    futures = [executor().submit(work) for _ in range(helpers)]
    try:
        work()
    finally:
        for future in futures:
            if not future.cancel():  # a helper that never started is not waited for
                future.exception()  # wait: it may still be writing into the caller's buffer
    for future in futures:
        if not future.cancelled() and future.exception() is not None:
            raise future.exception()  # type: ignore[misc]


def executor() -> ThreadPoolExecutor:
    """The process-wide helper threads (created on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=helper_threads(), thread_name_prefix="trainledger-chunks"
            )
        return _pool
