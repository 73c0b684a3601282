"""The index keeps the kind of each series' first non-finite value (schema 13), on SQLite
and PostgreSQL, and an index of schema 12 learns it for the diverged runs on migration."""

from __future__ import annotations

from pathlib import Path

from tests.diverging_runs import INF_STEP, NAN_STEP, write_diverging_base
from trainledger.query import schema
from trainledger.query.index import LineageIndex

RUNS = ["./healthy", "./diverged", "./outlier"]
EXPECTED = {
    "./diverged": [
        {"tag": "grad_norm", "step": 30, "value": "inf"},
        {"tag": "loss", "step": INF_STEP, "value": "inf"},
        {"tag": "eval/loss", "step": NAN_STEP, "value": "nan"},
    ],
    "./healthy": [{"tag": "grad_norm", "step": 30, "value": "inf"}],
    "./outlier": [{"tag": "grad_norm", "step": 30, "value": "inf"}],
}


def test_each_series_first_nonfinite_step_has_its_kind(
    tmp_path: Path, index_url: str | None
) -> None:
    write_diverging_base(tmp_path)
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        assert index.nonfinite_series(RUNS) == EXPECTED
        got = index.query({"summary_dir": {"eq": "./diverged"}}, series=["nonfinite_step(loss)"])
        assert got["object"][0]["series"] == {"nonfinite_step(loss)": INF_STEP}


def test_a_schema_12_index_learns_the_kinds_of_the_diverged_runs_only(
    tmp_path: Path, index_url: str | None
) -> None:
    from tests.query.old_layouts import to_schema_12

    write_diverging_base(tmp_path)
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        index.db.write(lambda c: to_schema_12(c, index.db.dialect), bump=True)
    with LineageIndex(tmp_path, index=index_url) as index:
        read = index.db.read(
            lambda c: dict(c.execute("SELECT summary_dir, signature FROM series_files").fetchall())
        )
        assert read == {}  # every run holds a grad_norm that hit inf: all are read again
        index.refresh()
        assert index.nonfinite_series(RUNS) == EXPECTED
        meta = index.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
        assert meta[0] == schema.SCHEMA_VERSION == 14
        assert schema.usable(meta[0], meta[1], known=12)  # version 12 code keeps using it
