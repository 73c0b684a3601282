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
changed: ``semantics.build_object`` copies what it puts into an answer. Each record is kept
with its answer form (``answer_forms.py``), made when the record is answered again while
kept (``RecordCache``), from which the later answers are built in about half the time.

Memory: at most ``limit`` records, and at most ``byte_limit`` bytes of their stored JSON (the
oldest go first). A record of ``bench/query.py``'s base takes about 2.2 kB decoded (measured
with tracemalloc: 22 MB for 10,000; keys are shared within a decoded chunk), about four times
its JSON; a wide run's (1,500 metrics) about 100 kB, so a count alone would let a query over
10,000 wide runs keep a gigabyte. A form adds its templates, about 1 kB a record.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from typing import Any

from trainledger.query import schema
from trainledger.query.answer_forms import Form, form_of
from trainledger.query.schema import Connection
from trainledger.query.semantics import Record

__all__ = ["Cached", "RecordCache", "in_chunks"]

#: a decoded record and its answer form (None: built by copying)
Cached = tuple[Record, Form | None]

#: the number of records kept by default: every match of a query that returns up to a tenth
#: of a 200,000-run base (about 45 MB at ``bench/query.py``'s records)
DEFAULT_LIMIT = 20_000
#: the stored JSON kept decoded by default (about four times as much memory): 20,000 of
#: ``bench/query.py``'s records, or about 500 wide runs
DEFAULT_BYTE_LIMIT = 24 * 2**20
_CHUNK = 500


#: (signature, generation, (record, form), JSON length, whether the form was made)
_Entry = tuple[str, Any, Cached, int, bool]
_GENERATION = operator.itemgetter(1)
_CACHED = operator.itemgetter(2)
_FORMED = operator.itemgetter(4)


def in_chunks(conn: Connection, sql: str, ids: Sequence[Any]) -> list[Any]:
    """Rows of ``sql`` (ending in ``IN``) for ``ids`` (keys), a bounded number of parameters
    a statement."""
    rows: list[Any] = []
    for start in range(0, len(ids), _CHUNK):
        part = ids[start : start + _CHUNK]
        rows += conn.execute(f"{sql} ({', '.join('?' for _ in part)})", part).fetchall()
    return rows


class RecordCache:
    """Run number -> (its signature, the index generation it was checked at, its decoded
    record with its answer form, the length of its stored JSON, whether the form was made),
    at most ``limit`` of them and ``byte_limit`` bytes of JSON.

    A form costs about what copying the record into an answer costs and pays from the next
    answer on, so a record gets one when it is answered again (a hit), not when decoded: a
    query larger than the cache, whose records are gone before they are asked again, never
    makes forms."""

    def __init__(self, limit: int = DEFAULT_LIMIT, byte_limit: int = DEFAULT_BYTE_LIMIT) -> None:
        self.limit = limit
        self.byte_limit = byte_limit
        self._entries: dict[int, _Entry] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def json_bytes(self) -> int:
        """The stored JSON of the records kept (their memory is about four times it)."""
        return self._bytes

    def forget(self) -> None:
        """Drop every entry (the index may have changed without a generation bump)."""
        self._entries = {}
        self._bytes = 0

    def records(self, conn: Connection, ids: list[int]) -> dict[int, Cached]:
        """The stored records of the runs ``ids`` (inside the caller's read transaction),
        decoded, each with its answer form (None: not made yet, or none), shared with the
        cache: read-only."""
        generation = schema.read_meta(conn, "generation")
        entries = self._entries
        held: list[Any] = list(map(entries.get, ids))
        if None not in held and set(map(_GENERATION, held)) <= {generation}:
            # every one checked at this generation: looked up in C (a Python loop took
            # 3-5 ms of a 10,010-run answer)
            if False in map(_FORMED, held):
                held = list(map(self._formed, ids, held))
            return dict(zip(ids, map(_CACHED, held)))  # noqa: B905 (held: ids' entries)
        found: dict[int, Cached] = {}
        hits: dict[int, Any] = {}
        unchecked: list[int] = []
        missing: list[int] = []
        for run_id, entry in zip(ids, held, strict=True):
            if entry is None:
                missing.append(run_id)
            elif entry[1] == generation:
                hits[run_id] = entry
            else:
                unchecked.append(run_id)
        if unchecked:
            sql = "SELECT run_id, signature FROM records WHERE run_id IN"
            for run_id, signature in in_chunks(conn, sql, unchecked):
                entry = entries[run_id]
                if signature == entry[0]:
                    hits[run_id] = entries[run_id] = (entry[0], generation, *entry[2:])
            missing += [i for i in unchecked if i not in hits]
        if missing:
            self._decode(conn, missing, generation, found)
        for run_id, entry in hits.items():
            # a form only for a hit the decoding left in the cache (a query larger than the
            # cache drops it again)
            kept = entries.get(run_id) is entry
            found[run_id] = (self._formed(run_id, entry) if kept else entry)[2]
        return found

    def _decode(
        self, conn: Connection, ids: list[int], generation: Any, found: dict[int, Cached]
    ) -> None:
        """Read and decode the records of ``ids`` into the cache and ``found`` (no form)."""
        entries = self._entries
        rows = in_chunks(conn, "SELECT run_id, signature, record FROM records WHERE run_id IN", ids)
        for start in range(0, len(rows), _CHUNK):
            part = rows[start : start + _CHUNK]
            # one decode a chunk: faster than one a row, and the keys are shared
            decoded = json.loads("[" + ",".join(row[2] for row in part) + "]")
            for (run_id, signature, text), record in zip(part, decoded, strict=True):
                old = entries.pop(run_id, None)  # (re-inserted last: the newest to stay)
                self._bytes += len(text) - (old[3] if old else 0)
                cached = (record, None)
                entries[run_id] = (signature, generation, cached, len(text), False)
                found[run_id] = cached
        self._trim()

    def _formed(self, run_id: int, entry: _Entry) -> _Entry:
        """``entry`` with its form made (stored) if it had none yet."""
        if not entry[4]:
            record = entry[2][0]
            entry = (entry[0], entry[1], (record, form_of(record)), entry[3], True)
        self._entries[run_id] = entry
        return entry

    def _trim(self) -> None:
        """Keep at most ``limit`` entries and ``byte_limit`` bytes, dropping the oldest."""
        entries = self._entries
        if len(entries) <= self.limit and self._bytes <= self.byte_limit:
            return
        for run_id in list(entries):
            if len(entries) <= self.limit and self._bytes <= self.byte_limit:
                break
            self._bytes -= entries.pop(run_id)[3]
