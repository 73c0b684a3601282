"""Storing a run again with one of its record's groups changed (``parent``, ``run``,
``registry``): what the index derives from more than the run's own files.

Why here: the family pass (``family_index.py``) and the named models (``registry_fields.py``)
both change a run's derived values between its parses, the same way: the stored record with
its run fields, the group replaced, the run's rows written again in the caller's transaction.
"""

from __future__ import annotations

from typing import Any

from trainledger.query.index_tables import RECORD_SELECT, delete_runs, insert_record, stored_record
from trainledger.query.schema import Connection, Dialect

__all__ = ["record_of", "store_group"]


def record_of(conn: Connection, summary_dir: str) -> tuple[dict[str, Any], str] | None:
    """(the stored record of a run, with its run fields; its files' signature), None for a
    run the index holds no record of: what storing it again with other values starts from."""
    row = conn.execute(f"{RECORD_SELECT} WHERE runs.summary_dir = ?", (summary_dir,)).fetchone()
    if row is None:
        return None
    sql = "SELECT signature FROM records WHERE run_id = ?"
    signature = conn.execute(sql, (row[0],)).fetchone()[0]
    record = stored_record(tuple(row[1:]))
    record.pop("added_info", None)
    return record, str(signature)


def store_group(
    conn: Connection,
    run: str,
    key: str,
    value: Any,
    dialect: Dialect,
    sources: Any = None,
) -> int:
    """Store ``run`` again with ``value`` as its record's group ``key`` (None: none; for
    ``parent``, ``sources`` as its ``parents``); 0 when its record already holds it or the
    index holds no record of it."""
    found = record_of(conn, run)
    if found is None:
        return 0
    record, signature = found
    wanted = {key: value, **({"parents": sources} if key == "parent" else {})}
    if all(record.get(k) == v for k, v in wanted.items()):
        return 0
    for k, v in wanted.items():
        if v is None:
            record.pop(k, None)
        else:
            record[k] = v
    delete_runs(conn, [run])
    insert_record(conn, record, signature, dialect)
    return 1
