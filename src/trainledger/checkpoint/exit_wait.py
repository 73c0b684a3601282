"""Waiting at interpreter exit for a background checkpoint save, under Ctrl-C and SIGTERM.

Why: a script that returns while ``save_checkpoint(..., async_save=True)`` is still writing
is held at exit until the file is committed. Without handlers, a Ctrl-C there raised
``KeyboardInterrupt`` inside the ``atexit`` callback: Python printed "Exception ignored",
exited with status 0, the daemon writer died mid-file, and the checkpoint was silently gone
with its temp file left behind. So while it waits:

- the first SIGINT only says which file it waits for, and the wait goes on;
- a second SIGINT, or a SIGTERM (which no longer has a handler once ``Model`` has returned),
  abandons the write (``storage.atomic.abandon_writes``: its temp file removed, its rename
  refused), prints one line naming the checkpoint not written, and ends the process by that
  signal: a non-zero status, as the shell expects of an interrupted program.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from trainledger.storage import abandon_writes

__all__ = ["drain_at_exit", "wait_at_exit"]

_log = logging.getLogger(__name__)


def drain_at_exit(saver: Any, wait: Callable[[], Any]) -> None:
    """At exit, wait for ``saver``'s write in flight (a daemon writer thread would otherwise
    die mid-file), under ``wait_at_exit``'s handlers; a failed save is logged, not raised."""
    path = saver.inflight if saver is not None else None
    try:
        if path is None:
            wait()
        else:
            wait_at_exit(wait, path, lambda: saver.last_written == path)
    except Exception as exc:
        _log.error("background checkpoint save failed: %s", exc)


class _Abandon(BaseException):
    """Raised by the handler out of the wait: the user will not wait any longer."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _say(line: str) -> None:
    try:
        sys.stderr.write(f"trainledger: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr left at exit: the status still says it
        pass


def wait_at_exit(wait: Callable[[], Any], path: Path, written: Callable[[], bool]) -> None:
    """Run ``wait()`` (the save of ``path``) with the handlers of the module doc installed;
    ``written()`` tells whether the save committed before it was abandoned. Off the main
    thread the wait runs with the signals' usual behaviour."""
    if threading.current_thread() is not threading.main_thread():
        wait()
        return
    sigs = [s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if s is not None]
    asked: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and not asked:
            asked.append(signum)
            _say(f"waiting for the checkpoint {path} to be written; Ctrl-C again abandons it")
            return
        raise _Abandon(signum)

    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    try:
        wait()
    except _Abandon as stop:
        for sig in sigs:  # a third signal must not interrupt the clean-up
            signal.signal(sig, signal.SIG_IGN)
        lost = abandon_writes()
        if path in lost or not written():
            name = signal.Signals(stop.signum).name
            _say(f"checkpoint {path} was not written: the exit was interrupted by {name}")
        signal.signal(stop.signum, signal.SIG_DFL)
        os.kill(os.getpid(), stop.signum)  # end as that signal ends a program: status 128 + n
        os._exit(128 + stop.signum)  # pragma: no cover - the signal ended the process first
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
