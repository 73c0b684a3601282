"""A team's ``s3://`` base on a PostgreSQL index: one process refreshes, every process reads
(``docs/team-setup.md``, "Change records").

Every process that queries a bucket keeps a copy of its own and, before this module, synced
it and refreshed the shared index at each query older than ``TRAINLEDGER_OBJECT_MAX_AGE``:
the same records listed and applied by every member, every CLI call, every UI. Now the first
process that applies a batch of records and refreshes the index stamps the base's schema
(``meta.objects_refreshed_ms``); another process whose stamp is younger than the staleness
bound answers from the index as it is, with one read of the stamp: no request to the bucket
and no sync of a copy it may not even have. A process that must refresh syncs its own copy
first (a copy is whole before it drives a refresh, so the refresh never drops another's runs).
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

from trainledger.query.schema import read_meta, set_meta

if TYPE_CHECKING:
    from trainledger.query.index import LineageIndex

__all__ = ["fresh_elsewhere", "mark_refreshed"]

_KEY = "objects_refreshed_ms"


def fresh_elsewhere(index: LineageIndex, max_age: float) -> bool:
    """Whether a process refreshed this shared index from its bucket less than ``max_age``
    seconds ago (only a PostgreSQL index is shared: a SQLite copy's index is this user's)."""
    if not _shared(index) or max_age <= 0:
        return False
    stamp = index.db.read(functools.partial(read_meta, key=_KEY))
    return stamp is not None and time.time() * 1000 - stamp < max_age * 1000


def mark_refreshed(index: LineageIndex) -> None:
    """Stamp the shared index as refreshed from its bucket now (after a sync and refresh)."""
    if _shared(index):
        now = int(time.time() * 1000)
        index.db.write(functools.partial(set_meta, key=_KEY, value=now), False)


def _shared(index: LineageIndex) -> bool:
    from trainledger.query.postgres import PgDb  # (only an s3:// base asks: on use)

    return isinstance(index.db, PgDb)
