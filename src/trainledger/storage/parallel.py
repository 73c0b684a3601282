"""Chunked work shared by the caller's thread and helper threads; the CPUs there are, and
helper processes of trainledger's own (``start_ours``).

For work that releases the GIL (numpy copies, ``os.preadv``) and that the caller waits for
anyway: a checkpoint snapshot, reading a checkpoint. One thread copies about 7 GB/s on the
reference machine, two about 13 GB/s. The chunks are handed out one at a time, each thread
taking the next, so a helper that the OS does not schedule (busy cores) delays the whole by at
most one chunk: the caller takes the rest, and a helper that never started is not waited for.
"""

from __future__ import annotations

import atexit
import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = [
    "before_executors_stop",
    "cores",
    "executor",
    "helper_threads",
    "run_chunks",
    "start_ours",
]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_EXIT_HOOKS: set[tuple[Callable[[], None], int]] = set()  # (hook, the pid that registered it)


def cores() -> int:
    """The CPUs this process may run on (its affinity where the OS says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def helper_threads() -> int:
    """Threads for chunked work: the cores this process may run on, at most 4 (memory
    bandwidth is saturated by then)."""
    return max(1, min(4, cores()))


def start_ours(module: str, **popen: Any) -> subprocess.Popen[bytes]:
    """``python -P -m <module>`` (a module of trainledger's) with stdin and stdout piped: this
    very trainledger first on its path, never a ``trainledger`` folder in the working
    directory (``-P``). ``popen``: more of ``subprocess.Popen``'s arguments."""
    root = str(Path(__file__).resolve().parents[2])  # the directory holding trainledger/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-P", "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        **popen,
    )


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


def before_executors_stop(hook: Callable[[], None]) -> None:
    """Run ``hook`` at interpreter exit while thread pools still take work (once per hook).

    Why: ``atexit`` is too late for work that needs threads (a checkpoint's chunked write,
    s3fs's uploads): ``concurrent.futures`` refuses new work from threading's exit hooks on,
    which run first and last-registered first. A hook registered after the pools' own (at
    first use, not at import) runs before them; where that cannot be (already shutting down,
    another Python), ``atexit`` is the fallback. A forked child inherits the hook but not the
    threads whose work it waits for, so the hook runs only in the process that registered it
    (a child registers its own).
    """
    owner = os.getpid()
    with _pool_lock:
        if (hook, owner) in _EXIT_HOOKS:
            return
        _EXIT_HOOKS.add((hook, owner))

    def run() -> None:
        if os.getpid() == owner:
            hook()

    register = getattr(threading, "_register_atexit", None)
    try:
        if register is None:
            raise RuntimeError("no threading exit hooks")
        register(run)
    except RuntimeError:
        atexit.register(run)
