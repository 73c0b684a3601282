"""Reading and writing the index's rows (runs, records, custom values, marks, listings).

Why apart from ``index.py``: these are the only statements that touch table layouts; the
index module orchestrates scans, transactions and caching around them. Every function takes
an open connection inside a transaction the caller owns.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from typing import Any

from trainledger.query import semantics
from trainledger.query.conditions import FIELDS, RUN_FIELDS
from trainledger.query.discovery import DirListing, RunFiles
from trainledger.query.flat_record import graph_hash
from trainledger.query.numbers import sql_number

log = logging.getLogger(__name__)

# MindInsight's fields, then ours (``status``: a column only, the record JSON leaves it out so
# the column, which the migration from schema 4 fills, is the one source)
_VALUE_COLUMNS = [f for f in FIELDS if f != "summary_dir"] + list(RUN_FIELDS)
_INSERT_RUN = (
    "INSERT INTO runs (summary_dir, signature, update_time, graph_hash, custom_types, "
    + ", ".join(_VALUE_COLUMNS)
    + ") VALUES (?, ?, ?, ?, ?, "
    + ", ".join("?" for _ in _VALUE_COLUMNS)
    + ")"
)
_IN_CHUNK = 500


def delete_runs(conn: sqlite3.Connection, summary_dirs: Iterable[str]) -> None:
    """Forget runs (their records, custom values and unreadable markers)."""
    for d in summary_dirs:
        for table in ("custom", "records"):
            conn.execute(
                f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM runs WHERE summary_dir = ?)",
                (d,),
            )
        conn.execute("DELETE FROM runs WHERE summary_dir = ?", (d,))
        conn.execute("DELETE FROM unreadable WHERE summary_dir = ?", (d,))


def store_batch(
    conn: sqlite3.Connection, batch: list[tuple[RunFiles, semantics.Record | None]]
) -> int:
    """Replace the given runs with their new records (None: no usable lineage).

    Returns how many runs were stored as unreadable (no record, or values it cannot store).
    """
    # dataset marks are numbered in order of first appearance: oldest update first
    ordered = sorted(batch, key=lambda b: (b[0].update_time, b[0].summary_dir))
    delete_runs(conn, [run.summary_dir for run, _ in ordered])
    unreadable = 0
    for run, record in ordered:
        if record is not None and _insert_isolated(conn, record, run.signature):
            continue
        unreadable += 1
        conn.execute(
            "INSERT INTO unreadable (summary_dir, signature) VALUES (?, ?)",
            (run.summary_dir, run.signature),
        )
    return unreadable


def _insert_isolated(conn: sqlite3.Connection, record: semantics.Record, signature: str) -> bool:
    """Insert one run inside a savepoint; False (nothing kept) if its values cannot be stored.

    Why: one run with a value SQLite refuses (a lone surrogate in a name, say) must be marked
    unreadable, not abort the batch and hide every other run of the base.
    """
    conn.execute("SAVEPOINT one_run")
    try:
        insert_record(conn, record, signature)
    except (sqlite3.InterfaceError, sqlite3.DataError, ValueError, TypeError, OverflowError) as exc:
        conn.execute("ROLLBACK TO one_run")
        conn.execute("RELEASE one_run")
        log.warning("cannot index run %s: %s", record.get("summary_dir"), exc)
        return False
    conn.execute("RELEASE one_run")
    return True


def assign_mark(conn: sqlite3.Connection, ghash: str) -> str:
    """The dataset mark of a graph: its existing number, or the next unused one.

    Marks are never reused or renumbered, so they cannot collide and stay stable as runs are
    added (the caller's write transaction serializes concurrent assignments).
    """
    conn.execute(
        "INSERT OR IGNORE INTO marks (graph_hash, mark) "
        "SELECT ?, COALESCE(MAX(mark), 0) + 1 FROM marks",
        (ghash,),
    )
    row = conn.execute("SELECT mark FROM marks WHERE graph_hash = ?", (ghash,)).fetchone()
    return str(row[0])


def insert_record(conn: sqlite3.Connection, record: semantics.Record, signature: str) -> None:
    """Insert one run: its filterable columns, its JSON record and its custom values."""
    ghash = graph_hash(record.get("dataset_graph"))
    record = dict(record)
    record["dataset_mark"] = assign_mark(conn, ghash)
    stored = {k: v for k, v in record.items() if k != "added_info" and k not in RUN_FIELDS}
    pairs = [
        (f"{group}/{key}", value)
        for group in ("metric", "user_defined")
        for key, value in (record.get(group) or {}).items()
    ]
    # the run's (label, type) pairs in one string: customized reads only these, per
    # distinct combination, instead of joining every matching run's custom values
    types = json.dumps([[label, semantics.custom_type_name(v)] for label, v in pairs])
    cur = conn.execute(
        _INSERT_RUN,
        [record["summary_dir"], signature, record["update_time"], ghash, types]
        + [sql_number(record.get(f)) for f in _VALUE_COLUMNS],
    )
    run_id = cur.lastrowid
    conn.execute(
        "INSERT INTO records (run_id, record) VALUES (?, ?)",
        (run_id, json.dumps(stored, separators=(",", ":"), default=str)),
    )
    conn.executemany(
        "INSERT OR REPLACE INTO custom (run_id, name, value, vtype) VALUES (?, ?, ?, ?)",
        [
            (run_id, label, sql_number(value), semantics.custom_type_name(value))
            for label, value in pairs
            if value is None or isinstance(value, (str, int, float))
        ],
    )


def _record(row: tuple[str, Any, Any, Any]) -> semantics.Record:
    record: semantics.Record = json.loads(row[0])
    added = {}
    if row[1] is not None:
        added["tag"] = row[1]
    if row[2] is not None:
        added["remark"] = row[2]
    record["added_info"] = added
    record["status"] = row[3]
    return record


_RECORD_SELECT = (
    "SELECT runs.id, r.record, a.tag, a.remark, runs.status FROM runs "
    "JOIN records AS r ON r.run_id = runs.id "
    "LEFT JOIN annotations AS a ON a.run_id = runs.summary_dir"
)


def fetch(
    conn: sqlite3.Connection,
    where: tuple[str, list[Any]],
    order: tuple[str, list[Any]],
    limit: int,
    offset: int,
) -> tuple[int, list[semantics.Record], dict[str, set[str]]]:
    """(count before paging, the page's records in order, custom label -> type names)."""
    wsql, wparams = where
    osql, oparams = order
    # one pass gives both the count and the distinct custom-type combinations
    count = 0
    types: dict[str, set[str]] = {}
    for combo, n in conn.execute(
        f"SELECT runs.custom_types, count(*) FROM runs WHERE {wsql} GROUP BY 1", wparams
    ):
        count += n
        for label, vtype in json.loads(combo):
            types.setdefault(label, set()).add(vtype)
    ids = [
        row[0]
        for row in conn.execute(
            f"SELECT runs.id FROM runs WHERE {wsql} ORDER BY {osql} LIMIT ? OFFSET ?",
            wparams + oparams + [limit, offset],
        )
    ]
    by_id: dict[int, semantics.Record] = {}
    for start in range(0, len(ids), _IN_CHUNK):
        part = ids[start : start + _IN_CHUNK]
        marks = ", ".join("?" for _ in part)
        for run_id, *row in conn.execute(f"{_RECORD_SELECT} WHERE runs.id IN ({marks})", part):
            by_id[run_id] = _record((row[0], row[1], row[2], row[3]))
    return count, [by_id[i] for i in ids], types


def all_records(conn: sqlite3.Connection) -> list[semantics.Record]:
    """Every indexed run's record (with dataset_mark and added_info)."""
    return [_record((row[1], row[2], row[3], row[4])) for row in conn.execute(_RECORD_SELECT)]


def load_listings(conn: sqlite3.Connection) -> dict[str, DirListing]:
    """The saved directory listings (a damaged entry is skipped: listed again)."""
    rows = conn.execute("SELECT path, data FROM listings").fetchall()
    try:  # one decode for all rows (fast); per row only if some row is damaged
        decoded = json.loads("[" + ",".join(data for _, data in rows) + "]")
    except ValueError:
        decoded = [None] * len(rows)
    out = {}
    for (path, data), item in zip(rows, decoded, strict=True):
        try:
            out[path] = DirListing.from_json(path, item if item is not None else json.loads(data))
        except (ValueError, TypeError):
            continue
    return out


def save_listings(conn: sqlite3.Connection, changed: dict[str, DirListing | None]) -> None:
    """Save (or drop, for None) the listings a scan took."""
    conn.executemany(
        "DELETE FROM listings WHERE path = ?",
        [(p,) for p, listing in changed.items() if listing is None],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO listings (path, data) VALUES (?, ?)",
        [(p, json.dumps(listing.to_json())) for p, listing in changed.items() if listing],
    )
