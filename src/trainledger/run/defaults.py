"""Default callbacks: what ``Model`` adds by itself when a run is watched on a terminal.

The training host imports no callback, so the callbacks that ship with trainledger register
here instead: ``trainledger`` (the facade, imported before any of its packages) registers the
``ProgressBar`` factory, so ``from trainledger import Model`` and ``from trainledger.run import
Model`` both show a progress bar on a terminal. A factory receives the run's callbacks and
returns the callback to add, or None (e.g. when the user already passed one of its kind).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from trainledger.run.callback import Callback

__all__ = ["DefaultCallbackFactory", "add_default_callback", "default_callbacks", "stdout_is_tty"]

DefaultCallbackFactory = Callable[[list[Callback]], Callback | None]

_FACTORIES: list[DefaultCallbackFactory] = []


def add_default_callback(factory: DefaultCallbackFactory) -> None:
    """Register ``factory``, called at the start of every ``train``/``fit``/``online_train``
    whose stdout is a terminal while ``Model.show_progress`` is true. Registering the same
    factory twice keeps one."""
    if not callable(factory):
        raise TypeError(
            f"add_default_callback expected a callable, received: {type(factory).__name__}"
        )
    if factory not in _FACTORIES:
        _FACTORIES.append(factory)


def default_callbacks(given: list[Callback]) -> list[Callback]:
    """The callbacks the registered factories add to ``given`` (none off a terminal)."""
    if not _FACTORIES or not stdout_is_tty():
        return []
    added: list[Callback] = []
    for factory in _FACTORIES:
        cb = factory([*given, *added])
        if cb is not None:
            added.append(cb)
    return added


def stdout_is_tty() -> bool:
    """Whether ``sys.stdout`` is a TTY now (one ioctl: also after ``os.dup2`` onto its
    descriptor); False for a stream without a descriptor or a closed one."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
