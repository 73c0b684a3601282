"""Change records: what every trainledger writer did to a bucket, so readers list changes,
not the bucket (``docs/object-storage.md``, "Change records").

A listing costs one request per 1,000 objects, and a base of 100,000 runs holds about half a
million: a reader that listed everything at each refresh paid for what exists, not for what
changed. So every upload and delete by a trainledger writer (``storage.mirror``: the staging
uploader, ``trainledger sync``, the MLflow importer, checkpoint retention) is followed by an
empty object under ``.trainledger/changes/r/`` at the bucket's root whose *key* says it all:

    .trainledger/changes/r/<ms>-<writer>-<seq>~<p|d>~<size>~<etag>~<quoted object key>

``ms`` is the writer's clock, so the records sort by time and a reader lists only those after
the last it applied (``StartAfter``): a page of 1,000 records is one request and no GET. A
key too long to fit is recorded with ``P``/``D`` and its object key in the record's body.

Concurrent writers may land a record with a lower key after a reader listed past it, so a
reader re-lists a trailing window (``TRAINLEDGER_CHANGES_WINDOW``, default 30 s: clock skew
between writers plus a record's PUT time; a writer whose PUT took longer re-records). Chosen
over a sequence claimed with a conditional PUT because every S3-compatible store lists with
``StartAfter``, where conditional writes are recent and uneven. ``writer`` is the recorder's
start time and a random tag, and ``seq`` counts its records from 1: a writer's records land
in order (each PUT waits for the last), so a reader that sees a writer's record ``n + 2``
after ``n`` knows one is missing (a gap) and falls back to a listing (``storage.copy_sync``).

Snapshots (``.trainledger/changes/s/<ms>-<writer>.json.gz``) hold the newest record of every
object, written by a writer after every ``SNAPSHOT_EVERY`` records (``storage.compaction``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, unquote

from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore

__all__ = [
    "CHANGES_PREFIX",
    "RECORDS_PREFIX",
    "SNAPSHOTS_PREFIX",
    "Change",
    "ChangeRecorder",
    "parse_record",
    "window_ms",
    "safety_seconds",
    "list_records",
    "resolve",
]

_log = logging.getLogger(__name__)
#: where the records and snapshots live, at the bucket's root (the query index's folder name:
#: never a run's file, and left out of every copy, ``storage.mirror.skipped``)
CHANGES_PREFIX = ".trainledger/changes/"
RECORDS_PREFIX = CHANGES_PREFIX + "r/"
SNAPSHOTS_PREFIX = CHANGES_PREFIX + "s/"
_SEP = "~"
#: keys a LIST request returns (S3's most; the tests make it small)
PAGE_SIZE = 1000
_MAX_KEY = 1024  # S3's limit on a key, in bytes


def window_ms() -> int:
    """The trailing window a reader re-lists (``TRAINLEDGER_CHANGES_WINDOW``, seconds)."""
    text = os.environ.get("TRAINLEDGER_CHANGES_WINDOW", "").strip()
    try:
        seconds = float(text) if text else 30.0
    except ValueError:
        raise ValueError(
            f"TRAINLEDGER_CHANGES_WINDOW expected a number of seconds, received {text!r}"
        ) from None
    if seconds < 0:
        raise ValueError(f"TRAINLEDGER_CHANGES_WINDOW expected >= 0, received {text!r}")
    return int(seconds * 1000)


def safety_seconds() -> float:
    """How often a copy lists its prefix whatever the records say
    (``TRAINLEDGER_OBJECT_SAFETY_LISTING``, seconds)."""
    text = os.environ.get("TRAINLEDGER_OBJECT_SAFETY_LISTING", "").strip()
    try:
        value = float(text) if text else 3600.0
    except ValueError:
        raise ValueError(
            f"TRAINLEDGER_OBJECT_SAFETY_LISTING expected a number of seconds, received {text!r}"
        ) from None
    if value <= 0:
        raise ValueError(f"TRAINLEDGER_OBJECT_SAFETY_LISTING expected > 0, received {text!r}")
    return value


@dataclass(frozen=True)
class Change:
    """One record: an object of the bucket written (``size``, ``etag``) or deleted."""

    record: str  # the record's own key
    time_ms: int
    writer: str  # "<start ms>.<tag>"
    seq: int
    deleted: bool
    size: int
    etag: str
    key: str  # the object's key in the bucket ("" until a body record is read)
    in_body: bool = False

    @property
    def writer_start_ms(self) -> int:
        return int(self.writer.split(".", 1)[0])

    def info(self) -> ObjectInfo:
        return ObjectInfo(self.size, self.etag)


def _name(time_ms: int, writer: str, seq: int, op: str, size: int, etag: str, key: str) -> str:
    head = f"{RECORDS_PREFIX}{time_ms:013d}-{writer}-{seq:09d}"
    return _SEP.join((head, op, str(size), etag, key))


def parse_record(name: str) -> Change | None:
    """The record a listed key names, or None for a key that is not a well-formed record
    (anyone who can write the bucket writes these keys: ``storage.copy_sync`` treats it as
    a gap, never as a change)."""
    if not name.startswith(RECORDS_PREFIX):
        return None
    parts = name[len(RECORDS_PREFIX) :].split(_SEP, 4)
    if len(parts) != 5:
        return None
    head, op, size, etag, qkey = parts
    fields = head.split("-")
    if len(fields) != 3 or op not in ("p", "d", "P", "D") or not size.isdigit():
        return None
    stamp, writer, seq = fields
    start, _, tag = writer.partition(".")
    if not (stamp.isdigit() and seq.isdigit() and start.isdigit() and tag.isalnum()):
        return None
    if any(c not in "0123456789abcdefABCDEF-" for c in etag):
        return None
    key = unquote(qkey) if op in "pd" else ""
    if op in "pd" and not key:
        return None
    deleted = op in "dD"
    return Change(name, int(stamp), writer, int(seq), deleted, int(size), etag, key, op in "PD")


def resolve(store: ObjectStore, bucket: str, change: Change) -> Change | None:
    """``change`` with its object key: a body record's is read from its body (one GET);
    None when the body is missing or not a record's."""
    if not change.in_body:
        return change
    try:
        data = json.loads(store.get_bytes(ObjectLocation(bucket, change.record)))
        key = data["key"] if isinstance(data, dict) else None
    except (FileNotFoundError, ValueError, KeyError):
        return None
    if not isinstance(key, str) or not key:
        return None
    return Change(**{**change.__dict__, "key": key, "in_body": False})


