"""In-process change notes: a writer of this process tells watchers what it just changed.

A ``query.watch.BaseWatcher`` learns of other processes' writes from the kernel, a few tens
of milliseconds late. A write made by this very process must be visible to this process's
next query at once (a script that trains, then queries), so the lineage writer and the run
housekeeping call ``note_change(path)`` right after they change a file, and every watcher of
a base holding ``path`` records it synchronously.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["note_change", "on_change", "remove_listener"]

_listeners: list[Callable[[str], None]] = []
_lock = threading.Lock()


def on_change(listener: Callable[[str], None]) -> None:
    """Call ``listener(path)`` for every change noted in this process from now on."""
    with _lock:
        _listeners.append(listener)


def remove_listener(listener: Callable[[str], None]) -> None:
    """Stop calling ``listener`` (no error if it was not registered)."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def note_change(path: str) -> None:
    """This process just created, changed, moved or removed ``path`` (a file or directory)."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(path)
