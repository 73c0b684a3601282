"""Where runs bound for object storage are written, and when they must be in the store.

A writer given ``s3://bucket/key`` writes ``$TRAINLEDGER_STAGING_DIR/bucket/key`` (default
``~/.cache/trainledger/staging/...``), and one ``UploadMirror`` per location and process
uploads it in the background. The guarantees (``docs/object-storage.md``):

- **A run is in the store when training returns.** ``flush_mirrors`` makes a final pass of
  every mirror of the process, synchronously, within ``TRAINLEDGER_OBJECT_DEADLINE`` seconds;
  the training host, ``SummaryRecord.close``, ``track()`` and the integrations call it at their
  end and raise ``ObjectStoreError`` when it fails, the files staying in staging, marked
  ``failed``. A process that ends without calling it still gets a final pass at exit, run from
  threading's exit hooks: ``atexit`` is too late, after ``concurrent.futures`` (which s3fs
  needs) has refused new work. The deadline bounds the whole wait at the end once: after a
  failed ``flush_mirrors`` the exit hook waits only for what is left of that deadline.
- **A wrong bucket fails before training**: the first ``staging_dir`` of a location checks it.
- **Remote deletions only on request**: ``remove_written`` is the one way a writer deletes what
  it wrote (retention, landscapes' snapshots, a replaced sharded checkpoint, an import).
- ``sync_staging`` (``trainledger sync``) uploads what a killed or failed process left.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from trainledger.errors import ObjectStoreError
from trainledger.storage.atomic import pid_alive
from trainledger.storage.change_log import ChangeRecorder
from trainledger.storage.mirror import UploadMirror, local_for, read_state, user_root
from trainledger.storage.naming import STAGING_STATE
from trainledger.storage.objects import ObjectLocation, ObjectStore, store_settings
from trainledger.storage.parallel import before_executors_stop

__all__ = [
    "staging_root",
    "staging_dir",
    "flush_mirrors",
    "close_mirrors",
    "remove_written",
    "staged_location",
    "StagedLocation",
    "staged_locations",
    "sync_staging",
]

_log = logging.getLogger(__name__)
_MIRRORS: dict[tuple[int, str], UploadMirror] = {}
_MIRRORS_LOCK = threading.Lock()
# (pid, monotonic end) of this process's last end-of-run upload that failed: the exit hook
# waits only for what is left of it, so the deadline bounds the whole wait at the end once.
_FAILED_END: list[tuple[int, float]] = []


def staging_root() -> str:
    """Where staging directories live (``$TRAINLEDGER_STAGING_DIR`` or ~/.cache/...)."""
    return str(user_root("TRAINLEDGER_STAGING_DIR", "staging"))


def staging_dir(url: str, interval: float = 2.0, store: ObjectStore | None = None) -> str:
    """The local directory to write for ``url``, with a mirror uploading it (one per process).

    The first call for a location checks its bucket (``ObjectStoreError`` before any training
    when it is missing or unreachable). Files left there by a killed process are uploaded by
    the next mirror of the same location, or by ``trainledger sync``.
    """
    loc = ObjectLocation.parse(url)
    local = local_for(Path(staging_root()), loc)
    key = (os.getpid(), loc.url)
    with _MIRRORS_LOCK:
        if key not in _MIRRORS:
            store = store or ObjectStore()
            store.check_bucket(loc)
            os.makedirs(local, exist_ok=True)
            mirror = UploadMirror(local, loc, store, interval)
            mirror.mark("writing")
            _MIRRORS[key] = mirror.start()
            # before s3fs's executor stops (see the module doc); s3fs registered its own
            # exit hook when it was imported, before any mirror existed
            before_executors_stop(close_mirrors)
    return local


def _own_mirrors() -> list[UploadMirror]:
    with _MIRRORS_LOCK:
        return [m for (pid, _), m in _MIRRORS.items() if pid == os.getpid()]


def _final_pass(mirror: UploadMirror, seconds: float) -> str | None:
    """A final pass within ``seconds``; the error text, or None when every file is in the
    store. A pass that overruns is left to finish on its daemon thread."""
    if seconds <= 0:  # an earlier wait of this process used the deadline up
        return "the end-of-run upload used up TRAINLEDGER_OBJECT_DEADLINE; not tried again"
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            mirror.finish()
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=work, name="trainledger-upload", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return f"the store did not finish within {seconds:.0f} s (TRAINLEDGER_OBJECT_DEADLINE)"
    return str(outcome[0]) if outcome else None


def _end_of(deadline: float | None) -> float:
    """The monotonic time ``deadline`` seconds from now (default TRAINLEDGER_OBJECT_DEADLINE)."""
    return time.monotonic() + (store_settings()["deadline"] if deadline is None else deadline)


def _finish(mirrors: list[UploadMirror], end: float) -> list[str]:
    """Final passes of ``mirrors``, all over by ``end`` (monotonic)."""
    failures: list[str] = []
    for mirror in mirrors:
        error = _final_pass(mirror, end - time.monotonic())
        mirror.mark("failed" if error else "synced", error)
        if error:
            failures.append(f"{mirror.remote.url} (staged in {mirror.local_dir}): {error}")
    return failures


def flush_mirrors(deadline: float | None = None) -> None:
    """Upload now what this process's writers wrote, waiting at most ``deadline`` seconds
    (default ``TRAINLEDGER_OBJECT_DEADLINE``, 300). Raises ``ObjectStoreError`` naming each
    location that could not be completed; its files stay in staging, marked ``failed``, and
    the exit hook waits only for what is left of this deadline (not a deadline of its own)."""
    mirrors = _own_mirrors()
    if not mirrors:
        return
    end = _end_of(deadline)
    failures = _finish(mirrors, end)
    _FAILED_END[:] = [(os.getpid(), end)] if failures else []
    if failures:
        raise ObjectStoreError(
            "could not upload the run to object storage; the files stay in the staging "
            "directory, and `trainledger sync` uploads them later: " + "; ".join(failures)
        )


def close_mirrors() -> None:
    """Stop every mirror of this process after a final pass (at exit; errors are logged).
    After a failed ``flush_mirrors`` the pass gets only what is left of its deadline."""
    with _MIRRORS_LOCK:
        mine = [k for k in _MIRRORS if k[0] == os.getpid()]
        mirrors = [_MIRRORS.pop(k) for k in mine]
    for mirror in mirrors:
        mirror.stop(timeout=0)
    end = next((at for pid, at in _FAILED_END if pid == os.getpid()), None)
    _FAILED_END.clear()  # spent: a later end of this process has a deadline of its own
    for failure in _finish(mirrors, _end_of(None) if end is None else end):
        _log.error("could not upload %s; run `trainledger sync` to upload it", failure)


def remove_written(path: str | os.PathLike[str]) -> None:
    """Delete a file or directory a writer wrote, and its objects when it lies in a staging
    directory: the one explicit delete call (see the module doc). A missing path is fine."""
    given = os.path.abspath(os.fspath(path))  # the parent resolved, a link itself removed
    text = os.path.join(os.path.realpath(os.path.dirname(given)), os.path.basename(given))
    if os.path.isdir(text) and not os.path.islink(text):
        shutil.rmtree(text, ignore_errors=True)
    else:
        try:
            os.unlink(text)
        except FileNotFoundError:
            pass
    told = False
    for mirror in _own_mirrors():
        base = os.path.realpath(mirror.local_dir)
        if text.startswith(base + os.sep):
            mirror.request_delete(os.path.relpath(text, base))
            told = True
    if not told:
        _delete_unmirrored(text)


def staged_location(path: str, root: str) -> ObjectLocation | None:
    """The object location of ``path`` (normalised as ``root`` is) in the staging directories
    under ``root``: ``root/bucket/key...`` -> ``s3://bucket/key...``; None elsewhere."""
    if not path.startswith(root + os.sep):
        return None
    parts = os.path.relpath(path, root).split(os.sep)
    if len(parts) < 2:
        return None
    return ObjectLocation(parts[0], "/".join(parts[1:]))


