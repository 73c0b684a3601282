"""Keep a local directory and an object-store prefix in step, one whole object per file.

Writing (``UploadMirror``): every writer of a run (summaries, lineage, checkpoints) writes a
local *staging* directory exactly as it writes any run directory, and a mirror thread uploads
each file whose size or mtime changed, as one object, every ``interval`` seconds and once more
when the mirror closes (``atexit`` closes every mirror ``staging_dir`` opened). Temp files are
never uploaded, so a checkpoint appears in the store only after its local atomic rename and
only once its upload is complete: the store never shows a partial object under a final name.
A file that grows (an event file, a lineage file) is uploaded again whole; the object is
replaced atomically, so a reader sees either the previous or the new version. A file the
writers delete (checkpoint retention) is deleted from the store. What a killed writer can lose:
the bytes written in its last ``interval`` seconds (default 2 s) plus an upload in flight; they
stay in the staging directory, and the next mirror of the same location on that machine (the
next process that writes there) uploads them.

Reading (``sync_down``): a base or run under ``s3://`` is copied into a local cache directory,
only the objects whose ETag changed since the last copy, and the local readers and the query
index then work on the cache. A ``max_age`` skips the listing when the cache is younger, so
the staleness of a remote base is bounded by ``max_age`` (plus the writers' ``interval``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from trainledger.storage.atomic import atomic_write_bytes
from trainledger.storage.naming import INDEX_DIRNAME, is_temp_name
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore

__all__ = [
    "UploadMirror",
    "staging_dir",
    "close_mirrors",
    "sync_down",
    "cache_dir",
    "staging_root",
    "MANIFEST_NAME",
]

_log = logging.getLogger(__name__)
#: the cache's record of which object version each local file is (ETag per relative path)
MANIFEST_NAME = ".trainledger-objects.json"
_PART_MARK = ".part-"


def _root(env: str, *tail: str) -> Path:
    base = os.environ.get(env)
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "trainledger", *tail)


def _local_for(root: Path, loc: ObjectLocation) -> str:
    return str(root.joinpath(loc.bucket, *loc.key.split("/")) if loc.key else root / loc.bucket)


def staging_root() -> str:
    """Where staging directories live (``$TRAINLEDGER_STAGING_DIR`` or ~/.cache/...)."""
    return str(_root("TRAINLEDGER_STAGING_DIR", "staging"))


def cache_dir(loc: ObjectLocation) -> str:
    """Where ``sync_down`` copies ``loc`` (``$TRAINLEDGER_CACHE_DIR`` or ~/.cache/trainledger)."""
    return _local_for(_root("TRAINLEDGER_CACHE_DIR", "objects"), loc)


def _skipped(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return (
        is_temp_name(name)
        or name.endswith(".lock")
        or _PART_MARK in name
        or name == MANIFEST_NAME
        or rel.split("/", 1)[0] == INDEX_DIRNAME
    )


def _md5(path: str) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _local_files(directory: str) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime_ns) of every file worth mirroring."""
    out: dict[str, tuple[int, int]] = {}
    for parent, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != INDEX_DIRNAME]
        for name in files:
            path = os.path.join(parent, name)
            rel = os.path.relpath(path, directory).replace(os.sep, "/")
            if _skipped(rel):
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:  # deleted while we walked
                continue
            out[rel] = (st.st_size, st.st_mtime_ns)
    return out


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
        self._pass_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._primed = False
        self.last_error: BaseException | None = None

    def _prime(self) -> None:
        """Files the store already holds are not sent again: same MD5 as a single-part
        object's ETag, or (multipart) same size and uploaded after the file last changed."""
        self._primed = True
        listing = self.store.list(self.remote)
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

    def sync(self) -> int:
        """One pass: upload new and changed files, delete vanished ones; return the count."""
        with self._pass_lock:
            if not self._primed:
                self._prime()
            now = _local_files(self.local_dir)
            changed = 0
            for rel, sig in sorted(now.items()):
                if self._sent.get(rel) == sig:
                    continue
                try:
                    self.store.put_file(os.path.join(self.local_dir, rel), self.remote.child(rel))
                except FileNotFoundError:  # renamed or deleted meanwhile: the next pass sees it
                    continue
                self._sent[rel] = sig  # the signature from before the upload: a later write
                changed += 1  # changes it, and the next pass sends the file again
            for rel in [r for r in self._sent if r not in now]:
                self.store.delete(self.remote.child(rel))
                del self._sent[rel]
                changed += 1
            return changed

    def start(self) -> UploadMirror:
        """Run ``sync`` every ``interval`` seconds on a daemon thread until ``close``."""
        if self._thread is None and self.interval > 0:
            self._thread = threading.Thread(
                target=self._loop, name=f"trainledger-mirror {self.remote.url}", daemon=True
            )
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
                self.last_error = None
            except Exception as exc:  # keep mirroring; the final pass raises if still failing
                self.last_error = exc
                _log.warning("upload to %s failed, retrying: %s", self.remote.url, exc)

    def close(self) -> None:
        """Stop the thread and make a final pass (its error is raised)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.sync()


_MIRRORS: dict[tuple[int, str], UploadMirror] = {}
_MIRRORS_LOCK = threading.Lock()


def staging_dir(url: str, interval: float = 2.0, store: ObjectStore | None = None) -> str:
    """The local directory to write for ``url``, with a mirror uploading it (one per process).

    The directory is ``$TRAINLEDGER_STAGING_DIR`` (or ~/.cache/trainledger/staging) plus the
    bucket and key; files left there by a killed process are uploaded by the next mirror.
    """
    loc = ObjectLocation.parse(url)
    local = _local_for(Path(staging_root()), loc)
    key = (os.getpid(), loc.url)
    with _MIRRORS_LOCK:
        if key not in _MIRRORS:
            os.makedirs(local, exist_ok=True)
            _MIRRORS[key] = UploadMirror(local, loc, store, interval).start()
    return local


def close_mirrors() -> None:
    """Final pass of every mirror this process opened (runs at exit; errors are logged)."""
    with _MIRRORS_LOCK:
        mirrors = [m for (pid, _), m in _MIRRORS.items() if pid == os.getpid()]
        _MIRRORS.clear()
    for mirror in mirrors:
        try:
            mirror.close()
        except Exception as exc:
            _log.error("could not upload %s to %s: %s", mirror.local_dir, mirror.remote.url, exc)


atexit.register(close_mirrors)


def _read_manifest(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def sync_down(
    url: str,
    want: Callable[[str], bool] = lambda rel: True,
    *,
    local_dir: str | None = None,
    max_age: float = 0.0,
    store: ObjectStore | None = None,
) -> str:
    """Copy the objects under ``url`` that ``want`` (relative path -> bool) into a local
    directory, only those changed since the last copy; return the directory.

    Local files whose object is gone are deleted. With ``max_age`` > 0 a cache younger than
    that many seconds is returned as it is, without listing the store.
    """
    loc = ObjectLocation.parse(url)
    local = local_dir or cache_dir(loc)
    manifest_path = os.path.join(local, MANIFEST_NAME)
    if max_age > 0:
        try:
            if time.time() - os.stat(manifest_path).st_mtime < max_age:
                return local
        except FileNotFoundError:
            pass
    store = store or ObjectStore()
    have = _read_manifest(manifest_path)
    listing: dict[str, ObjectInfo] = {
        rel: info for rel, info in store.list(loc).items() if want(rel) and not _skipped(rel)
    }
    os.makedirs(local, exist_ok=True)
    for rel, info in sorted(listing.items()):
        path = os.path.join(local, *rel.split("/"))
        if have.get(rel) == info.etag and os.path.exists(path):
            continue
        store.get_file(loc.child(rel), path)
        have[rel] = info.etag
    for rel in [r for r in have if r not in listing]:
        try:
            os.unlink(os.path.join(local, *rel.split("/")))
        except FileNotFoundError:
            pass
        del have[rel]
    body = json.dumps({"source": loc.url, "files": have}, sort_keys=True).encode()
    atomic_write_bytes(manifest_path, body)
    return local
