"""Snapshots of the change records, so a reader far behind reads one object, not thousands
of records (``docs/object-storage.md``, "Compaction").

Writers compact, never readers (the web UI's host may have read-only credentials): after
every ``CHECK_EVERY`` of its own records, and at its final pass (``UploadMirror.close``: a
base written by thousands of short runs, each with a few records, gets snapshots too), a
writer counts the records after the newest snapshot (one LIST of the snapshots, one of at
most 1,000 records: the snapshot's own name holds its cursor, so a check reads no snapshot)
and, from ``SNAPSHOT_EVERY`` on, writes a new one:
the previous snapshot with every later record applied, so each object keeps only its newest
record (a live run's event file, sent again every few seconds, is one entry). The snapshot
also keeps each writer's last record number, for a reader's gap check. Records older than the
previous snapshot *and* than twice the safety period are then deleted: a reader that far
behind lists the bucket anyway (``storage.copy_sync``).

Two writers compacting at once write two snapshots of nearly the same moment; both are
whole, and a reader takes the newest. A record landing behind a snapshot's cursor (within
the trailing window) is applied by readers from the window, as any late record.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from dataclasses import dataclass, field

from trainledger.errors import ObjectStoreError
from trainledger.storage.change_log import (
    SNAPSHOTS_PREFIX,
    ChangeRecorder,
    list_records,
    parse_record,
    resolve,
    safety_seconds,
    window_ms,
)
from trainledger.storage.objects import ObjectLocation, ObjectStore

__all__ = [
    "Snapshot",
    "latest_snapshot",
    "snapshot_cursor",
    "read_snapshot",
    "maybe_compact",
    "SNAPSHOT_EVERY",
]

_log = logging.getLogger(__name__)
#: records after the newest snapshot that make a writer write the next one
SNAPSHOT_EVERY = 1000
#: a writer counts the records after the newest snapshot once per this many of its own
CHECK_EVERY = 100


@dataclass
class Snapshot:
    """The newest record of every object up to ``cursor_ms``, and each writer's last number."""

    cursor_ms: int = 0
    objects: dict[str, tuple[int, str]] = field(default_factory=dict)  # key -> (size, etag)
    seen: dict[str, int] = field(default_factory=dict)
    key: str = ""


def latest_snapshot(store: ObjectStore, bucket: str) -> str | None:
    """The newest snapshot's key (one LIST: snapshots are few, old ones deleted)."""
    keys, _ = store.list_keys(bucket, SNAPSHOTS_PREFIX)
    names = [k for k in keys if snapshot_cursor(k) is not None]
    return max(names) if names else None


def snapshot_cursor(key: str) -> int | None:
    """The cursor a snapshot's key names (None: not a snapshot's key), so that whether one is
    newer than a reader's place is known without reading it."""
    stamp = key[len(SNAPSHOTS_PREFIX) :].split("-", 1)[0]
    return int(stamp) if key.startswith(SNAPSHOTS_PREFIX) and stamp.isdigit() else None


def read_snapshot(store: ObjectStore, bucket: str, key: str) -> Snapshot | None:
    """A snapshot's content, or None when it is missing or not one (untrusted: a damaged or
    foreign object is skipped, and the reader lists the bucket instead)."""
    try:
        data = json.loads(gzip.decompress(store.get_bytes(ObjectLocation(bucket, key))))
        objects = {str(k): (int(v[0]), str(v[1])) for k, v in dict(data["objects"]).items()}
        seen = {str(k): int(v) for k, v in dict(data["seen"]).items()}
        return Snapshot(int(data["cursor_ms"]), objects, seen, key)
    except (FileNotFoundError, OSError, ValueError, KeyError, TypeError, IndexError):
        _log.warning("skipped the change snapshot s3://%s/%s: not readable", bucket, key)
        return None


def maybe_compact(recorder: ChangeRecorder, final: bool = False) -> bool:
    """After a writer's records: write a snapshot when ``SNAPSHOT_EVERY`` records follow the
    newest one (checked once per ``CHECK_EVERY`` of its own, and at its ``final`` pass when
    it wrote any). True when one was written. Failures are logged: compaction only saves
    readers work."""
    if not recorder.written or (not final and recorder.written % CHECK_EVERY):
        return False
    try:
        return compact(recorder.store, recorder.bucket, recorder.writer)
    except ObjectStoreError as exc:
        _log.warning("could not compact the change records of s3://%s: %s", recorder.bucket, exc)
        return False


def compact(store: ObjectStore, bucket: str, writer: str, every: int | None = None) -> bool:
    """Write a new snapshot if at least ``every`` records follow the newest (see the module
    doc); then delete records older than the previous one and than twice the safety period."""
    every = SNAPSHOT_EVERY if every is None else every
    newest = latest_snapshot(store, bucket)
    named = (snapshot_cursor(newest) or 0) if newest else 0  # (the check reads no snapshot)
    due, more = list_records(store, bucket, named + 1 if named else 0, pages=1)
    if len(due) < every and not more:
        return False
    base = (read_snapshot(store, bucket, newest) if newest else None) or Snapshot()
    after = base.cursor_ms - window_ms() if base.cursor_ms else 0
    keys = list_records(store, bucket, after)[0]
    snap = Snapshot(base.cursor_ms, dict(base.objects), dict(base.seen))
    for name in keys:
        change = parse_record(name)
        if change is None or change.seq <= snap.seen.get(change.writer, 0):
            continue
        if (change := resolve(store, bucket, change)) is None:
            continue
        snap.seen[change.writer] = change.seq
        snap.cursor_ms = max(snap.cursor_ms, change.time_ms)
        if change.deleted:
            snap.objects.pop(change.key, None)
        else:
            snap.objects[change.key] = (change.size, change.etag)
    body = {"cursor_ms": snap.cursor_ms, "objects": snap.objects, "seen": snap.seen}
    name = f"{SNAPSHOTS_PREFIX}{snap.cursor_ms:013d}-{writer}.json.gz"
    store.put_bytes(ObjectLocation(bucket, name), gzip.compress(json.dumps(body).encode(), 6))
    _prune(store, bucket, base.cursor_ms, newest, safety_seconds())
    return True


def _prune(
    store: ObjectStore, bucket: str, previous_ms: int, previous: str | None, safety: float
) -> None:
    """Delete records (and snapshots) older than the previous snapshot and than twice the
    safety period: no reader still needs them (one that far behind lists the bucket)."""
    limit = min(previous_ms, int((time.time() - 2 * safety) * 1000))
    if limit <= 0:
        return
    old, _ = list_records(store, bucket, 0, pages=10)
    gone = [k for k in old if (c := parse_record(k)) is None or c.time_ms < limit]
    snaps, _ = store.list_keys(bucket, SNAPSHOTS_PREFIX)
    gone += [k for k in snaps if k != previous and (snapshot_cursor(k) or 0) < limit]
    store.delete_keys(bucket, gone)
