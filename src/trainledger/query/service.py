"""``QueryService``: the index of one base for a long-lived reader (the web UI).

Why two index objects: the index's re-scan (a stat of every run directory, about 0.2 s for
10,000 runs, more on a busy machine) holds its index object while it works. Queries go
through a second object on the same index (SQLite's WAL, PostgreSQL's snapshots: readers
never wait for the writer), and re-scans run in a background thread at most every
``rescan_interval`` seconds when a caller asks for ``stamp()`` (in the caller's own thread;
other calls start one in the background only when the data is older than ``stale_after``),
so a burst of sorting and paging costs SQL only. At start-up, an index left by an earlier
process answers at once while the re-scan catches up; only a base without an index waits
for the first build. Every change of the runs or of the annotations, by any process
(``LineageIndex.data_stamp``), bumps the data version, and answers are cached per version,
so paging back and forth is a dictionary lookup. ``background_rescan=False`` (tests) scans
inside the call instead.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from trainledger.errors import IndexRebuildingError
from trainledger.query.annotations import UNSET
from trainledger.query.index import LineageIndex

__all__ = ["QueryService"]

# Completes a fresh result (in place) before it is cached: (result, condition) -> None.
Finish = Callable[[dict[str, Any], Mapping[str, Any] | None], None]
_MAX_CACHED_RESULTS = 256


class QueryService:
    """Re-scans, data versions and a result cache over one base's ``LineageIndex``.

    ``finish`` (the web UI adds run ids and run info) runs once on each fresh result; the
    cached, finished result is shared between callers, who must not modify it. ``index`` and
    ``name`` are ``LineageIndex``'s (a shared PostgreSQL index, the base's name there).
    ``scan_guard`` is entered around each scan: over the index's copy of an ``s3://`` base,
    the lock its syncs hold, so a scan never meets a stand-in being changed
    (``object_copy.py``).
    """

    def __init__(
        self,
        base: Path,
        *,
        max_depth: int = 1,
        rescan_interval: float = 2.0,
        stale_after: float = 10.0,
        background_rescan: bool = True,
        finish: Finish | None = None,
        index: str | None = None,
        name: str | None = None,
        scan_guard: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> None:
        self.base = base
        self._guard = scan_guard  # held around each scan (a copy of object storage: its lock)
        self.rescan_interval = rescan_interval
        self.stale_after = max(stale_after, rescan_interval)
        self.background_rescan = background_rescan
        self._finish = finish
        self._index = LineageIndex(base, max_depth=max_depth, index=index, name=name)  # scans
        self._reader = LineageIndex(base, max_depth=max_depth, index=index, name=name)
        self._lock = threading.RLock()  # guards the caches below
        self._scan_lock = threading.Lock()  # one scan at a time
        self._scanned = threading.Event()
        self._checked_at = -math.inf
        self._data_stamp: object = None
        self._version = 0
        self._results: OrderedDict[tuple[int, str], dict[str, Any]] = OrderedDict()
        self._counts: dict[int, int] = {}
        self._known: dict[str, bool] = {}

    @property
    def version(self) -> int:
        """The data version: changes whenever the runs or their annotations changed."""
        return self._version

    # -- scanning ---------------------------------------------------------------------------

    def _stamp_now(self) -> object:
        """What changes when any process changed the runs or annotations of the index."""
        return self._reader.data_stamp()

    def _first_scan(self) -> None:
        with self._scan_lock:
            if self._scanned.is_set():
                return
            try:
                stale_ok = self.background_rescan and self._count_now() > 0
            except IndexRebuildingError:  # a file no scan completed: build it first
                stale_ok = False
            if not stale_ok:
                with self._guard():
                    self._index.refresh()
                self._checked_at = time.monotonic()
            self._data_stamp = self._stamp_now()
            self._bump()
            self._scanned.set()

    def ensure_fresh(self, max_age: float | None = None) -> None:
        """Scan once at first use; later, re-scan when the data is older than ``max_age``
        (default ``stale_after``), in the background unless ``background_rescan=False``."""
        if not self._scanned.is_set():
            self._first_scan()
        if time.monotonic() - self._checked_at < (self.stale_after if max_age is None else max_age):
            return
        if not self.background_rescan:
            self.rescan()
        elif not self._scan_lock.locked():
            threading.Thread(target=self.rescan, name="trainledger-rescan", daemon=True).start()

    def rescan(self, wait: bool = False, force: bool = False) -> None:
        """Re-scan BASE (the index re-parses only new or changed runs); a no-op when another
        scan runs (unless ``wait``) or the last one is younger than ``rescan_interval``
        (unless ``force``: after this process moved or deleted a run itself)."""
        if not self._scan_lock.acquire(blocking=wait or force or not self.background_rescan):
            return
        try:
            if not force and time.monotonic() - self._checked_at < self.rescan_interval:
                return
            with self._guard():
                stats = self._index.refresh()
            stamp = self._stamp_now()
            changed = (
                bool(stats.parsed or stats.removed or stats.statuses) or stamp != self._data_stamp
            )
            self._data_stamp = stamp
            self._checked_at = time.monotonic()
            if changed:
                self._bump()
        finally:
            self._scan_lock.release()

    def _rebuild_started(self) -> None:
        """The reader met an index no scan completed (deleted or replaced under us): start
        the rebuild now rather than at the next due re-scan; the caller answers 503."""
        if not self._scan_lock.locked():
            threading.Thread(
                target=self.rescan, kwargs={"force": True}, name="trainledger-rebuild", daemon=True
            ).start()

    def _bump(self) -> None:
        with self._lock:
            self._version += 1
            self._results.clear()
            self._counts.clear()
            self._known.clear()

    # -- reads ------------------------------------------------------------------------------

    def _query(self, condition: dict[str, Any] | None) -> dict[str, Any]:
        """The reader's answer; an index being rebuilt starts its rebuild and is raised."""
        try:
            return self._reader.query(condition, refresh=False, nan_values=True)
        except IndexRebuildingError:
            self._rebuild_started()
            raise

    def _count_now(self) -> int:
        return int(self._query({"offset": 0, "limit": 1})["count"])

    def stamp(self, scan: bool = True) -> tuple[int, int]:
        """``(version, number of runs)``, re-scanned in the caller's thread when due: a poll
        may wait for a scan, the other calls never do. ``scan=False``: the index as it is
        (a page's first look, whose own requests should not share the process with a scan)."""
        self.ensure_fresh()
        if scan and time.monotonic() - self._checked_at >= self.rescan_interval:
            self.rescan(wait=True)
        version = self._version
        with self._lock:
            count = self._counts.get(version)
        if count is None:
            count = self._count_now()
            with self._lock:
                if version == self._version:
                    self._counts[version] = count
        return version, count

    def search(self, condition: Mapping[str, Any] | None) -> dict[str, Any]:
        """``LineageIndex.query`` of the current data version, cached (shared: read only)."""
        self.ensure_fresh()
        version = self._version
        key = (version, json.dumps(condition, sort_keys=True, default=repr))
        with self._lock:
            hit = self._results.get(key)
            if hit is not None:
                self._results.move_to_end(key)
                return hit
        result = self._query(None if condition is None else dict(condition))
        if self._finish is not None:
            self._finish(result, condition)
        with self._lock:
            if version == self._version:
                self._results[key] = result
                while len(self._results) > _MAX_CACHED_RESULTS:
                    self._results.popitem(last=False)
        return result

    def series_tags(self) -> list[str]:
        """``LineageIndex.series_tags`` of the current data."""
        self.ensure_fresh()
        return self._reader.series_tags()

    def nonfinite_series(self, summary_dirs: list[str]) -> dict[str, list[dict[str, Any]]]:
        """``LineageIndex.nonfinite_series`` of the current data."""
        self.ensure_fresh()
        return self._reader.nonfinite_series(summary_dirs)

    def series_overview(self, summary_dir: str, tag: str) -> tuple[str, bytes] | None:
        """``LineageIndex.series_overview`` of the current data."""
        self.ensure_fresh()
        return self._reader.series_overview(summary_dir, tag)

    def is_known(self, summary_dir: str) -> bool:
        """Whether the index holds a run with this ``./<id>`` summary_dir (a SQL lookup,
        cached per version; the filesystem is never asked)."""
        self.ensure_fresh()
        with self._lock:
            hit = self._known.get(summary_dir)
        if hit is None:
            cond = {"summary_dir": {"eq": summary_dir}, "offset": 0, "limit": 1}
            hit = self._query(cond)["count"] == 1
            with self._lock:
                self._known[summary_dir] = hit
        return hit

    def annotation(self, summary_dir: str) -> dict[str, Any]:
        """The run's ``{"tag", "remark"}`` (either may be absent)."""
        return self._reader.get_annotations().get(summary_dir, {})

    def annotate(
        self, summary_dir: str, *, tag: int | None = None, remark: str | None = None
    ) -> dict[str, Any]:
        """Set the tag and/or remark given (0 or "" clears it); a new data version."""
        entry = self._reader.set_annotation(
            summary_dir,
            tag=UNSET if tag is None else (tag or None),
            remark=UNSET if remark is None else (remark or None),
        )
        self._bump()
        return entry

    def close(self) -> None:
        """Let a background re-scan finish (up to 30 s), then close both index objects."""
        locked = self._scan_lock.acquire(timeout=30)
        try:
            self._index.close()
            self._reader.close()
        finally:
            if locked:
                self._scan_lock.release()
