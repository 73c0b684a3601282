"""SIGINT/SIGTERM during training become a stop request, so end hooks finalize the run.

The first SIGINT or SIGTERM calls ``run_context.request_stop("signal")``: the loop finishes the
current step, runs ``on_train_epoch_end`` and ``on_train_end`` (checkpoints and summaries are
written), and returns. A second SIGINT raises ``KeyboardInterrupt`` at once, for a user who
does not want to wait. Handlers can only be installed from the main thread; elsewhere (a
training thread, a notebook worker) the context manager does nothing and signals keep their
usual behaviour.

Handlers are set with the C function ``signal.signal`` wraps: the wrapper turns the handler it
returns into an ``Enum`` member, a failed lookup (a raised and caught ``ValueError``) for every
Python handler, three of the four calls of a run: about 10 of their 11 µs.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from trainledger.run.callback import RunContext

try:
    from _signal import signal as _set_handler
except ImportError:  # pragma: no cover - an interpreter other than CPython
    _set_handler = signal.signal

__all__ = ["stop_on_signals"]

_log = logging.getLogger("trainledger.run")


def _signals() -> list[signal.Signals]:
    sigs = [signal.SIGINT]
    sigterm = getattr(signal, "SIGTERM", None)
    if sigterm is not None:
        sigs.append(sigterm)
    return sigs


@contextmanager
def stop_on_signals(run_context: RunContext) -> Iterator[bool]:
    """Turn SIGINT/SIGTERM into ``run_context.request_stop("signal")`` inside the block.

    Yields whether the handlers were installed (False off the main thread). Previous handlers
    are restored on exit, so nesting (``fit`` -> ``eval``) and other libraries' handlers work.
    """
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous: dict[signal.Signals, Any] = {}
    received = 0

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        if received > 1 and signum == signal.SIGINT:
            raise KeyboardInterrupt
        name = signal.Signals(signum).name
        _log.warning(
            "%s received: stopping after the current step (press Ctrl-C again to abort)", name
        )
        run_context.request_stop("signal")

    try:
        for sig in _signals():
            previous[sig] = _set_handler(sig, handler)
    except (ValueError, OSError):  # not the main interpreter / unsupported platform
        _restore(previous)
        yield False
        return
    try:
        yield True
    finally:
        _restore(previous)


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for sig, old in previous.items():
        try:
            _set_handler(sig, old if old is not None else signal.SIG_DFL)
        except (ValueError, OSError):  # pragma: no cover - same thread that installed them
            pass
