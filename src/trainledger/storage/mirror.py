"""Upload a local staging directory to an object-store prefix, one whole object per file.

Every writer of a run (summaries, lineage, checkpoints) writes a local *staging* directory
exactly as it writes any run directory (``storage.staging`` says where), and ``UploadMirror``
uploads each file whose size or mtime changed, as one object. Temp files are never uploaded,
so a checkpoint appears in the store only after its local atomic rename and only once its
upload is complete: the store never shows a partial object under a final name.

Two rules keep the store safe from what happens to the local copy:

- **No deletion by absence.** A file missing locally is never deleted remotely: someone may
  have cleaned the staging directory. Remote objects are deleted only for a writer's explicit
  request (``request_delete``, through ``storage.staging.remove_written``), and only if the
  file is still absent locally when the request is carried out.
- **Growing files by size and age.** A file already uploaded that changed again is sent on a
  background pass only when its last upload is at least ``interval * max(1, size / 8 MiB)``
  seconds old: a 100 MB event file goes up every 25 s at the default 2 s interval, not every
  2 s (about 4 MB/s for a file that grows for ever). A final pass sends everything now.

Each staging directory holds its state (``naming.STAGING_STATE``): the URL, the writing
process, and ``writing``, ``synced`` or ``failed``, so ``trainledger sync`` and the readers can
tell a directory whose files never reached the store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from trainledger.errors import ObjectStoreError
from trainledger.storage.atomic import atomic_write_bytes
from trainledger.storage.change_log import ChangeRecorder
from trainledger.storage.compaction import maybe_compact
from trainledger.storage.naming import (
    CHANGES_STATE,
    INDEX_DIRNAME,
    OBJECTS_MANIFEST,
    STAGING_STATE,
    is_temp_name,
)
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore

__all__ = ["UploadMirror", "GROWTH_BYTES", "read_state", "user_root", "local_for", "skipped"]

_log = logging.getLogger(__name__)
_PART_MARK = ".part-"
#: a changed file waits ``interval`` seconds more per this many bytes before it is sent again
GROWTH_BYTES = 8 * 2**20


def user_root(env: str, *tail: str) -> Path:
    """``$env``, or ``$XDG_CACHE_HOME/trainledger/<tail>`` (default ``~/.cache``)."""
    base = os.environ.get(env)
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "trainledger", *tail)


def local_for(root: Path, loc: ObjectLocation) -> str:
    """The local directory of ``loc`` under ``root``: ``root/bucket/key...``."""
    return str(root.joinpath(loc.bucket, *loc.key.split("/")) if loc.key else root / loc.bucket)


def skipped(rel: str) -> bool:
    """Files never mirrored either way: temp files, locks, downloads in progress, the object
    bookkeeping files and the query index."""
    name = rel.rsplit("/", 1)[-1]
    return (
        is_temp_name(name)
        or name.endswith(".lock")
        or _PART_MARK in name
        or name in (OBJECTS_MANIFEST, STAGING_STATE, CHANGES_STATE)
        or rel.split("/", 1)[0] == INDEX_DIRNAME
    )


def _md5(path: str) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _local_files(directory: str) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime_ns) of every regular file worth mirroring."""
    out: dict[str, tuple[int, int]] = {}
    for parent, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != INDEX_DIRNAME]
        for name in files:
            path = os.path.join(parent, name)
            rel = os.path.relpath(path, directory).replace(os.sep, "/")
            if skipped(rel):
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # deleted while we walked
                continue
            if os.path.isfile(path):
                out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def read_state(directory: str) -> dict[str, Any] | None:
    """A staging directory's state record, or None where there is none (or it is damaged)."""
    try:
        with open(os.path.join(directory, STAGING_STATE), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("url"), str) else None