def list_records(
    store: ObjectStore, bucket: str, after_ms: int, pages: int | None = None
) -> tuple[list[str], bool]:
    """Record keys with a time of ``after_ms`` or later, in key order; stops after
    ``pages`` requests (then says that more follow)."""
    start = f"{RECORDS_PREFIX}{max(0, after_ms - 1):013d}~" if after_ms > 0 else ""
    found: list[str] = []
    done = 0
    while True:
        keys, more = store.list_keys(bucket, RECORDS_PREFIX, start, PAGE_SIZE)
        found.extend(keys)
        done += 1
        if not more or not keys:
            return found, False
        if pages is not None and done >= pages:
            return found, True
        start = keys[-1]


class ChangeRecorder:
    """Writes the records of one writer (one mirror) to its location's bucket, in order.

    A record that cannot be written raises ``ObjectStoreError`` with its number used up: the
    writer's next record then shows readers a gap, and they list the bucket (the object the
    lost record named is in the store, so the listing finds it).
    """

    def __init__(self, store: ObjectStore, bucket: str) -> None:
        self.store = store
        self.bucket = bucket
        self.writer = f"{int(time.time() * 1000):013d}.{secrets.token_hex(3)}"
        self.seq = 0
        self.written = 0  # records written by this recorder (compaction checks every so many)
        self._lock = threading.Lock()

    def record(self, loc: ObjectLocation, info: ObjectInfo | None) -> None:
        """Record that ``loc`` now holds ``info`` (None: it was deleted)."""
        with self._lock:
            self.seq += 1
            self._write(loc.key, info, self.seq)

    def _write(self, key: str, info: ObjectInfo | None, seq: int) -> None:
        window = window_ms()
        while True:
            began = int(time.time() * 1000)
            op = "d" if info is None else "p"
            size, etag = (0, "") if info is None else (info.size, info.etag)
            name = _name(began, self.writer, seq, op, size, etag, quote(key, safe=""))
            body = b""
            if len(name.encode()) > _MAX_KEY:
                name = _name(began, self.writer, seq, op.upper(), size, etag, "")
                body = json.dumps({"key": key}).encode()
            self.store.put_bytes(ObjectLocation(self.bucket, name), body)
            self.written += 1
            # a PUT slower than half the window may land behind a reader's re-listed window:
            # record again, later (the same change twice is harmless, a missed one is not)
            if int(time.time() * 1000) - began <= window // 2:
                return
            self.seq += 1
            seq = self.seq
