"""Read a base or run under ``s3://`` through a local copy (the download cache).

``sync_down`` copies the objects of a prefix into ``$TRAINLEDGER_CACHE_DIR/bucket/key``
(default ``~/.cache/trainledger/objects/...``), only those whose ETag changed since the last
copy, and the local readers and the query index then work on the copy. A ``max_age`` skips the
listing when the copy is younger, so the staleness of a remote base is bounded by ``max_age``
(plus the writers' upload interval).

The bucket is written by other people, so no key is trusted (``docs/object-storage.md``,
"What a bucket cannot do to a reader"): a key that ``key_problem`` refuses, or whose local
path would resolve outside the cache directory, is skipped with a warning; a key that is both
a file and a folder (``x`` beside ``x/y``) keeps the folder. Nothing outside the cache
directory is ever written or deleted, whatever the listing or an old manifest says.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from trainledger.storage.atomic import atomic_write_bytes
from trainledger.storage.mirror import local_for, skipped, user_root
from trainledger.storage.naming import OBJECTS_MANIFEST, is_event_file_name
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore, key_problem

__all__ = [
    "cache_dir",
    "index_copy_dir",
    "index_copy_lock",
    "sync_down",
    "inside",
    "StandIns",
    "STAND_IN",
    "DOWNLOAD_THREADS",
]

_log = logging.getLogger(__name__)


def cache_dir(loc: ObjectLocation) -> str:
    """Where ``sync_down`` copies ``loc`` (``$TRAINLEDGER_CACHE_DIR`` or ~/.cache/trainledger)."""
    return local_for(user_root("TRAINLEDGER_CACHE_DIR", "objects"), loc)


def _index_copies() -> Path:
    # (no bucket is called so: S3's names have no underscore)
    return user_root("TRAINLEDGER_CACHE_DIR", "objects") / "_index-copies"


def index_copy_dir(loc: ObjectLocation) -> str:
    """Where the query index's copy of ``loc`` is kept (``query/object_copy.py``): apart from
    ``cache_dir``'s, because its stand-ins hold no bytes."""
    return local_for(_index_copies(), loc)


def index_copy_lock(loc: ObjectLocation) -> str:
    """The lock file of the index copies of ``loc``'s bucket (a run's copy lies inside its
    base's: one lock for the bucket), created with its folder."""
    folder = _index_copies() / ".locks"  # (no bucket name starts with a dot)
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / loc.bucket)


def inside(directory: str, rel: str) -> str | None:
    """The local path of ``rel`` under ``directory`` if it resolves inside it, else None."""
    root = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(root, *rel.split("/")))
    return path if path.startswith(root + os.sep) else None


