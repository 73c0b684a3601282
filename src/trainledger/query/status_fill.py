"""Filling the run fields (status, duration, sessions) of the runs a migration kept.

Why apart: a migration (``schema.py``: version 5 added the status, version 8 the duration
and sessions) runs inside the database and leaves the new columns empty; it cannot read run
files. ``LineageIndex`` calls ``fill_statuses`` on its next scan: each run kept unchanged
gets the fields of its run events alone (``lineage.read_run``: the other events are skipped
unread), once per index. A run that changed meanwhile was re-parsed whole and holds them
already.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from trainledger.query.discovery import RunFiles
from trainledger.query.flat_record import run_time_fields, status_of
from trainledger.query.schema import STATUS_BACKFILL, Connection

__all__ = ["fill_statuses"]
log = logging.getLogger(__name__)

Read = Callable[[Callable[[Connection], Any]], Any]
Write = Callable[[Callable[[Connection], Any], bool], Any]


def read_run_fields(run_dir: str) -> tuple[str | None, float | None, int | None] | None:
    """(status, duration, sessions) by ``lineage.read_run``; None for a run without a run
    record, or (with a warning) one that cannot be read."""
    from trainledger.lineage import read_run

    try:
        run = read_run(run_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged run must not break the others
        log.warning("cannot read the run record of %s: %s", run_dir, exc)
        return None
    if run is None:
        return None
    return status_of({"run": run}), *run_time_fields(run)


def _pending(conn: Connection) -> dict[str, str] | None:
    """{summary_dir: signature} of the runs without run fields, None when nothing is to fill
    (a run with a run record has at least one session)."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (STATUS_BACKFILL,)).fetchone() is None:
        return None
    rows = conn.execute(
        "SELECT runs.summary_dir, r.signature FROM runs JOIN records AS r ON r.run_id = runs.id "
        "WHERE runs.sessions_num IS NULL"
    )
    return {str(path): str(signature) for path, signature in rows}


def fill_statuses(
    read: Read,
    write: Write,
    on_disk: Iterable[RunFiles],
    reader: Callable[[str], tuple[str | None, float | None, int | None] | None] = read_run_fields,
) -> int:
    """Fill the run fields a migration left to fill (``read``/``write``: the index's
    transactions); how many runs got them. A no-op once done."""
    kept: dict[str, str] | None = read(_pending)
    if kept is None:
        return 0
    found = []
    for run in on_disk:
        if kept.get(run.summary_dir) == run.signature:  # still the files the index holds
            fields = reader(run.path)
            if fields is not None:
                found.append((*fields, run.summary_dir, run.signature))

    def fill(conn: Connection) -> None:
        conn.executemany(
            "UPDATE runs SET status_txt = ?, duration_num = ?, sessions_num = ? "
            "WHERE summary_dir = ? AND sessions_num IS NULL "
            "AND EXISTS (SELECT 1 FROM records AS r WHERE r.run_id = runs.id AND r.signature = ?)",
            found,
        )
        conn.execute("DELETE FROM meta WHERE key = ?", (STATUS_BACKFILL,))

    write(fill, bool(found))  # a new generation only if answers change
    return len(found)