class UploadMirror:
    """Upload a local directory's files to ``remote`` as whole objects (see the module doc).

    Args:
        local_dir: the staging directory the writers write.
        remote: the object prefix it mirrors.
        store: the client (a new ``ObjectStore`` by default).
        interval: seconds between background passes (``start``); 0 or less: none.
    """

    def __init__(
        self,
        local_dir: str | os.PathLike[str],
        remote: ObjectLocation,
        store: ObjectStore | None = None,
        interval: float = 2.0,
    ) -> None:
        self.local_dir = os.fspath(local_dir)
        self.remote = remote
        self.store = store or ObjectStore()
        self.interval = float(interval)
        self._sent: dict[str, tuple[int, int]] = {}
        self._sent_at: dict[str, float] = {}
        self._deletes: set[str] = set()
        self._delete_lock = threading.Lock()
        self._pass_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._primed = False
        self._state = ""
        self._recorder: ChangeRecorder | None = None
        self._checked_at = 0  # (its records when ``finish`` last checked for a snapshot)
        self.last_error: BaseException | None = None

    def mark(self, state: str, error: str | None = None) -> None:
        """Record ``writing``, ``synced`` or ``failed`` in the directory's state file."""
        record = {
            "url": self.remote.url,
            "state": state,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "time": time.time(),
            "error": error,
        }
        try:
            atomic_write_bytes(
                os.path.join(self.local_dir, STAGING_STATE), json.dumps(record).encode()
            )
            self._state = state
        except OSError as exc:  # the state is advice; the files themselves are what matter
            _log.warning("could not record the staging state of %s: %s", self.local_dir, exc)

    def request_delete(self, rel: str) -> None:
        """Delete the objects of ``rel`` (a file, or a directory's files) on the next pass,
        if ``rel`` is still absent locally then."""
        with self._delete_lock:
            self._deletes.add(rel.replace(os.sep, "/").strip("/"))

    def _prime(self) -> None:
        """Files the store already holds are not sent again: same MD5 as a single-part
        object's ETag, or (multipart) same size and uploaded after the file last changed."""
        listing = self.store.list(self.remote)
        self._primed = True
        for rel, (size, mtime_ns) in _local_files(self.local_dir).items():
            info = listing.get(rel)
            if info is None or info.size != size:
                continue
            if "-" in info.etag:  # multipart ETag: not an MD5 of the bytes
                same = info.mtime_ns + 1_000_000_000 > mtime_ns  # S3 keeps whole seconds
            else:
                same = _md5(os.path.join(self.local_dir, rel)) == info.etag
            if same:
                self._sent[rel] = (size, mtime_ns)

    def _due(self, rel: str, sig: tuple[int, int], now: float, final: bool) -> bool:
        if self._sent.get(rel) == sig:
            return False
        last = self._sent_at.get(rel)
        if final or last is None:
            return True
        return now - last >= self.interval * max(1.0, sig[0] / GROWTH_BYTES)

    def sync(self, final: bool = True) -> int:
        """One pass: upload new and changed files (growing ones by the size-and-age rule
        unless ``final``), carry out delete requests; return how many objects changed."""
        with self._pass_lock:
            if not self._primed:
                self._prime()
            present = _local_files(self.local_dir)
            now = time.monotonic()
            changed = 0
            for rel, sig in sorted(present.items()):
                if not self._due(rel, sig, now, final):
                    continue
                if self._state == "synced":
                    self.mark("writing")
                target = self.remote.child(rel)
                try:
                    info = self.store.put_file(os.path.join(self.local_dir, rel), target)
                except FileNotFoundError:  # renamed or deleted meanwhile: the next pass sees it
                    continue
                self._record(target, info)
                self._sent[rel] = sig  # the signature from before the upload: a later write
                self._sent_at[rel] = time.monotonic()  # changes it, and a later pass sends it
                changed += 1
            return changed + self._apply_deletes(present)

    def _apply_deletes(self, present: dict[str, tuple[int, int]]) -> int:
        with self._delete_lock:
            requests, self._deletes = self._deletes, set()
        done = 0
        try:
            while requests:
                rel = requests.pop()
                under = rel + "/"
                targets = {r for r in self._sent if r == rel or r.startswith(under)} | {rel}
                for target in sorted(t for t in targets if t not in present):
                    if target == rel and any(p.startswith(under) for p in present):
                        continue  # a directory that exists again under the same name
                    self.store.delete(self.remote.child(target))
                    self._record(self.remote.child(target), None)
                    self._sent.pop(target, None)
                    self._sent_at.pop(target, None)
                    done += 1
        except BaseException:
            with self._delete_lock:  # keep what is left for the next pass
                self._deletes |= requests | {rel}
            raise
        return done

    def _record(self, loc: ObjectLocation, info: ObjectInfo | None) -> None:
        """The change record of an upload or delete just done (``storage.change_log``); a
        record that fails is logged, not raised: the object is in the store, and readers
        find it by the gap the next record shows, or by their safety listing."""
        if self._recorder is None:
            self._recorder = ChangeRecorder(self.store, self.remote.bucket)
        try:
            self._recorder.record(loc, info)
        except ObjectStoreError as exc:
            _log.warning("could not record the change of %s: %s", loc.url, exc)
            return
        maybe_compact(self._recorder)

    def start(self) -> UploadMirror:
        """Run ``sync`` every ``interval`` seconds on a daemon thread until ``stop``."""
        if self._thread is None and self.interval > 0:
            self._thread = threading.Thread(
                target=self._loop, name=f"trainledger-mirror {self.remote.url}", daemon=True
            )
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync(final=False)
                self.last_error = None
            except Exception as exc:  # keep mirroring; the final pass raises if still failing
                self.last_error = exc
                _log.warning("upload to %s failed, retrying: %s", self.remote.url, exc)

    def stop(self, timeout: float | None = None) -> None:
        """Stop the background thread (waiting at most ``timeout`` for a pass under way)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def finish(self) -> int:
        """A final pass (its error is raised); then, when it recorded anything new, whether
        the bucket's records are due a snapshot (``storage.compaction``: a base written by
        many short runs gets snapshots too)."""
        done = self.sync(final=True)
        recorder = self._recorder
        if recorder is not None and recorder.written != self._checked_at:
            self._checked_at = recorder.written
            maybe_compact(recorder, final=True)
        return done

    def close(self) -> None:
        """Stop the thread and ``finish``."""
        self.stop()
        self.finish()
