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
from collections.abc import Callable
from pathlib import Path

from trainledger.storage.atomic import atomic_write_bytes
from trainledger.storage.mirror import local_for, skipped, user_root
from trainledger.storage.naming import OBJECTS_MANIFEST
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore, key_problem

__all__ = ["cache_dir", "sync_down", "inside"]

_log = logging.getLogger(__name__)


def cache_dir(loc: ObjectLocation) -> str:
    """Where ``sync_down`` copies ``loc`` (``$TRAINLEDGER_CACHE_DIR`` or ~/.cache/trainledger)."""
    return local_for(user_root("TRAINLEDGER_CACHE_DIR", "objects"), loc)


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

    Local files whose object is gone are deleted (inside the directory only). With
    ``max_age`` > 0 a cache younger than that many seconds is returned as it is, without
    listing the store.
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
    listed = {rel: i for rel, i in store.list(loc).items() if want(rel) and not skipped(rel)}
    listing = _usable(listed, loc.url)
    os.makedirs(local, exist_ok=True)
    for rel in [r for r in have if r not in listing]:  # first: a file may become a folder
        path = inside(local, rel) if key_problem(rel) is None else None
        if path is not None and os.path.isfile(path) and not os.path.islink(path):
            Path(path).unlink(missing_ok=True)
        del have[rel]
    for rel, info in sorted(listing.items()):
        path = inside(local, rel)
        if path is None:
            _log.warning("skipped the object %r under %s: it leaves the cache", rel, loc.url)
            continue
        if have.get(rel) == info.etag and os.path.isfile(path):
            continue
        try:
            store.get_file(loc.child(rel), path)
        except FileNotFoundError:  # deleted since the listing: the next refresh forgets it
            continue
        have[rel] = info.etag
    body = json.dumps({"source": loc.url, "files": have}, sort_keys=True).encode()
    atomic_write_bytes(manifest_path, body)
    return local
