"""What a copy of an ``s3://`` prefix must change: from the change records since it last
looked, or from a listing when the records cannot be trusted to be whole
(``docs/object-storage.md``, "Change records").

A copy keeps its place in the records in ``.trainledger-changes.json`` (``CHANGES_STATE``):
the newest record time applied (the *cursor*), the time its last listing covers from, each
writer's last record number, and when it last listed. A refresh lists the records from the
cursor less the trailing window (one request while fewer than 1,000 records follow) and
returns the changed objects under the prefix, the newest record of each winning. It lists the
prefix instead (the *safety listing*, never a wrong answer, only a slower one):

- on the copy's first sync, and after ``trainledger sync --rescan`` (``request_rescan``);
- once per ``TRAINLEDGER_OBJECT_SAFETY_LISTING`` seconds (default 3,600), for writers that
  record nothing (``aws s3 cp``, older releases, a writer killed between its upload and its
  record);
- when a record is malformed or a writer's numbers skip one (a gap); a record naming an
  object that is gone is found by the caller's download (``storage.cache``).

A reader far behind (more than a page of records) starts from the newest snapshot
(``storage.compaction``) when one is newer than its cursor. So does a new copy whose caller
asks it (``defer_listing``: the query index's copy): it answers from the snapshot and the
records after it, and its first listing is marked due (``listing_due``) and left to run
after that answer (``storage.deferred_listing``); until one completes, its refreshes apply
records and leave the listing to it. A writer that records nothing is thus found seconds
after the first answer instead of before it; the safety period already allows such a writer
an hour.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainledger.storage.atomic import atomic_write_bytes
from trainledger.storage.change_log import (
    list_records,
    parse_record,
    resolve,
    safety_seconds,
    window_ms,
)
from trainledger.storage.compaction import latest_snapshot, read_snapshot, snapshot_cursor
from trainledger.storage.naming import CHANGES_STATE
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore

__all__ = [
    "Plan",
    "plan_refresh",
    "listed",
    "safety_seconds",
    "request_rescan",
    "listing_due",
    "read_state",
    "save_state",
]


@dataclass
class Plan:
    """A refresh's work: a whole listing (``full``), or the changed objects (relative path ->
    their new size and ETag, None for deleted), and the state to save once applied."""

    full: dict[str, ObjectInfo] | None = None
    changes: dict[str, ObjectInfo | None] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    why: str = ""  # why a listing (for the log and the tests)


#: sees each page of a listing as it arrives (``ObjectStore.list``'s ``on_page``)
OnPage = Callable[[dict[str, ObjectInfo], str], None] | None


def read_state(local: str) -> dict[str, Any] | None:
    """A copy's place in the records, or None (no usable state: list)."""
    try:
        with open(os.path.join(local, CHANGES_STATE), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    keys = ("cursor", "coverage", "listed_at", "seen")
    return data if isinstance(data, dict) and all(k in data for k in keys) else None


def save_state(local: str, state: dict[str, Any]) -> None:
    atomic_write_bytes(os.path.join(local, CHANGES_STATE), json.dumps(state).encode())


def request_rescan(local: str) -> bool:
    """Make the next sync of the copy at ``local`` list its prefix (``sync --rescan``)."""
    state = read_state(local)
    if state is None:
        return False
    state["rescan"] = True
    save_state(local, state)
    return True


def listing_due(local: str) -> bool:
    """Whether the copy at ``local`` started from a snapshot and has not listed since."""
    state = read_state(local)
    return bool(state and state.get("listing_due"))


def listed(store: ObjectStore, loc: ObjectLocation, why: str, on_page: OnPage = None) -> Plan:
    """A safety listing of ``loc``: the whole prefix, and a fresh place in the records that
    covers from the trailing window before it (records older than that are in it)."""
    began = int(time.time() * 1000) - window_ms()
    state = {"cursor": began, "coverage": began, "listed_at": time.time(), "seen": {}}
    return Plan(full=store.list(loc, on_page), state=state, why=why)


def plan_refresh(
    store: ObjectStore,
    loc: ObjectLocation,
    state: dict[str, Any] | None,
    rescan: bool = False,
    on_page: OnPage = None,
    defer_listing: bool = False,
) -> Plan:
    """What the copy of ``loc`` whose saved place is ``state`` must change (module doc);
    a listing's pages are shown to ``on_page`` as they arrive (downloads start early).
    ``defer_listing``: a new copy starts from the newest snapshot when there is one, and a
    copy so started leaves its due listing to ``storage.deferred_listing``."""
    if state is None and defer_listing and not rescan:
        started = _from_snapshot(store, loc, {"cursor": 0, "listed_at": 0.0})
        if started is not None:
            if started.why == "snapshot":  # (not when a gap made it list)
                started.state["listing_due"] = True
            return started
    if state is None or rescan or state.get("rescan"):
        return listed(store, loc, "first sync" if state is None else "rescan asked", on_page)
    due = time.time() - float(state["listed_at"]) >= safety_seconds()
    if due and not (defer_listing and state.get("listing_due")):
        return listed(store, loc, "safety period", on_page)
    cursor = int(state["cursor"])
    names, more = list_records(store, loc.bucket, cursor - window_ms(), pages=1)
    if more:  # far behind: the newest snapshot, if it is newer, spares the rest
        snapped = _from_snapshot(store, loc, state)
        if snapped is not None:
            return snapped
        names = list_records(store, loc.bucket, cursor - window_ms())[0]
    return _apply(store, loc, dict(state), names)


def _from_snapshot(store: ObjectStore, loc: ObjectLocation, state: dict[str, Any]) -> Plan | None:
    newest = latest_snapshot(store, loc.bucket)
    if newest is None or (snapshot_cursor(newest) or 0) <= int(state["cursor"]):
        return None  # (no snapshot newer than this copy's place: none read)
    snap = read_snapshot(store, loc.bucket, newest)
    if snap is None or snap.cursor_ms <= int(state["cursor"]):
        return None
    under = f"{loc.key}/" if loc.key else ""
    full = {
        loc.relative(key): ObjectInfo(size, etag)
        for key, (size, etag) in snap.objects.items()
        if key.startswith(under)
    }
    start = snap.cursor_ms - window_ms()
    fresh = {"cursor": snap.cursor_ms, "coverage": start, "seen": dict(snap.seen)}
    fresh["listed_at"] = state["listed_at"]  # (a snapshot is not a listing: no safety)
    names = list_records(store, loc.bucket, start)[0]
    later = _apply(store, loc, fresh, names)
    if later.full is not None:
        return later
    for rel, info in later.changes.items():
        if info is None:
            full.pop(rel, None)
        else:
            full[rel] = info
    return Plan(full=full, state=later.state, why="snapshot")


def _apply(
    store: ObjectStore, loc: ObjectLocation, state: dict[str, Any], names: list[str]
) -> Plan:
    """The changes under ``loc`` the records ``names`` make, in order; a listing on a gap."""
    seen: dict[str, int] = dict(state["seen"])
    coverage = int(state["coverage"])
    cursor = int(state["cursor"])
    under = f"{loc.key}/" if loc.key else ""
    changes: dict[str, ObjectInfo | None] = {}
    for name in names:
        change = parse_record(name)
        if change is None:
            return listed(store, loc, f"a malformed change record {name!r}")
        if change.time_ms < coverage:
            continue  # the last listing holds it
        last = seen.get(change.writer)
        if last is not None and change.seq <= last:
            continue  # applied before (the trailing window lists it again)
        expected = 1 if last is None else last + 1
        if change.seq != expected and (last is not None or change.writer_start_ms >= coverage):
            return listed(store, loc, f"a gap in the records of writer {change.writer}")
        if (found := resolve(store, loc.bucket, change)) is None:
            return listed(store, loc, f"an unreadable change record {name!r}")
        seen[change.writer] = change.seq
        cursor = max(cursor, change.time_ms)
        if found.key.startswith(under) and found.key != loc.key:
            changes[loc.relative(found.key)] = None if found.deleted else found.info()
    fresh = {**state, "cursor": cursor, "seen": seen}
    fresh.pop("rescan", None)
    return Plan(changes=changes, state=fresh)
