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
from pathlib import Path
from typing import BinaryIO

from trainledger.errors import ObjectStoreError
from trainledger.storage.atomic import atomic_write_bytes, scan_dir
from trainledger.storage.cache_prefetch import Prefetch
from trainledger.storage.change_log import ChangeRecorder
from trainledger.storage.copy_sync import (
    listed,
    plan_refresh,
    read_state,
    request_rescan,
    save_state,
)
from trainledger.storage.mirror import local_for, skipped, user_root
from trainledger.storage.naming import CHANGES_STATE, OBJECTS_MANIFEST, is_event_file_name
from trainledger.storage.objects import (
    ObjectInfo,
    ObjectLocation,
    ObjectStore,
    key_problem,
    shared_store,
)

__all__ = [
    "cache_dir",
    "index_copy_dir",
    "index_copy_lock",
    "sync_down",
    "inside",
    "StandIns",
    "STAND_IN",
    "request_rescan_all",
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


def request_rescan_all() -> int:
    """Make every copy under ``$TRAINLEDGER_CACHE_DIR`` (download caches and index copies)
    list its prefix at its next sync (``trainledger sync --rescan``); returns how many."""
    done = 0
    for parent, dirs, files in os.walk(user_root("TRAINLEDGER_CACHE_DIR", "objects")):
        dirs.sort()
        if CHANGES_STATE in files:
            done += request_rescan(parent)
    return done


def inside(directory: str, rel: str) -> str | None:
    """The local path of ``rel`` under ``directory`` if it resolves inside it, else None."""
    root = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(root, *rel.split("/")))
    return path if path.startswith(root + os.sep) else None


