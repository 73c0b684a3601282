"""This version's index rewritten in schema 7's or schema 6's layout, on either engine.

Why: a migration test needs an index an earlier release wrote. Schema 7 is this version's
without what version 8 added (the series tables, the duration and sessions columns); schema
6's tables are the DDL that release ran (``schema._V5``: version 6 only added indexes),
filled from this version's rows, so the runs, values and annotations are known exactly.
"""

from __future__ import annotations

import json

from trainledger.query import schema
from trainledger.query.schema import Connection, Dialect

_VALUES = ", ".join(f"n.{f}_num, n.{f}_big, n.{f}_txt" for f in schema._FIELDS_V7)
_V8_COLUMNS = [f"{f}_{part}" for f in ("duration", "sessions") for part in ("num", "big", "txt")]
_OLD_TABLES = (
    "CREATE TABLE runs",
    "CREATE INDEX runs_default_order",
    "CREATE TABLE IF NOT EXISTS records",
)


_DERIVED = ("parent", "parents", "run")


def to_schema_13(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 14, inside a write transaction) as schema 13:
    no weights or registry table, and no record holds the parent fields or the data
    fingerprint (their type sets may still name them: the runs that had them are stored again
    by the backfill)."""
    conn.execute("DROP TABLE run_weights")
    conn.execute("DROP TABLE run_registry")
    rows = conn.execute("SELECT run_id, record FROM records").fetchall()
    for run_id, text in rows:
        record = json.loads(text)
        if any(key in record for key in _DERIVED):
            for key in _DERIVED:
                record.pop(key, None)
            conn.execute(
                "UPDATE records SET record = ? WHERE run_id = ?", (json.dumps(record), run_id)
            )
    conn.execute("DELETE FROM custom WHERE name LIKE 'parent/%' OR name LIKE 'run/%'")
    if dialect.custom_json:
        for name in [*(f"parent/{k}" for k in ("run", "step", "checkpoint", "match", "count"))]:
            conn.execute("UPDATE runs SET custom_values = custom_values - ?", (name,))
        conn.execute(
            "UPDATE runs SET custom_values = custom_values - 'run/train_dataset_fingerprint'"
        )
    schema.set_meta(conn, "schema_version", 13)


def to_schema_12(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 14, inside a write transaction) as schema 12:
    no kind of the first non-finite value."""
    to_schema_13(conn, dialect)
    conn.execute("ALTER TABLE series_stats DROP COLUMN nonfinite_kind")
    schema.set_meta(conn, "schema_version", 12)


def to_schema_11(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 11:
    the index of text values holds every row."""
    to_schema_12(conn, dialect)
    conn.execute("DROP INDEX custom_by_text")
    conn.execute("CREATE INDEX custom_by_text ON custom (name, txt, run_id)")
    schema.set_meta(conn, "schema_version", 11)


def to_schema_10(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 10."""
    to_schema_11(conn, dialect)
    conn.execute("DROP TABLE series_overviews")
    schema.set_meta(conn, "schema_version", 10)


def to_schema_9(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 9."""
    to_schema_10(conn, dialect)
    for name in ("series_stats_last", "series_stats_min", "series_stats_max"):
        conn.execute(f"DROP INDEX {name}")
    schema.set_meta(conn, "schema_version", 9)


def to_schema_8(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 8."""
    to_schema_9(conn, dialect)
    conn.execute("DROP TABLE scan_state")
    schema.set_meta(conn, "schema_version", 8)


def to_schema_7(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 7."""
    to_schema_8(conn, dialect)
    for table in ("series_stats", "series_files"):
        conn.execute(f"DROP TABLE {table}")
    for column in _V8_COLUMNS:
        conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    conn.execute("DELETE FROM meta WHERE key = ?", (schema.STATUS_BACKFILL,))
    schema.set_meta(conn, "schema_version", 7)
    schema.set_meta(conn, "compatible_from", 7)


def to_schema_6(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 13, inside a write transaction) as schema 6."""
    to_schema_7(conn, dialect)
    conn.execute("DROP INDEX IF EXISTS runs_default_order")
    conn.execute("DROP INDEX IF EXISTS custom_by_text")  # (SQLite's version 6 had none)
    conn.execute("ALTER TABLE runs RENAME TO runs_new")
    conn.execute("ALTER TABLE records RENAME TO records_new")
    for statement in dialect.ddl(schema._V5):
        if statement.startswith(_OLD_TABLES):
            conn.execute(statement)
    conn.execute(
        "INSERT INTO runs SELECT n.id, n.summary_dir, r.signature, n.update_time, m.graph_hash, "
        f"t.types, {_VALUES} FROM runs_new AS n JOIN records_new AS r ON r.run_id = n.id "
        "JOIN type_sets AS t ON t.id = n.type_set "
        "JOIN marks AS m ON CAST(m.mark AS TEXT) = n.dataset_mark_txt"
    )
    conn.execute("INSERT INTO records SELECT run_id, record FROM records_new")
    if dialect.name == "postgresql":
        conn.execute("CREATE INDEX custom_by_text ON custom (name, txt, run_id)")
        conn.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), max(id)) FROM runs")
    for table in ("runs_new", "records_new", "type_sets"):
        conn.execute(f"DROP TABLE {table}")
    schema.set_meta(conn, "schema_version", 6)
    schema.set_meta(conn, "compatible_from", 5)
