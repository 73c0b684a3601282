"""The decoded records a ``LineageIndex`` keeps between queries (``record_cache.py``): never
stale when a run is stored again, never shared with an answer, bounded."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tests.runs import write_run
from trainledger.query.index import LineageIndex
from trainledger.query.record_cache import RecordCache

_EVERY = {"sorted_name": "summary_dir"}  # no limit: every run, as the range query reads


def _accuracy(result: dict[str, Any]) -> dict[str, Any]:
    return {o["summary_dir"]: o["model_lineage"]["metric"].get("acc") for o in result["object"]}


def test_a_run_written_again_is_answered_afresh(tmp_path: Path, index_url: str | None) -> None:
    write_run(tmp_path, "a", metrics={"acc": 0.1}, mtime=100)
    write_run(tmp_path, "b", metrics={"acc": 0.2}, mtime=200)
    with LineageIndex(tmp_path, index=index_url, name=str(tmp_path)) as index:
        assert _accuracy(index.query(_EVERY)) == {"./a": 0.1, "./b": 0.2}
        write_run(tmp_path, "a", metrics={"acc": 0.7}, mtime=300)
        assert _accuracy(index.query(_EVERY)) == {"./a": 0.7, "./b": 0.2}
        # a limited page reads the same records
        page = index.query({**_EVERY, "limit": 1, "offset": 0})
        assert _accuracy(page) == {"./a": 0.7}


def test_records_added_again_replace_the_cached_ones(tmp_path: Path) -> None:
    record = {"summary_dir": "./r", "update_time": 1.0, "metric": {"acc": 0.1}}
    with LineageIndex(tmp_path) as index:
        index.add_records([record])
        assert _accuracy(index.query(_EVERY, refresh=False)) == {"./r": 0.1}
        # the same run number and update time, another record
        index.add_records([{**record, "metric": {"acc": 0.9}}])
        assert _accuracy(index.query(_EVERY, refresh=False)) == {"./r": 0.9}


def test_an_unchanged_run_keeps_its_entry_across_another_runs_change(tmp_path: Path) -> None:
    write_run(tmp_path, "a", metrics={"acc": 0.1}, mtime=100)
    write_run(tmp_path, "b", metrics={"acc": 0.2}, mtime=200)
    with LineageIndex(tmp_path) as index:
        index.query(_EVERY)
        conn = index.db.connection()
        run_a = conn.execute("SELECT id FROM runs WHERE summary_dir = './a'").fetchone()[0]
        cached = index._records._entries[run_a][2][0]
        write_run(tmp_path, "b", metrics={"acc": 0.5}, mtime=300)  # bumps the generation
        assert _accuracy(index.query(_EVERY)) == {"./a": 0.1, "./b": 0.5}
        assert index._records._entries[run_a][2][0] is cached  # checked by signature, kept


def test_an_answer_shares_nothing_with_the_cache(tmp_path: Path) -> None:
    graph = {"op_type": "Batch", "children": [{"op_type": "Map", "children": []}]}
    write_run(tmp_path, "a", metrics={"acc": 0.1}, user={"team": "x"}, graph=graph)
    with LineageIndex(tmp_path) as index:
        first = index.query(_EVERY)
        obj = first["object"][0]
        obj["dataset_graph"]["children"][0]["op_type"] = "changed"
        obj["dataset_graph"]["children"].append({})
        obj["model_lineage"]["metric"]["acc"] = -1
        obj["model_lineage"]["user_defined"].clear()
        obj["added_info"]["tag"] = 3
        again = index.query(_EVERY)["object"][0]
        assert again["dataset_graph"]["children"] == graph["children"]
        assert again["model_lineage"]["metric"] == {"acc": 0.1}
        assert again["model_lineage"]["user_defined"] == {"team": "x"}
        assert again["added_info"] == {}


def test_the_cache_holds_at_most_its_limit(tmp_path: Path) -> None:
    for i in range(5):
        write_run(tmp_path, f"r{i}", metrics={"acc": i / 10}, mtime=100 + i)
    with LineageIndex(tmp_path) as index:
        index._records.limit = 2
        for _ in range(2):  # a query larger than the cache still answers every run
            assert _accuracy(index.query(_EVERY)) == {f"./r{i}": i / 10 for i in range(5)}
            assert len(index._records) == 2


def test_the_cache_holds_at_most_its_byte_limit(tmp_path: Path) -> None:
    """Bounded by the size of what it holds too (a wide run's record is 100 kB decoded):
    the newest records that fit stay, and the answers are whole."""
    for i in range(6):
        write_run(tmp_path, f"r{i}", metrics={f"m{k}": k / 7 for k in range(50 * (i + 1))})
    with LineageIndex(tmp_path) as index:
        index.query(_EVERY)
        everything = index._records.json_bytes
        assert len(index._records) == 6
        index._records.forget()
        index._records.byte_limit = everything // 2
        for _ in range(2):
            answer = index.query(_EVERY)
            assert [len(o["model_lineage"]["metric"]) for o in answer["object"]] == [
                50 * (i + 1) for i in range(6)
            ]
            assert 0 < index._records.json_bytes <= everything // 2
            assert 0 < len(index._records) < 6


def test_forget_drops_every_entry(tmp_path: Path) -> None:
    write_run(tmp_path, "a")
    with LineageIndex(tmp_path) as index:
        index.query(_EVERY)
        path = index.path
    conn = sqlite3.connect(path)
    cache = RecordCache()
    conn.execute("BEGIN")
    assert [r["summary_dir"] for r, _ in cache.records(conn, [1]).values()] == ["./a"]
    assert len(cache) == 1
    cache.forget()
    assert len(cache) == 0 and cache.json_bytes == 0
    conn.close()


def test_a_record_gets_its_answer_form_when_answered_again(tmp_path: Path) -> None:
    """Not when decoded: a query larger than the cache, whose records are dropped before they
    are asked again, makes no form (``RecordCache``)."""
    for i in range(4):
        write_run(tmp_path, f"r{i}", metrics={"acc": i / 10}, mtime=100 + i)
    with LineageIndex(tmp_path) as index:
        cache = index._records

        def formed() -> list[bool]:
            return [entry[2][1] is not None for entry in cache._entries.values()]

        expected = index.query(_EVERY)
        assert formed() == [False] * 4
        assert index.query(_EVERY) == expected
        assert formed() == [True] * 4
        assert index.query(_EVERY) == expected
        cache.forget()
        cache.limit = 2
        for _ in range(3):
            assert index.query(_EVERY) == expected
            assert formed() == [False] * 2
