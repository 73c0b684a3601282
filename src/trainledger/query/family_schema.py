"""Schema version 14: the tables of each run's weight digests and parents
(``family_index.py``) and of its named-model versions and aliases (``registry_fields.py``).

Why apart from ``schema.py``: that module holds the layout every query reads; this one only
what the family pass keeps, as ``series_kinds.py`` holds version 13.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FAMILY_BACKFILL", "V14", "v14"]

V14 = """
CREATE TABLE IF NOT EXISTS run_weights (
    summary_dir {txt} PRIMARY KEY,
    weights TEXT NOT NULL,
    parents TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_registry (summary_dir {txt} PRIMARY KEY, fields TEXT NOT NULL)
"""
#: the key in ``meta`` telling the index to find the weights and data fingerprints of the
#: runs version 14's migration kept (``family_index.backfill``)
FAMILY_BACKFILL = "family_backfill"


def v14(conn: Any, dialect: Any, tables: Sequence[str]) -> None:
    """Each run's weight digests and parents, and the fingerprint of its training data as a
    field: the runs kept gain both at the next scan, from their lineage files' weights and
    training events (``family_index.backfill``), not by a parse of each. Code of version 13
    still reads the result."""
    for statement in dialect.ddl(V14):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, 1) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (FAMILY_BACKFILL,),
    )