def _read_manifest(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _usable(listing: dict[str, ObjectInfo], url: str) -> dict[str, ObjectInfo]:
    """The keys a local directory can hold, each refused one named in a warning."""
    folders = {rel.rsplit("/", 1)[0] for rel in listing if "/" in rel}
    folders |= {f.rsplit("/", i)[0] for f in list(folders) for i in range(1, f.count("/") + 1)}
    out: dict[str, ObjectInfo] = {}
    for rel, info in listing.items():
        problem = key_problem(rel)
        if problem is None and rel in folders:
            problem = "a name that is also a folder of other keys"
        if problem is not None:
            _log.warning("skipped the object %r under %s: %s", rel, url, problem)
            continue
        out[rel] = info
    return out


#: which event files of a listing may stay in the store: (the local directory, with every
#: other wanted object already copied, and the usable listing) -> their relative paths
StandIns = Callable[[str, Mapping[str, ObjectInfo]], Collection[str]]
#: a manifest entry's mark for a stand-in: a sparse local file of the object's size
STAND_IN = "stand-in "
#: downloads at once (each waits a round trip to the store, not for this machine's cores)
DOWNLOAD_THREADS = 16


def sync_down(
    url: str,
    want: Callable[[str], bool] = lambda rel: True,
    *,
    local_dir: str | None = None,
    max_age: float = 0.0,
    store: ObjectStore | None = None,
    stand_ins: StandIns | None = None,
) -> str:
    """Copy the objects under ``url`` that ``want`` (relative path -> bool) into a local
    directory, only those changed since the last copy; return the directory.

    Local files whose object is gone are deleted (inside the directory only). With
    ``max_age`` > 0 a cache younger than that many seconds is returned as it is, without
    listing the store (a sync that failed or was killed leaves it old). ``stand_ins`` picks
    event files that are not downloaded: each becomes a sparse file of the object's size
    (zeros, no disk blocks), for a reader that needs only their names and sizes (the query
    index, where the writer's series sidecars say what the files hold); every other event
    file is a real copy, a stand-in included.
    """
    loc = ObjectLocation.parse(url)
    local = local_dir or cache_dir(loc)
    manifest_path = os.path.join(local, OBJECTS_MANIFEST)
    if max_age > 0:
        try:
            if time.time() - os.stat(manifest_path).st_mtime < max_age:
                return local
        except FileNotFoundError:
            pass
    store = store or ObjectStore()
    have = _read_manifest(manifest_path)
    if have:  # aged first: a sync that dies half-way is never taken as a young, whole copy
        os.utime(manifest_path, (0, 0))
    listed = {rel: i for rel, i in store.list(loc).items() if want(rel) and not skipped(rel)}
    listing = _usable(listed, loc.url)
    os.makedirs(local, exist_ok=True)
    for rel in [r for r in have if r not in listing]:  # first: a file may become a folder
        path = inside(local, rel) if key_problem(rel) is None else None
        if path is not None and os.path.isfile(path) and not os.path.islink(path):
            Path(path).unlink(missing_ok=True)
        del have[rel]
    paths = {}  # rel -> its local path, for the objects that stay inside the copy
    for rel in listing:
        if (path := inside(local, rel)) is None:
            _log.warning("skipped the object %r under %s: it leaves the cache", rel, loc.url)
        else:
            paths[rel] = path
    later = {r for r in paths if stand_ins is not None and is_event_file_name(_name(r))}
    _copy(store, loc, {r: (listing[r], paths[r]) for r in paths.keys() - later}, have)
    kept = set(stand_ins(local, listing)) & later if stand_ins is not None and later else set()
    for rel in sorted(kept):
        _stand_in(rel, listing[rel], paths[rel], have)
    _copy(store, loc, {r: (listing[r], paths[r]) for r in later - kept}, have)
    body = json.dumps({"source": loc.url, "files": have}, sort_keys=True).encode()
    atomic_write_bytes(manifest_path, body)
    return local


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def _copy(
    store: ObjectStore,
    loc: ObjectLocation,
    objects: Mapping[str, tuple[ObjectInfo, str]],
    have: dict[str, str],
) -> None:
    """Download each of ``objects`` (rel -> its listing, its local path) whose local file is
    not a copy of its version (a stand-in is not), ``DOWNLOAD_THREADS`` at a time: a store
    answers each GET after a round trip, and a base holds a few small objects per run."""
    todo = [
        (rel, path)
        for rel, (info, path) in sorted(objects.items())
        if have.get(rel) != info.etag or not os.path.isfile(path)
    ]

    def fetch(job: tuple[str, str]) -> bool:
        try:
            store.get_file(loc.child(job[0]), job[1])
        except FileNotFoundError:  # deleted since the listing: the next refresh forgets it
            return False
        return True

    if len(todo) > 1:
        threads = min(DOWNLOAD_THREADS, len(todo))
        with ThreadPoolExecutor(threads, thread_name_prefix="trainledger-download") as pool:
            done = list(pool.map(fetch, todo))
    else:
        done = [fetch(job) for job in todo]
    have.update((rel, objects[rel][0].etag) for (rel, _), ok in zip(todo, done, strict=True) if ok)


def _stand_in(rel: str, info: ObjectInfo, path: str, have: dict[str, str]) -> None:
    """Leave ``rel`` in the store: a sparse file of its size at ``path`` (a copy of this
    version stays)."""
    if have.get(rel) in (info.etag, STAND_IN + info.etag) and os.path.isfile(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def sparse(fh: BinaryIO) -> None:
        fh.truncate(info.size)  # (zeros that take no disk blocks)

    atomic_write_bytes(path, sparse)
    have[rel] = STAND_IN + info.etag
