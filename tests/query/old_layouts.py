"""This version's index rewritten in schema 6's layout, on either engine.

Why: a migration test needs an index the previous release wrote. Schema 6's tables are the
DDL that release ran (``schema._V5``: version 6 only added indexes), filled from this
version's rows, so the runs, values and annotations are known exactly.
"""

from __future__ import annotations

from trainledger.query import schema
from trainledger.query.schema import VALUE_FIELDS, Connection, Dialect

_VALUES = ", ".join(f"n.{f}_num, n.{f}_big, n.{f}_txt" for f in VALUE_FIELDS)
_OLD_TABLES = (
    "CREATE TABLE runs",
    "CREATE INDEX runs_default_order",
    "CREATE TABLE IF NOT EXISTS records",
)


def to_schema_6(conn: Connection, dialect: Dialect) -> None:
    """Rewrite the index behind ``conn`` (schema 7, inside a write transaction) as schema 6."""
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
