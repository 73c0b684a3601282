"""The one background-writer pattern of trainledger (docs/development.md, convention 5).

One named daemon thread drains a bounded queue of tasks. ``submit`` blocks when the queue is
full (back-pressure instead of unbounded memory). ``flush`` returns once every task submitted
before it has run; an exception raised by a task is kept and raised once, on the caller's next
``flush()`` or ``close()``, so a failed write is never lost silently. Tasks after a failure
still run (a later write may succeed, e.g. after disk space was freed).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["BackgroundWorker"]

_STOP = object()


class BackgroundWorker:
    """A named thread running submitted callables in order."""

    def __init__(self, name: str, maxsize: int = 1024) -> None:
        self.name = name
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, task: Callable[[], None]) -> None:
        """Queue ``task``; blocks while the queue is full."""
        if self._closed:
            raise RuntimeError(f"background worker {self.name!r} is closed")
        self._queue.put(task)

    def flush(self) -> None:
        """Wait until every task submitted so far has run; raise the first pending error."""
        if not self._closed:
            done = threading.Event()
            self._queue.put(done.set)
            done.wait()
        self.raise_pending()

    def close(self) -> None:
        """Drain the queue, stop the thread, raise the first pending error. Idempotent."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
        self.raise_pending()

    def pending_error(self) -> BaseException | None:
        """The error kept for the next flush/close, without clearing it."""
        with self._lock:
            return self._error

    def raise_pending(self) -> None:
        """Raise (and clear) the error kept from a task, if any, without waiting."""
        with self._lock:
            error, self._error = self._error, None
        if error is not None:
            raise error

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            if task is _STOP:
                return
            try:
                task()
            except BaseException as exc:  # kept for the caller, never swallowed
                with self._lock:
                    if self._error is None:
                        self._error = exc