def _delete_unmirrored(path: str) -> None:
    """A staged path no mirror of this process watches (an earlier run's): delete its
    objects now. A failure is logged: a leftover object loses nothing."""
    loc = staged_location(path, os.path.realpath(staging_root()))
    if loc is None:
        return
    try:
        store = ObjectStore()
        recorder = ChangeRecorder(store, loc.bucket)
        for rel in store.list(loc):
            store.delete(loc.child(rel))
            recorder.record(loc.child(rel), None)
        store.delete(loc)
    except (ObjectStoreError, OSError) as exc:
        _log.warning("could not delete %s from the store: %s", loc.url, exc)


@dataclass(frozen=True)
class StagedLocation:
    """A staging directory and what its state file says."""

    url: str
    directory: str
    state: str
    error: str | None
    writer_alive: bool

    @property
    def unsynced(self) -> bool:
        """Files that may not be in the store: a failed final upload, or a writer that
        stopped before its end (a live writer still sends what it writes)."""
        return self.state == "failed" or (self.state != "synced" and not self.writer_alive)


def staged_locations(root: str | None = None, under: str | None = None) -> list[StagedLocation]:
    """Every staging directory below ``root`` (default ``staging_root()``), optionally only
    those whose URL is ``under`` (an ``s3://`` prefix) or below it."""
    top = root or staging_root()
    found: list[StagedLocation] = []
    prefix = under.rstrip("/") if under else None
    for parent, dirs, files in os.walk(top):
        dirs.sort()
        if STAGING_STATE not in files:
            continue
        state = read_state(parent)
        if state is None:
            continue
        url = str(state["url"])
        if prefix and not (url == prefix or url.startswith(prefix + "/")):
            continue
        alive = state.get("host") == socket.gethostname() and pid_alive(int(state.get("pid", 0)))
        found.append(
            StagedLocation(url, parent, str(state.get("state")), state.get("error"), alive)
        )
    return found


def sync_staging(
    root: str | None = None, *, force: bool = False, deadline: float | None = None
) -> list[tuple[StagedLocation, str | None]]:
    """Upload every staging directory below ``root`` whose writer is gone (all with
    ``force``); returns each location with its error (None: now in the store)."""
    results: list[tuple[StagedLocation, str | None]] = []
    for staged in staged_locations(root):
        if staged.writer_alive and not force:
            continue
        mirror = UploadMirror(staged.directory, ObjectLocation.parse(staged.url), interval=0)
        failures = _finish([mirror], _end_of(deadline))
        results.append((staged, failures[0] if failures else None))
    return results
