"""Filling the status of the runs an index migrated from schema 4 kept.

Why apart: the migration (``schema.py``, version 5) runs inside the database and leaves the
status columns empty; it cannot read run files. ``LineageIndex`` calls ``fill_statuses`` on
its next scan: each run kept unchanged gets the status of its run events alone
(``lineage.read_status``: the other events are skipped unread), once per index. A run that
changed meanwhile was re-parsed whole and holds its status already.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from trainledger.query.discovery import RunFiles
from trainledger.query.schema import STATUS_BACKFILL, Connection

__all__ = ["fill_statuses"]
log = logging.getLogger(__name__)

Read = Callable[[Callable[[Connection], Any]], Any]
Write = Callable[[Callable[[Connection], Any], bool], Any]


def read_status(run_dir: str) -> str | None:
    """``lineage.read_status``, None (and a warning) for a run that cannot be read."""
    from trainledger.lineage import read_status as skim

    try:
        return skim(run_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged run must not break the others
        log.warning("cannot read the status of %s: %s", run_dir, exc)
        return None


def _pending(conn: Connection) -> dict[str, str] | None:
    """{summary_dir: signature} of the runs without a status, None when nothing is to fill."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (STATUS_BACKFILL,)).fetchone() is None:
        return None
    rows = conn.execute(
        "SELECT runs.summary_dir, r.signature FROM runs JOIN records AS r ON r.run_id = runs.id "
        "WHERE runs.status_txt IS NULL"
    )
    return {str(path): str(signature) for path, signature in rows}


def fill_statuses(
    read: Read,
    write: Write,
    on_disk: Iterable[RunFiles],
    reader: Callable[[str], str | None] = read_status,
) -> int:
    """Fill the statuses a migration left to fill (``read``/``write``: the index's
    transactions); how many runs got one. A no-op once done."""
    kept: dict[str, str] | None = read(_pending)
    if kept is None:
        return 0
    found = []
    for run in on_disk:
        if kept.get(run.summary_dir) == run.signature:  # still the files the index holds
            status = reader(run.path)
            if status is not None:
                found.append((status, run.summary_dir, run.signature))

    def fill(conn: Connection) -> None:
        conn.executemany(
            "UPDATE runs SET status_txt = ? WHERE summary_dir = ? AND status_txt IS NULL "
            "AND EXISTS (SELECT 1 FROM records AS r WHERE r.run_id = runs.id AND r.signature = ?)",
            found,
        )
        conn.execute("DELETE FROM meta WHERE key = ?", (STATUS_BACKFILL,))

    write(fill, bool(found))  # a new generation only if answers change
    return len(found)
