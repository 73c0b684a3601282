"""A build of many runs makes the custom value indexes once at the end (``bulk_build.py``):
the same answers as a run-by-run build, the indexes there afterwards, and a build killed
half-way leaves nothing wrong that the next refresh does not repair."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.runs import write_run
from trainledger.query import bulk_build, index_tables
from trainledger.query.index import LineageIndex

N = 12


def _runs(base: Path) -> None:
    for i in range(N):
        write_run(
            base,
            f"r{i:02d}",
            metrics={"acc": i / N, "f1": (N - i) / N},
            user={"team": "ab"[i % 2], "trial": i},
            mtime=100 + i,
        )


def _indexes(base: Path) -> set[str]:
    with sqlite3.connect(base / ".trainledger" / "index.db") as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {name for (name,) in rows}


QUERIES = [
    {"metric/acc": {"ge": 0.5}, "sorted_name": "metric/f1"},
    {"user_defined/team": {"eq": "a"}, "sorted_name": "user_defined/trial", "limit": 3},
    {"metric/acc": {"gt": 0.2, "lt": 0.8}},
]


def test_a_bulk_build_answers_as_a_run_by_run_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path / "bulk")
    _runs(tmp_path / "each")
    monkeypatch.setattr(bulk_build, "BULK_MIN_RUNS", 1)
    drops: list[int] = []
    real_drop = bulk_build.drop_value_index
    monkeypatch.setattr(bulk_build, "drop_value_index", lambda c: (drops.append(1), real_drop(c)))
    with LineageIndex(tmp_path / "bulk") as bulk:
        bulk.refresh()
        assert drops == [1]  # every run new: built in bulk
        answers = [bulk.query(q) for q in QUERIES]
    assert {"custom_by_value", "custom_by_text"} <= _indexes(tmp_path / "bulk")
    monkeypatch.setattr(bulk_build, "BULK_MIN_RUNS", 10**9)
    with LineageIndex(tmp_path / "each") as each:
        each.refresh()
        assert drops == [1]  # run by run
        expected = [each.query(q) for q in QUERIES]
    strip = [{**a, "object": [o["summary_dir"] for o in a["object"]]} for a in answers]
    assert strip == [{**e, "object": [o["summary_dir"] for o in e["object"]]} for e in expected]


def test_few_changed_runs_keep_the_indexes_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    monkeypatch.setattr(bulk_build, "BULK_MIN_RUNS", 1)
    with LineageIndex(tmp_path) as index:
        index.refresh()
        monkeypatch.setattr(
            bulk_build, "drop_value_index", lambda c: pytest.fail("one new run: no bulk build")
        )
        write_run(tmp_path, "late", metrics={"acc": 0.99}, mtime=999)
        assert index.refresh().parsed == 1
        assert [o["summary_dir"] for o in index.query({"metric/acc": {"gt": 0.95}})["object"]] == [
            "./late"
        ]


def test_a_killed_bulk_build_is_repaired_by_the_next_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path)
    monkeypatch.setattr(bulk_build, "BULK_MIN_RUNS", 1)

    def killed(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt  # the process dies after the drop, before the indexes are made

    monkeypatch.setattr(index_tables, "store_batch", killed)
    monkeypatch.setattr(bulk_build, "make_value_index", lambda c: None)  # (never reached)
    with LineageIndex(tmp_path) as index, pytest.raises(KeyboardInterrupt):
        index.refresh()
    assert not {"custom_by_value", "custom_by_text"} & _indexes(tmp_path)
    monkeypatch.undo()
    with LineageIndex(tmp_path) as index:
        assert index.query({"metric/acc": {"ge": 0.5}})["count"] == N // 2
    assert {"custom_by_value", "custom_by_text"} <= _indexes(tmp_path)


def test_the_value_indexes_are_sorted_in_small_runs_and_the_cache_is_given_back(
    tmp_path: Path,
) -> None:
    """The sort runs on helper threads only when its entries outgrow the page cache: the
    indexes are made with ``SORT_CACHE_KIB``, and the connection keeps its own cache after."""
    _runs(tmp_path)
    with LineageIndex(tmp_path) as index:
        index.refresh()
    with sqlite3.connect(tmp_path / ".trainledger" / "index.db") as conn:
        conn.execute("PRAGMA cache_size = -65536")
        bulk_build.drop_value_index(conn)
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        bulk_build.make_value_index(conn)
        conn.set_trace_callback(None)
        assert conn.execute("PRAGMA cache_size").fetchone() == (-65536,)
        assert conn.execute("PRAGMA threads").fetchone() == (0,)
    small = seen.index(f"PRAGMA cache_size = -{bulk_build.SORT_CACHE_KIB}")
    made = [i for i, s in enumerate(seen) if s.startswith("CREATE INDEX")]
    assert len(made) == 2 and small < made[0]
    assert seen.index("PRAGMA cache_size = -65536") > made[-1]
    assert {"custom_by_value", "custom_by_text"} <= _indexes(tmp_path)
