"""The progress bar's drawing thread: one per process, shared by the bars shown one after another.

Why a thread: the bar then has no step hook, so a training step runs none of its code (see
``progress``). Why one for the process rather than one per bar: starting and joining a thread
cost about 0.2 ms of CPU per run, close to a microsecond a step on a 250-step run of a small
model.

When its bar is hidden the thread keeps waking every interval for ``LINGER`` seconds, then
sleeps on a condition until the next bar: a sweep's next run, shown while it lingers, costs no
wake-up. A wake-up costs 70-120 µs of CPU on a virtual machine (measured: a 20 ms
``time.sleep`` 72 µs, a condition's timed wait 118 µs); waking the thread from ``show`` put one
in every short run, while a lingering thread's timed wakes come once per interval, as the draws
of a longer run do.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

__all__ = ["TICKER", "Ticker"]

_log = logging.getLogger(__name__)

Shown = tuple[Callable[[], None], float]  # (draw, seconds between draws)

LINGER = 10.0  # seconds the thread keeps waking after its last bar was hidden
_MIN_LINGER_WAIT = 0.05  # a bar drawn every few ms does not make its thread linger as often


class Ticker:
    """Calls the shown bar's ``draw`` every ``interval`` seconds, from a daemon thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shown: Shown | None = None
        self._thread: threading.Thread | None = None
        self._idle = False  # the thread waits for a bar with no timeout: show must notify
        self._wait = 0.0  # the timeout of the thread's current timed wait

    @property
    def showing(self) -> bool:
        """Whether a bar is being drawn by the thread now."""
        return self._shown is not None

    @property
    def sleeping(self) -> bool:
        """Whether the thread sleeps until a bar is shown (none was for ``LINGER`` seconds)."""
        return self._idle

    def show(self, draw: Callable[[], None], interval: float) -> None:
        """Call ``draw`` every ``interval`` seconds until ``hide``; replaces a bar shown.

        Within ``LINGER`` seconds of the last bar (a sweep's next run) the thread, still in
        a timed wait, is not woken (a wake-up costs more CPU than a short run's whole bar):
        the first call comes after that wait (the last bar's interval, at least 50 ms) and
        one interval. It is woken when ``interval`` is shorter than that wait (a bar drawn
        every 0.25 s after one drawn every minute)."""
        with self._cond:
            self._shown = (draw, interval)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="trainledger-progress", daemon=True
                )
                self._thread.start()
            elif self._idle or interval < self._wait:  # else it finds this one when it wakes
                self._cond.notify()

    def hide(self, draw: Callable[[], None]) -> None:
        """Stop calling ``draw`` (if it is the bar shown). A call already under way may still
        finish: the bar checks, under its own lock, that it is still open."""
        with self._cond:
            if self._shown is not None and self._shown[0] == draw:
                self._shown = None  # no notify: the thread finds out at its next tick

    def _run(self) -> None:
        cond = self._cond
        linger_wait, hidden_at = _MIN_LINGER_WAIT, None
        while True:
            with cond:
                shown = self._shown
                if shown is None:
                    now = time.monotonic()
                    hidden_at = now if hidden_at is None else hidden_at
                    if now - hidden_at < LINGER:
                        self._wait = linger_wait
                        cond.wait(linger_wait)
                        continue
                    self._idle = True  # long enough: sleep until a show notifies
                    while self._shown is None:
                        cond.wait()
                    self._idle = False
                    continue
                hidden_at, linger_wait = None, max(shown[1], _MIN_LINGER_WAIT)
                self._wait = shown[1]
                cond.wait(shown[1])  # woken early by a bar with a shorter interval
                if self._shown is not shown:
                    continue
            try:
                shown[0]()
            except Exception as exc:  # a display that fails stops drawing, never the training
                _log.debug("progress bar stopped drawing: %r", exc)
                self.hide(shown[0])

    def _after_fork(self) -> None:
        """In a forked child the thread is gone and the condition may be held: start over."""
        self.__init__()  # type: ignore[misc]


TICKER = Ticker()
os.register_at_fork(after_in_child=TICKER._after_fork)
