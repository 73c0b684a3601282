"""Change notification for a local base, so a warm query does not stat unchanged runs.

A long-lived reader (the web UI, a notebook that queries again and again) watches its base
with the kernel's file notification (inotify on Linux, FSEvents, ReadDirectoryChangesW),
through ``watchfiles``. Every change is logged with a generation number; a scanner remembers
the generation its last scan started at and asks ``changes_since(generation)`` for the paths
changed since: none means nothing to scan at all, a few means re-stat those directories only.

Trust is earned, not assumed: a watcher is used only after a probe file it wrote into the
index directory came back as an event (so the kernel really delivers them here; network file
systems often do not), and ``changes_since`` answers None (scan everything) when its log no
longer reaches back that far or the watcher failed (too many directories for the inotify
limit, a base that vanished). Writers on other machines reach a network file system without
events: there the scanners fall back to a full scan every ``FULL_RESCAN_SECONDS``.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable

from trainledger.storage import ARCHIVE_DIRNAME, INDEX_DIRNAME, on_change, remove_listener

__all__ = [
    "BaseWatcher",
    "WatchedScans",
    "watcher_for",
    "release_watcher",
    "WATCH_ENV",
    "FULL_RESCAN_SECONDS",
]

_log = logging.getLogger(__name__)
WATCH_ENV = "TRAINLEDGER_WATCH"  # "0" turns watching off
#: seconds after a process's first query its base watcher starts (``WatchedScans.start_soon``)
WATCH_START_DELAY = 0.05
#: even with a trusted watcher, scan everything this often (writers the kernel cannot see)
FULL_RESCAN_SECONDS = 60.0
_PROBE = ".watch-probe"
_LOG_MAX = 100_000
#: how long a probe waits for its event before the next is written: short, because the first
#: probe often lands before the kernel watches are in place, and trust should come at once
_PROBE_WAIT = 0.1


class BaseWatcher:
    """Watches ``base`` on a daemon thread and logs the changed paths with generations."""

    def __init__(self, base_real: str) -> None:
        self.base = base_real
        self._skip = tuple(os.path.join(base_real, d) for d in (INDEX_DIRNAME, ARCHIVE_DIRNAME))
        self._probe = os.path.join(base_real, INDEX_DIRNAME, _PROBE)
        self._lock = threading.Lock()
        self._log: list[tuple[int, str]] = []
        self._first = 1  # the oldest generation still in the log
        self.generation = 0
        self.trusted = False
        self.failed = False
        self.users = 0  # scanners using it (watcher_for / release_watcher)
        self._stop = threading.Event()
        self._probed = threading.Event()
        self._on_trusted: list[Callable[[], None]] = []
        self._thread = threading.Thread(
            target=self._run, name=f"trainledger-watch {base_real}", daemon=True
        )
        self._thread.start()
        threading.Thread(target=self._trust, name="trainledger-watch-probe", daemon=True).start()
        on_change(self._noted)

    def _noted(self, path: str) -> None:
        """A write of this process (``storage.note_change``): logged at once, no kernel lag."""
        if path.startswith(self.base + os.sep) and not self.failed:
            self._record([path])

    def _keep(self, change: object, path: str) -> bool:
        if path == self._probe:
            return True
        return not path.startswith(self._skip)

    def _run(self) -> None:
        try:
            import watchfiles  # noqa: PLC0415 - optional: without it, scans are full
        except ModuleNotFoundError:
            self.failed = True
            return
        try:
            for changes in watchfiles.watch(
                self.base,
                watch_filter=self._keep,
                debounce=200,
                step=20,
                stop_event=self._stop,
                raise_interrupt=False,
            ):
                self._record(path for _, path in changes)
        except Exception as exc:  # noqa: BLE001 - any failure: fall back to full scans
            _log.info("watching %s stopped (%s); queries scan the base instead", self.base, exc)
        self.failed = True

    def _record(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                if path == self._probe:
                    self._probed.set()
                    continue
                self.generation += 1
                self._log.append((self.generation, path))
            if len(self._log) > _LOG_MAX:
                drop = len(self._log) - _LOG_MAX // 2
                self._first = self._log[drop][0]
                del self._log[:drop]

    def _trust(self) -> None:
        """Write a probe until it comes back as an event; then the watcher is trusted."""
        deadline = time.monotonic() + 30
        while not self._stop.is_set() and not self.failed and time.monotonic() < deadline:
            try:
                os.makedirs(os.path.dirname(self._probe), exist_ok=True)
                with open(self._probe, "w") as fh:
                    fh.write(str(time.time()))
            except OSError:
                return
            if self._probed.wait(_PROBE_WAIT):
                with self._lock:
                    self.trusted = True
                    waiting, self._on_trusted = self._on_trusted, []
                for callback in waiting:
                    _call(callback)
                return

    def when_trusted(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the probe's thread) once the watcher is trusted, or now if it
        is: a reader proves its index fresh right then, not at its next query."""
        with self._lock:
            if not self.trusted:
                self._on_trusted.append(callback)
                return
        _call(callback)

    def changes_since(self, generation: int) -> set[str] | None:
        """Paths changed after ``generation``; None when that cannot be told (scan all)."""
        with self._lock:
            if not self.trusted or self.failed or generation < self._first - 1:
                return None
            return {path for gen, path in self._log if gen > generation}

    def close(self) -> None:
        """Stop watching; this process's own writes are no longer logged either."""
        self._stop.set()
        self.failed = True
        remove_listener(self._noted)


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception as exc:  # noqa: BLE001 - advice only: the next query checks anyway
        _log.info("a watcher's trust callback failed: %s", exc)


