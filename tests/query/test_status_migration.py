"""An index of schema 4 (before ``status`` was a query field) is migrated in place: it answers
without re-parsing any lineage file, gets each run's status from its run events alone, and
then filters and sorts by status.

The schema-4 index is this version's index rewritten in schema 4's layout, checked to have
exactly the schema of ``data/baseline_index``, which the original code wrote."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.query.old_layouts import to_schema_6
from tests.trained import train_run
from trainledger.lineage import read_lineage
from trainledger.lineage.writer import clear_registry
from trainledger.query import LineageIndex, QueryService
from trainledger.query.fields import RUN_FIELDS
from trainledger.query.schema import SQLITE, VALUE_FIELDS
from trainledger.storage import INDEX_DIRNAME, INDEX_FILE

BASELINE_DB = (
    Path(__file__).parent / "data" / "baseline_index" / "runs" / INDEX_DIRNAME / INDEX_FILE
)
QUESTIONS: list[dict[str, Any]] = [
    {},
    {"sorted_name": "learning_rate", "sorted_type": "descending"},
    {"limit": 2, "offset": 1},
    {"epoch": {"eq": 2}},
]


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    clear_registry()


def _refuse(run_dir: str) -> dict[str, Any]:
    raise AssertionError(f"re-parsed {run_dir}: the old index was not used")


def _schema(db: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(db)
    try:
        return {
            (kind, name, " ".join((sql or "").split()).replace(" )", ")"))
            for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
        }
    finally:
        conn.close()


def _to_schema_4(base: Path) -> None:
    """Rewrite this version's index (by way of schema 6's) in schema 4's layout (one untyped
    column per field, no status), with ``data/baseline_index``'s DDL, which the original code
    wrote."""
    db = base / INDEX_DIRNAME / INDEX_FILE
    old = sqlite3.connect(BASELINE_DB)
    ddl = [sql for (sql,) in old.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")]
    old.close()
    conn = sqlite3.connect(db)
    to_schema_6(conn, SQLITE)
    fields = [f for f in VALUE_FIELDS if f not in RUN_FIELDS]
    for table in ("runs", "custom"):
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_new")
    conn.execute("DROP INDEX IF EXISTS runs_default_order")
    conn.execute("DROP INDEX IF EXISTS custom_by_value")
    for sql in ddl:
        if sql.startswith(("CREATE TABLE runs", "CREATE TABLE custom", "CREATE INDEX")):
            conn.execute(sql)
    fixed = "id, summary_dir, signature, update_time, graph_hash, custom_types"
    value = (
        "COALESCE({0}_big, CASE WHEN {0}_num = CAST({0}_num AS INTEGER) "
        "THEN CAST({0}_num AS INTEGER) ELSE {0}_num END, {0}_txt)"
    )
    conn.execute(
        f"INSERT INTO runs ({fixed}, {', '.join(fields)}) SELECT {fixed}, "
        + ", ".join(value.format(f) for f in fields)
        + " FROM runs_new"
    )
    conn.execute(
        "INSERT INTO custom (run_id, name, value, vtype) SELECT run_id, name, "
        + value.replace("{0}_", "").format("")
        + ", vtype FROM custom_new"
    )
    conn.execute("DROP TABLE runs_new")
    conn.execute("DROP TABLE custom_new")
    conn.execute("DELETE FROM meta WHERE key = 'compatible_from'")
    conn.execute("UPDATE meta SET value = 4 WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    kept = {"meta", "annotations"}  # every migration keeps them (DDL text differs in spacing)
    assert {r for r in _schema(db) if r[1] not in kept} == {
        r for r in _schema(BASELINE_DB) if r[1] not in kept
    }


@pytest.fixture
def old_base(tmp_path: Path) -> Path:
    """Runs the training host made, indexed, the index taken back to schema 4. ``killed`` is
    ``live`` as it was at its step 3 (a run whose process died: its lineage says running)."""
    runs = tmp_path / "runs"
    train_run(runs, "done")
    train_run(runs, "boom", fail_at=3, lr=0.05)
    train_run(runs, "halted", stop_at=2, lr=0.2)
    train_run(runs, "live", during=lambda: shutil.copytree(runs / "live", runs / "killed"))
    assert read_lineage(runs / "killed")["run"]["status"] == "running"
    with LineageIndex(runs) as index:
        assert index.refresh().parsed == 5
    _to_schema_4(runs)
    return runs


def _dirs(result: dict[str, Any]) -> list[str]:
    return sorted(o["summary_dir"] for o in result["object"])


def test_the_migrated_index_answers_without_re_parsing(old_base: Path) -> None:
    with LineageIndex(old_base, reader=_refuse) as index:
        stats = index.refresh()
        assert (stats.runs, stats.parsed, stats.statuses) == (5, 0, 5)
        answers = [json.loads(json.dumps(index.query(q))) for q in QUESTIONS]
        by_status = {
            s: _dirs(index.query({"status": {"eq": s}}))
            for s in ("running", "finished", "failed", "stopped")
        }
        ordered = index.query({"sorted_name": "status"})["object"]
    assert by_status == {
        "running": ["./killed"],
        "finished": ["./done", "./live"],
        "failed": ["./boom"],
        "stopped": ["./halted"],
    }
    assert ordered[0]["summary_dir"] == "./boom" and ordered[-1]["summary_dir"] == "./halted"
    with LineageIndex(old_base, reader=_refuse) as again:  # filled once: nothing left to do
        assert again.refresh().statuses == 0
        assert _dirs(again.query({"status": {"eq": "running"}})) == ["./killed"]
    (old_base / INDEX_DIRNAME / INDEX_FILE).unlink()
    with LineageIndex(old_base) as rebuilt:  # the same answers as from the files themselves
        assert [json.loads(json.dumps(rebuilt.query(q))) for q in QUESTIONS] == answers
        assert _dirs(rebuilt.query({"status": {"eq": "running"}})) == ["./killed"]


def test_a_run_changed_before_the_upgrade_is_re_parsed_and_stays_fresh(old_base: Path) -> None:
    from trainledger.lineage import get_writer
    from trainledger.lineage.records import RunValues, run_event

    get_writer(old_base / "killed").write([run_event(RunValues(status="stopped"))])
    parsed: list[str] = []

    def counting(run_dir: str) -> dict[str, Any]:
        parsed.append(Path(run_dir).name)
        return read_lineage(run_dir)

    with LineageIndex(old_base, reader=counting) as index:
        stats = index.refresh()
        assert parsed == ["killed"] and stats.statuses == 4
        assert _dirs(index.query({"status": {"eq": "stopped"}})) == ["./halted", "./killed"]
        get_writer(old_base / "live").write([run_event(RunValues(status="failed"))])
        assert _dirs(index.query({"status": {"eq": "failed"}})) == ["./boom", "./live"]


def test_the_query_service_serves_the_filled_statuses(old_base: Path) -> None:
    """The web UI's service answers from the index at once and re-scans in the background;
    the filled statuses are a new data version, so no answer cached before them is served."""
    service = QueryService(old_base, rescan_interval=0.0, stale_after=0.0)
    try:
        deadline = time.monotonic() + 10
        while _dirs(service.search({"status": {"eq": "running"}})) != ["./killed"]:
            assert time.monotonic() < deadline, "the filled statuses never showed"
            time.sleep(0.05)
    finally:
        service.close()
