"""Decoded index records kept between the queries of one ``LineageIndex``, by run number.

Why: a query that returns many runs spent most of its time decoding their stored JSON
(10,000 records of a 100,000-run base: about 150 ms of a 640 ms answer). A run's record
changes only when the run is stored again, and then under another signature of its files
(``index_tables.insert_record``), so a decoded record stays good while its signature does.

Validity: an entry is used without a look at the database while the index generation it was
last checked at holds (every write of runs bumps it, ``backend.IndexDb.write``). After a bump
(another run changed, or a live run's series grew), the entries a query needs are checked
against their runs' signatures once, in one read, before use; those whose run was stored
again are decoded afresh. ``forget`` drops everything (a new index file,
``LineageIndex._fresh``). The records handed out are shared with the cache and must not be
changed: ``semantics.build_object`` copies what it puts into an answer.

Memory: at most ``limit`` records (the oldest go first); a record of ``bench/query.py``'s
base takes about 2.2 kB decoded (measured with tracemalloc: 22 MB for 10,000; keys are shared
within a decoded chunk).
"""

from __future__ import annotations

import json
from typing import Any

from trainledger.query import schema
from trainledger.query.schema import Connection
from trainledger.query.semantics import Record

__all__ = ["RecordCache", "in_chunks"]

#: the number of records kept by default: every match of a query that returns up to a tenth
#: of a 200,000-run base (about 45 MB at ``bench/query.py``'s records)
DEFAULT_LIMIT = 20_000
_CHUNK = 500


def in_chunks(conn: Connection, sql: str, ids: list[int]) -> list[Any]:
    """Rows of ``sql`` (ending in ``IN``) for ``ids``, a bounded number of parameters a
    statement."""
    rows: list[Any] = []
    for start in range(0, len(ids), _CHUNK):
        part = ids[start : start + _CHUNK]
        rows += conn.execute(f"{sql} ({', '.join('?' for _ in part)})", part).fetchall()
    return rows


class RecordCache:
    """Run number -> (its signature, the index generation it was checked at, its decoded
    record), at most ``limit`` of them."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._entries: dict[int, tuple[str, Any, Record]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def forget(self) -> None:
        """Drop every entry (the index may have changed without a generation bump)."""
        self._entries = {}

    def records(self, conn: Connection, ids: list[int]) -> dict[int, Record]:
        """The stored records of the runs ``ids`` (inside the caller's read transaction),
        decoded, shared with the cache: read-only."""
        generation = schema.read_meta(conn, "generation")
        entries = self._entries
        found: dict[int, Record] = {}
        unchecked: list[int] = []
        missing: list[int] = []
        for run_id in ids:
            entry = entries.get(run_id)
            if entry is None:
                missing.append(run_id)
            elif entry[1] == generation:
                found[run_id] = entry[2]
            else:
                unchecked.append(run_id)
        if unchecked:
            sql = "SELECT run_id, signature FROM records WHERE run_id IN"
            for run_id, signature in in_chunks(conn, sql, unchecked):
                signature_then, _, record = entries[run_id]
                if signature == signature_then:
                    entries[run_id] = (signature, generation, record)
                    found[run_id] = record
            missing += [i for i in unchecked if i not in found]
        if missing:
            sql = "SELECT run_id, signature, record FROM records WHERE run_id IN"
            rows = in_chunks(conn, sql, missing)
            for start in range(0, len(rows), _CHUNK):
                part = rows[start : start + _CHUNK]
                # one decode a chunk: faster than one a row, and the keys are shared
                decoded = json.loads("[" + ",".join(row[2] for row in part) + "]")
                for (run_id, signature, _), record in zip(part, decoded, strict=True):
                    entries.pop(run_id, None)  # (re-inserted last: the newest to stay)
                    entries[run_id] = (signature, generation, record)
                    found[run_id] = record
            self._trim()
        return found

    def _trim(self) -> None:
        """Keep at most ``limit`` entries, dropping the oldest."""
        excess = len(self._entries) - self.limit
        if excess > 0:
            for run_id in list(self._entries)[:excess]:
                del self._entries[run_id]