_TIMERS: set[threading.Timer] = set()
_TIMERS_LOCK = threading.Lock()


def _cancel_timers() -> None:
    """At interpreter exit: no watcher starts (a one-shot command ending right after its
    answer would otherwise pay for one)."""
    atexit.unregister(_cancel_timers)
    with _TIMERS_LOCK:
        timers = list(_TIMERS)
        _TIMERS.clear()
    for timer in timers:
        timer.cancel()


_WATCHERS: dict[str, BaseWatcher] = {}
_WATCHERS_LOCK = threading.Lock()


def watcher_for(base_real: str) -> BaseWatcher | None:
    """This process's watcher of ``base_real`` (started on first call), or None when
    watching is turned off (``TRAINLEDGER_WATCH=0``)."""
    if os.environ.get(WATCH_ENV, "1").strip() in ("0", "false", "no", "off"):
        return None
    with _WATCHERS_LOCK:
        watcher = _WATCHERS.get(base_real)
        if watcher is None:  # a failed one stays: its scanners scan in full
            watcher = _WATCHERS[base_real] = BaseWatcher(base_real)
        watcher.users += 1
        return watcher


def release_watcher(watcher: BaseWatcher) -> None:
    """One user less; the last one stops it (its thread ends within a ``step``)."""
    with _WATCHERS_LOCK:
        watcher.users -= 1
        if watcher.users > 0:
            return
        if _WATCHERS.get(watcher.base) is watcher:
            del _WATCHERS[watcher.base]
    watcher.close()


class WatchedScans:
    """A scanner's use of its base's watcher: which directories to look at, scan by scan.

    ``begin()`` answers the directories that changed since the last scan (an empty set: none,
    nothing to stat), or None for "scan everything": no trusted watcher yet, or the last full
    scan is older than ``FULL_RESCAN_SECONDS``. ``end(full)`` closes the scan. The watcher
    starts at the first scan (or at ``start``: a process's first check of the saved scan
    state), on its own threads, so that queries from a fraction of a second after a process's
    first answer on are cheap (a one-shot command pays a thread that its exit ends).
    """

    def __init__(self, base_real: str, enabled: bool) -> None:
        self.base = base_real
        self.enabled = enabled
        self.watcher: BaseWatcher | None = None
        self.since: int | None = None  # trust the watcher's events after this generation
        self._generation = 0
        self._trusted_at_start = False
        self._full_at = -math.inf
        self._scans = 0
        self._starting = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def start(self) -> None:
        """Start the base watcher now (once)."""
        with self._starting:
            if self.enabled and self.watcher is None and not self._closed:
                self.watcher = watcher_for(self.base)

    def start_soon(self, when_trusted: Callable[[], None] | None = None) -> None:
        """Start the base watcher ``WATCH_START_DELAY`` seconds after the refresh that asks
        is over, on a daemon timer (then ``when_trusted`` once it is trusted), once: neither
        that answer nor a one-shot command waits for the watcher's import and walk."""
        if not self.enabled or self.watcher is not None or self._timer is not None:
            return

        def start() -> None:
            self.start()
            if when_trusted is not None:
                self.when_trusted(when_trusted)

        self._timer = threading.Timer(WATCH_START_DELAY, start)
        self._timer.daemon = True
        with _TIMERS_LOCK:
            if not _TIMERS:
                atexit.register(_cancel_timers)  # (a process that ends never starts one)
            _TIMERS.add(self._timer)
        self._timer.start()

    def when_trusted(self, callback: Callable[[], None]) -> None:
        """``BaseWatcher.when_trusted`` of the started watcher (nothing without one)."""
        if self.watcher is not None:
            self.watcher.when_trusted(callback)

    def mark(self) -> int | None:
        """The trusted watcher's generation now (events after it are changes after now), or
        None: no trusted watcher."""
        watcher = self.watcher
        if watcher is None or not watcher.trusted or watcher.failed:
            return None
        return watcher.generation

    def quiet_since(self, mark: int, at: float) -> bool:
        """Whether the trusted watcher saw no change after ``mark``, taken at ``at``
        (``time.monotonic``) less than ``FULL_RESCAN_SECONDS`` ago."""
        watcher = self.watcher
        if watcher is None or time.monotonic() - at > FULL_RESCAN_SECONDS:
            return False
        return watcher.changes_since(mark) == set()

    def begin(self) -> set[str] | None:
        self._scans += 1
        watcher = self.watcher
        if watcher is None:
            return None
        self._trusted_at_start = watcher.trusted and not watcher.failed
        self._generation = watcher.generation  # before asking: later events wait their turn
        if self.since is None or time.monotonic() - self._full_at > FULL_RESCAN_SECONDS:
            return None
        paths = watcher.changes_since(self.since)
        if paths is None:
            return None
        dirs: set[str] = set()
        for path in paths:  # a path, its directory and that one's parent (a new run's
            parent = os.path.dirname(path)  # file arrives with its new directory)
            dirs.update((path, parent, os.path.dirname(parent)))
        return dirs

    def end(self, full: bool) -> None:
        """Later scans may trust the watcher from this scan's start on, if it was trusted
        then (what changed before is covered by this scan)."""
        trusted = self.watcher is not None and self._trusted_at_start and not self.watcher.failed
        self.since = self._generation if trusted else None
        if full:
            self._full_at = time.monotonic()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._starting:
            self._closed = True
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            release_watcher(watcher)
