"""Where a path given by a user is read or written: a local directory, or ``s3://`` through
staging (``storage.staging``) and the download cache (``storage.cache``). Every entry point
that takes a run or base directory passes it through ``writable_dir`` or ``readable_dir``, so
an ``s3://`` location works everywhere and any other ``scheme://`` is refused with one message
instead of becoming a local folder ``gs:``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from trainledger.errors import ObjectNotFoundError, PathNotFoundError
from trainledger.storage.atomic import exclusive_lock, scan_dir
from trainledger.storage.naming import CHANGES_STATE, OBJECTS_MANIFEST
from trainledger.storage.objects import ObjectLocation, check_location, is_object_url

if TYPE_CHECKING:
    from trainledger.storage.cache import StandIns

__all__ = [
    "writable_dir",
    "readable_dir",
    "held_index_copy",
    "readable_file",
    "readable_run",
    "public_path",
    "READ_MAX_AGE",
    "read_max_age",
    "no_checkpoints",
]

#: seconds a copy of a remote base is used before the store is listed again (staleness bound)
READ_MAX_AGE = float(os.environ.get("TRAINLEDGER_OBJECT_MAX_AGE", "5"))


def read_max_age() -> float:
    """``READ_MAX_AGE`` as it is now (a value imported elsewhere is a copy)."""
    return READ_MAX_AGE


def writable_dir(path: Any, what: str = "directory") -> Any:
    """The local directory a writer writes for ``path``: ``path`` itself, or for an ``s3://``
    URL its staging directory, which a background mirror uploads (see ``storage.staging``).
    Anything but a str or path is returned as it is, for the caller's own type check."""
    if not isinstance(path, (str, os.PathLike)):
        return path
    text = os.fspath(path)
    check_location(text, what)
    if not is_object_url(text):
        return text
    from trainledger.storage.staging import staging_dir  # (the object-store modules: on use)

    return staging_dir(text)


def no_checkpoints(rel: str) -> bool:
    """``readable_dir``'s default: everything but checkpoint files, which can be large (and
    the files of sharded checkpoint directories, ``<name>.ckpt/...``)."""
    suffixes = (".ckpt", ".safetensors", ".pt", ".pth", ".bin", ".meta")
    return not rel.endswith(suffixes) and ".ckpt/" not in f"/{rel}"


def readable_dir(
    path: Any,
    what: str = "directory",
    want: Callable[[str], bool] = no_checkpoints,
    max_age: float | None = None,
) -> Any:
    """The local directory to read for ``path``: ``path`` itself, or for an ``s3://`` URL a
    cache holding its objects (``want`` picks them; refreshed when older than ``max_age``).
    Anything but a str or path is returned as it is, for the caller's own type check."""
    if not isinstance(path, (str, os.PathLike)):
        return path
    text = os.fspath(path)
    check_location(text, what)
    if not is_object_url(text):
        return text
    from trainledger.storage.cache import sync_down  # (the object-store modules: on use)

    return sync_down(text, want, max_age=READ_MAX_AGE if max_age is None else max_age)


def readable_run(path: str | os.PathLike[str], what: str = "run directory") -> str:
    """``readable_dir`` for a reader that must not answer a mistake with nothing (an empty
    answer for a mistyped path reads as "this run logged nothing"): a local path that is no
    directory is a ``PathNotFoundError``, an ``s3://`` URL with no object under it an
    ``ObjectNotFoundError``, each naming what was given."""
    text = os.fspath(path)
    local = os.fspath(readable_dir(text, what))
    if is_object_url(text):
        if not any(e.name not in (OBJECTS_MANIFEST, CHANGES_STATE) for e in scan_dir(local)):
            raise ObjectNotFoundError(
                f"{what} expected objects under {text}, received: no such object"
            )
    elif not os.path.isdir(local):
        why = "not a directory" if os.path.exists(local) else "no such directory"
        raise PathNotFoundError(f"{what} expected a directory at {text}, received: {why}")
    return local


@contextmanager
def held_index_copy(
    path: Any, what: str, stand_ins: StandIns, max_age: float | None = None
) -> Iterator[Any]:
    """``readable_dir`` for the query index: for an ``s3://`` URL a copy of its own, where
    the event files ``stand_ins`` picks are sparse stand-ins of their size, locked against
    other processes' syncs of the bucket's index copies until the block ends (a stand-in
    being changed is never read); refreshed when older than ``max_age`` (default
    ``READ_MAX_AGE``). A new copy of a base with change snapshots answers from the newest
    one; its first listing runs after the block (``storage.deferred_listing``). Local
    paths, and anything but a str or path, as ``readable_dir`` gives them."""
    if not isinstance(path, (str, os.PathLike)) or not is_object_url(os.fspath(path)):
        yield readable_dir(path, what)
        return
    check_location(os.fspath(path), what)
    from trainledger.storage.cache import index_copy_dir, index_copy_lock
    from trainledger.storage.copy_sync import listing_due
    from trainledger.storage.deferred_listing import list_later

    loc = ObjectLocation.parse(path)
    with exclusive_lock(index_copy_lock(loc)):
        yield _sync_index_copy(loc, stand_ins, READ_MAX_AGE if max_age is None else max_age)
    local = index_copy_dir(loc)
    if listing_due(local):  # (a new copy answered from a snapshot)
        list_later(local, loc.url, lambda: _list_index_copy(loc, stand_ins))


def _sync_index_copy(
    loc: ObjectLocation, stand_ins: StandIns, max_age: float, defer: bool = True
) -> str:
    """``sync_down`` of the index copy of ``loc``, its lock held by the caller (``defer``:
    a new copy's first listing is left for after the answer, ``storage.deferred_listing``)."""
    from trainledger.storage.cache import index_copy_dir, sync_down

    return sync_down(
        loc.url,
        no_checkpoints,
        local_dir=index_copy_dir(loc),
        max_age=max_age,
        stand_ins=stand_ins,
        defer_listing=defer,
    )


def _list_index_copy(loc: ObjectLocation, stand_ins: StandIns) -> None:
    """The due listing of the index copy of ``loc``, under its lock."""
    from trainledger.storage.cache import index_copy_lock

    with exclusive_lock(index_copy_lock(loc)):
        _sync_index_copy(loc, stand_ins, 0.0, defer=False)


def readable_file(path: str | os.PathLike[str], what: str = "file") -> str:
    """The local file to read for ``path``: ``path`` itself, or for an ``s3://`` URL of one
    object a fresh copy in a cache directory of its own (so no directory cache is touched).
    A URL naming no object is an ``ObjectStoreError`` saying so."""
    text = os.fspath(path)
    check_location(text, what)
    if not is_object_url(text):
        return text
    from trainledger.storage.cache import cache_dir, sync_down

    loc = ObjectLocation.parse(text)
    parent, _, name = loc.url.rstrip("/").rpartition("/")
    local = sync_down(parent, lambda rel: rel == name, local_dir=cache_dir(loc))
    found = os.path.join(local, name)
    if not os.path.isfile(found):
        raise ObjectNotFoundError(f"{what} expected an object at {text}, received: no such object")
    return found


def public_path(local: str | os.PathLike[str]) -> str:
    """The name other machines know a written file by: the ``s3://`` URL of a file in a
    staging directory, else the path unchanged (recorded in lineage, e.g. the model path)."""
    from trainledger.storage.staging import staged_location, staging_root

    text = os.path.abspath(os.fspath(local))
    loc = staged_location(text, os.path.abspath(staging_root()))
    return text if loc is None else loc.url
