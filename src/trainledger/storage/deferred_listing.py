"""A new index copy's first listing, run after its first answer rather than before it.

Why: a new reader of a big base must download every lineage object anyway; listing the
prefix first (one request per 1,000 objects, one after another) came on top of that. A base
written by trainledger's writers has snapshots of its change records (``storage.compaction``),
which name every object those writers made, so a new copy answers from the newest snapshot and
the records after it (``storage.copy_sync``), and the listing that finds what a writer that
records nothing put there runs here, on a daemon thread, under the copy's lock. What it finds
is in the copy for the next query, and recorded for other readers (``storage.cache``).

At interpreter exit a listing under way is waited for (a command-line query has printed its
answer by then), so the next process does not start it again; Ctrl-C stops the wait, and the
next process's query starts it again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from trainledger.errors import ObjectStoreError
from trainledger.storage.parallel import before_executors_stop

__all__ = ["list_later", "wait_listings"]

_log = logging.getLogger(__name__)
_running: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def list_later(copy: str, url: str, listing: Callable[[], None]) -> None:
    """Run ``listing`` (the due listing of ``copy``, the local copy of ``url``, taking the
    copy's lock itself) on a daemon thread, unless one of ``copy`` is under way in this
    process."""
    with _lock:
        if (found := _running.get(copy)) is not None and found.is_alive():
            return
        thread = threading.Thread(
            target=_run, args=(url, listing), name=f"trainledger-listing {url}", daemon=True
        )
        _running[copy] = thread
        before_executors_stop(_wait_at_exit)
        thread.start()


def _run(url: str, listing: Callable[[], None]) -> None:
    try:
        listing()
    except (ObjectStoreError, OSError) as exc:  # due still: the next query starts it again
        _log.warning("the listing of %s after its first answer failed: %s", url, exc)
    except Exception:  # noqa: BLE001 - a thread of its own: logged, due still
        _log.exception("the listing of %s after its first answer failed", url)


def _wait_at_exit() -> None:
    wait_listings()


def wait_listings(timeout: float | None = None) -> bool:
    """Wait for this process's listings under way (at most ``timeout`` seconds); True when
    none is left (a benchmark times them apart, a test reads what they found)."""
    with _lock:
        threads = list(_running.values())
    for thread in threads:
        thread.join(timeout)
    return not any(t.is_alive() for t in threads)
