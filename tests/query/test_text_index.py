"""The index of custom text values holds only rows with text (schema 12): a metric's row
(a number) is not in it, text filters and sorts still read it, and an index of schema 11 is
migrated on both engines without a change to any answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runs import write_run
from trainledger.query import schema
from trainledger.query.conditions import validate_condition
from trainledger.query.index import LineageIndex
from trainledger.query.sql import compile_matches

QUERIES: list[dict[str, Any]] = [
    {"user_defined/team": {"eq": "a"}},
    {"user_defined/team": {"in": ["a", "b"]}, "sorted_name": "user_defined/team", "limit": 5},
    {"user_defined/team": {"not_in": ["c"]}, "metric/acc": {"ge": 0.25}},
    {"sorted_name": "user_defined/note", "sorted_type": "descending"},
    {"metric/acc": {"lt": 0.5}, "sorted_name": "metric/acc"},
]


def _runs(base: Path) -> None:
    for i in range(16):
        user: dict[str, Any] = {"team": "abcd"[i % 4], "trial": i}
        if i % 3 == 0:
            user["note"] = "x" * (i % 5) or 7  # text in most runs, a number in one
        write_run(base, f"r{i:02d}", metrics={"acc": i / 16}, user=user, mtime=100 + i)


def _text_index_sql(index: LineageIndex) -> str:
    if index.db.dialect.name == "postgresql":
        sql = "SELECT indexdef FROM pg_indexes WHERE indexname = 'custom_by_text'"
    else:
        sql = "SELECT sql FROM sqlite_master WHERE name = 'custom_by_text'"
    return str(index.db.read(lambda c: c.execute(sql).fetchone()[0]))


def test_a_schema_11_index_gets_the_partial_text_index(
    tmp_path: Path, index_url: str | None
) -> None:
    from tests.query.old_layouts import to_schema_11

    _runs(tmp_path)
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        before = [index.query(q) for q in QUERIES]
        index.db.write(lambda c: to_schema_11(c, index.db.dialect), bump=True)
        assert "WHERE" not in _text_index_sql(index).upper()
    with LineageIndex(tmp_path, index=index_url) as index:
        assert [index.query(q) for q in QUERIES] == before
        assert "txt IS NOT NULL" in _text_index_sql(index).replace("(", "").replace(")", "")
        meta = index.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
        assert meta[0] == schema.SCHEMA_VERSION == 14
        assert schema.usable(meta[0], meta[1], known=11)  # version 11 code keeps using it


def test_a_text_filter_still_starts_from_the_text_index(tmp_path: Path) -> None:
    """(SQLite's plan: a partial index is used only when the query implies its condition.)"""
    _runs(tmp_path)
    with LineageIndex(tmp_path) as index:
        index.refresh()
        for cond in QUERIES[:2]:
            joins, params = compile_matches(validate_condition(cond))
            plan = index.db.read(
                lambda c, j=joins, p=params: c.execute(
                    f"EXPLAIN QUERY PLAN SELECT runs.type_set, count(*) FROM runs {j} GROUP BY 1",
                    p,
                ).fetchall()
            )
            assert any("custom_by_text" in str(row[-1]) for row in plan), plan