class InsideCopy:
    """``inside`` for the many keys of one pass over one copy: the copy's real path resolved
    once and each folder checked once (not a symbolic link), where ``inside`` resolves every
    component of every key (70,000 ``lstat`` calls for 1,000 runs' objects, a tenth of a
    first sync's own time). Any key with a symbolic link on its way is answered by
    ``inside`` itself, so the answer is the same."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.root = os.path.realpath(directory)
        self._folders = {self.root}  # folders checked: no symbolic link on the way

    def __call__(self, directory: str, rel: str) -> str | None:
        parts = rel.split("/")
        if directory != self.directory or any(p in ("", ".", "..") for p in parts):
            return inside(directory, rel)
        path = self.root
        for part in parts[:-1]:
            path = os.path.join(path, part)
            if path not in self._folders:
                if os.path.islink(path):
                    return inside(directory, rel)
                self._folders.add(path)
        path = os.path.join(path, parts[-1])
        return inside(directory, rel) if os.path.islink(path) else path


def read_manifest(path: str) -> dict[str, str]:
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


def sync_down(
    url: str,
    want: Callable[[str], bool] = lambda rel: True,
    *,
    local_dir: str | None = None,
    max_age: float = 0.0,
    store: ObjectStore | None = None,
    stand_ins: StandIns | None = None,
    rescan: bool = False,
    defer_listing: bool = False,
) -> str:
    """Copy the objects under ``url`` that ``want`` (relative path -> bool) into a local
    directory, only those changed since the last copy; return the directory.

    What changed comes from the bucket's change records (``storage.copy_sync``): a refresh
    where nothing changed is one LIST of records, and one where a run changed touches that
    run's objects only. The prefix is listed instead on the first sync, on ``rescan``, once
    per safety period, and when the records cannot be trusted to be whole. Local files whose
    object is gone are deleted (inside the directory only). With ``max_age`` > 0 a copy
    younger than that many seconds is returned as it is, without asking the store (a sync
    that failed or was killed leaves it old). ``stand_ins`` picks event files that are not
    downloaded: each becomes a sparse file of the object's size (zeros, no disk blocks), for
    a reader that needs only their names and sizes (the query index, where the writer's
    series sidecars say what the files hold); every other event file is a real copy.
    ``defer_listing``: a new copy starts from the newest snapshot of the records and leaves
    its first listing to the caller (``storage.copy_sync``, ``storage.deferred_listing``).
    """
    loc = ObjectLocation.parse(url)
    local = local_dir or cache_dir(loc)
    state_path = os.path.join(local, CHANGES_STATE)
    if max_age > 0 and not rescan:
        try:
            if time.time() - os.stat(state_path).st_mtime < max_age:
                return local
        except FileNotFoundError:
            pass
    store = store or shared_store()
    state = read_state(local)
    if state is not None:  # aged first: a sync that dies half-way never leaves a young copy
        os.utime(state_path, (0, 0))
    manifest = os.path.join(local, OBJECTS_MANIFEST)
    within = InsideCopy(local)
    early = Prefetch(
        store, loc, local, want, stand_ins is not None, lambda: read_manifest(manifest), within
    )
    try:
        plan = plan_refresh(store, loc, state, rescan, early.page, defer_listing)
        if plan.full is None and plan.changes:
            if not _apply_changes(store, loc, local, plan.changes, want, stand_ins):
                plan = listed(store, loc, "a change record names an object that is gone")
    finally:
        fetched = early.finish()
    if plan.full is not None:
        missed = _apply_listing(store, loc, local, plan.full, want, stand_ins, fetched, within)
        if state is not None and missed:  # what the records did not say: say it for others
            _record_missed(store, loc, missed)
    os.makedirs(local, exist_ok=True)
    if plan.state == state:
        os.utime(state_path)  # (nothing changed: young again, no write)
    else:
        save_state(local, plan.state)
    return local


def _apply_listing(
    store: ObjectStore,
    loc: ObjectLocation,
    local: str,
    listing_all: Mapping[str, ObjectInfo],
    want: Callable[[str], bool],
    stand_ins: StandIns | None,
    fetched: Mapping[str, str] | None = None,
    within: Callable[[str, str], str | None] = inside,
) -> dict[str, ObjectInfo | None]:
    """Make the copy at ``local`` hold what a whole listing (or snapshot) of ``loc`` says
    (``fetched``: objects already downloaded while it was listed, rel -> ETag); returns the
    objects that changed (None: gone)."""
    manifest_path = os.path.join(local, OBJECTS_MANIFEST)
    have = read_manifest(manifest_path)
    before = dict(have)
    have.update(fetched or {})
    listed = {rel: i for rel, i in listing_all.items() if want(rel) and not skipped(rel)}
    listing = _usable(listed, loc.url)
    os.makedirs(local, exist_ok=True)
    for rel in [r for r in have if r not in listing]:  # first: a file may become a folder
        _remove(local, rel, have)
    paths = {}  # rel -> its local path, for the objects that stay inside the copy
    for rel in listing:
        if (path := within(local, rel)) is None:
            _log.warning("skipped the object %r under %s: it leaves the cache", rel, loc.url)
        else:
            paths[rel] = path
    later = {r for r in paths if stand_ins is not None and is_event_file_name(_name(r))}
    _copy(store, loc, {r: (listing[r], paths[r]) for r in paths.keys() - later}, have)
    kept = set(stand_ins(local, listing)) & later if stand_ins is not None and later else set()
    for rel in sorted(kept):
        _stand_in(rel, listing[rel], paths[rel], have)
    _copy(store, loc, {r: (listing[r], paths[r]) for r in later - kept}, have)
    _write_manifest(manifest_path, loc, have)
    gone: dict[str, ObjectInfo | None] = {r: None for r in before if r not in have}
    return gone | {r: listing[r] for r in have if have[r] != before.get(r) and r in listing}


def _record_missed(
    store: ObjectStore, loc: ObjectLocation, missed: Mapping[str, ObjectInfo | None]
) -> None:
    """Write change records for what a safety listing found and the records never said (an
    ``aws s3 cp``, a writer killed before its record), so other readers learn of it by their
    records, not each at its own next listing. Best effort: a reader may not write."""
    recorder = ChangeRecorder(store, loc.bucket)
    try:
        for rel, info in sorted(missed.items()):
            recorder.record(loc.child(rel), None if info is None else info)
    except ObjectStoreError as exc:
        _log.info("could not record what the listing of %s found: %s", loc.url, exc)


def _write_manifest(path: str, loc: ObjectLocation, have: dict[str, str]) -> None:
    body = json.dumps({"source": loc.url, "files": have}, sort_keys=True).encode()
    atomic_write_bytes(path, body)


def _remove(local: str, rel: str, have: dict[str, str]) -> None:
    """Forget ``rel``, deleting its local file (only a regular file inside the copy)."""
    path = inside(local, rel) if key_problem(rel) is None else None
    if path is not None and os.path.isfile(path) and not os.path.islink(path):
        Path(path).unlink(missing_ok=True)
    have.pop(rel, None)


def _apply_changes(
    store: ObjectStore,
    loc: ObjectLocation,
    local: str,
    changes: Mapping[str, ObjectInfo | None],
    want: Callable[[str], bool],
    stand_ins: StandIns | None,
) -> bool:
    """Apply the changed objects of the records to the copy at ``local``, touching only
    them (and, for stand-ins, their folders' sidecars). False when an object a record names
    is gone: the caller lists instead. Every key passes ``key_problem`` and the cache wall,
    as a listing's do."""
    wanted = {rel: i for rel, i in changes.items() if want(rel) and not skipped(rel)}
    if not wanted:
        return True
    manifest_path = os.path.join(local, OBJECTS_MANIFEST)
    have = read_manifest(manifest_path)
    puts: dict[str, tuple[ObjectInfo, str]] = {}
    for rel, info in sorted(wanted.items()):
        if info is None:
            _remove(local, rel, have)
            continue
        problem = key_problem(rel)
        path = inside(local, rel) if problem is None else None
        if problem is None and path is None:
            problem = "it leaves the cache"
        if problem is None and path is not None and os.path.isdir(path):
            problem = "a name that is also a folder of other keys"
        if problem is not None:
            _log.warning("skipped the object %r under %s: %s", rel, loc.url, problem)
            continue
        for parent in _parents(rel):  # a folder now where a file was: the folder wins
            if parent in have:
                _remove(local, parent, have)
        puts[rel] = (info, str(path))
    later = {r for r in puts if stand_ins is not None and is_event_file_name(_name(r))}
    missing = _copy(store, loc, {r: puts[r] for r in puts.keys() - later}, have)
    if later and stand_ins is not None:
        folders = _folder_listing(local, {r.rpartition("/")[0] for r in later}, have)
        folders.update({r: puts[r][0] for r in puts})
        kept = set(stand_ins(local, folders)) & later
        for rel in sorted(kept):
            _stand_in(rel, puts[rel][0], puts[rel][1], have)
        missing |= _copy(store, loc, {r: puts[r] for r in later - kept}, have)
    _write_manifest(manifest_path, loc, have)
    return not missing


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _folder_listing(
    local: str, folders: set[str], have: Mapping[str, str]
) -> dict[str, ObjectInfo]:
    """What the copy holds in ``folders`` (relative), as a listing: sizes from the local
    files (a stand-in has its object's size), ETags from the manifest."""
    out: dict[str, ObjectInfo] = {}
    for folder in folders:
        path = os.path.join(local, *folder.split("/")) if folder else local
        for entry in scan_dir(path):
            rel = f"{folder}/{entry.name}" if folder else entry.name
            if rel in have and entry.is_file(follow_symlinks=False):
                etag = have[rel].removeprefix(STAND_IN)
                out[rel] = ObjectInfo(entry.stat(follow_symlinks=False).st_size, etag)
    return out


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def _copy(
    store: ObjectStore,
    loc: ObjectLocation,
    objects: Mapping[str, tuple[ObjectInfo, str]],
    have: dict[str, str],
) -> set[str]:
    """Download each of ``objects`` (rel -> its listing, its local path) whose local file is
    not a copy of its version (a stand-in is not), as many at once as the store's client
    allows (``ObjectStore.start_get``): a store answers each GET after a round trip, and a
    base holds a few small objects per run. Returns those that were gone (deleted since the
    listing or record named them)."""
    todo = [
        (rel, path)
        for rel, (info, path) in sorted(objects.items())
        if have.get(rel) != info.etag or not os.path.isfile(path)
    ]
    jobs = [store.start_get(loc.child(rel), path) for rel, path in todo]
    gone, failed = set(), None
    for (rel, _), job in zip(todo, jobs, strict=True):
        try:  # (every one waited for, even after a failure: none writes into the copy later)
            job.result()
        except FileNotFoundError:  # deleted since the listing: the next refresh forgets it
            gone.add(rel)
        except Exception as exc:
            failed = failed or exc
        else:
            have[rel] = objects[rel][0].etag
    if failed is not None:
        raise failed
    return gone


def _stand_in(rel: str, info: ObjectInfo, path: str, have: dict[str, str]) -> None:
    """Leave ``rel`` in the store: a sparse file of its size at ``path`` (a copy of this
    version stays)."""
    if have.get(rel) in (info.etag, STAND_IN + info.etag) and os.path.isfile(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def sparse(fh: BinaryIO) -> None:
        fh.truncate(info.size)  # (zeros that take no disk blocks)

    atomic_write_bytes(path, sparse, durable=False)  # (a cache: no fsync, made again at will)
    have[rel] = STAND_IN + info.etag
