"""The SQLite index: incremental scans, rebuilds, dataset marks, annotations, no run cap."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.runs import write_run
from trainledger.errors import LineageParamValueError
from trainledger.query import index_location
from trainledger.query.index import LineageIndex
from trainledger.query.lineage_api import filter_summary_lineage


def dirs(result: dict) -> list[str]:
    return [o["summary_dir"] for o in result["object"]]


def test_scan_parses_only_new_or_changed_runs(tmp_path: Path) -> None:
    write_run(tmp_path, "a", mtime=100)
    write_run(tmp_path, "b", mtime=200)
    with LineageIndex(tmp_path) as index:
        assert index.refresh().parsed == 2
        assert index.refresh().parsed == 0
        write_run(tmp_path, "c", mtime=300)
        stats = index.refresh()
        assert (stats.runs, stats.parsed) == (3, 1)
        # an appended evaluation changes the file: only that run is re-read
        write_run(tmp_path, "a", train=False, metrics={"acc": 0.5}, mtime=400)
        assert index.refresh().parsed == 1
        result = index.query({"metric/acc": {"eq": 0.5}})
        assert dirs(result) == ["./a"]
        assert dirs(index.query()) == ["./a", "./c", "./b"]  # newest update first


def test_vanished_run_is_dropped(tmp_path: Path) -> None:
    write_run(tmp_path, "a")
    run_b = write_run(tmp_path, "b")
    with LineageIndex(tmp_path) as index:
        assert index.query()["count"] == 2
        for f in run_b.iterdir():
            f.unlink()
        run_b.rmdir()
        assert index.refresh().removed == 1
        assert dirs(index.query()) == ["./a"]


def test_dir_without_usable_lineage_is_skipped_until_it_changes(tmp_path: Path) -> None:
    write_run(tmp_path, "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "events.out.events.summary.1800000000.0.h.1.0_lineage").write_bytes(b"")
    (tmp_path / "no_lineage").mkdir()
    with LineageIndex(tmp_path) as index:
        stats = index.refresh()
        assert (stats.runs, stats.unreadable) == (2, 1)
        assert index.refresh().parsed == 0
        assert dirs(index.query()) == ["./good"]


def test_deleting_the_index_loses_nothing(tmp_path: Path) -> None:
    for i in range(3):
        write_run(tmp_path, f"r{i}", mtime=100 + i, graph={"op": i % 2})
    first = filter_summary_lineage(str(tmp_path), {"sorted_name": "summary_dir"})
    index = LineageIndex(tmp_path)
    index.set_annotation("./r1", tag=4, remark="keep me")
    os.unlink(index.path)
    again = index.query({"sorted_name": "summary_dir"})
    assert again["count"] == 3
    assert again["object"][1]["added_info"] == {"tag": 4, "remark": "keep me"}
    again["object"][1]["added_info"] = {}
    assert again == first  # same marks: numbered by first appearance (oldest first)
    index.close()


def test_schema_version_change_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_run(tmp_path, "a")
    with LineageIndex(tmp_path) as index:
        index.refresh()
        path = index.path
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = 0 WHERE key = 'schema_version'")
    conn.execute("DELETE FROM runs")
    conn.commit()
    conn.close()
    with LineageIndex(tmp_path) as index:
        assert index.refresh().parsed == 1
        assert index.query()["count"] == 1


def test_a_schema_6_index_is_migrated_without_re_parsing(tmp_path: Path) -> None:
    """The previous release's layout (wide ``runs`` rows) is converted in place: the same
    answers, custom filters and sorts included, and no lineage file read again."""
    from tests.query.old_layouts import to_schema_6
    from trainledger.query.schema import SCHEMA_VERSION, SQLITE

    for i, team in enumerate("abca"):
        write_run(tmp_path, f"r{i}", user={"team": team}, metrics={"acc": i / 10}, ts=1_800 + i)
    questions = [
        {},
        {"user_defined/team": {"in": ["a", "c"]}, "sorted_name": "metric/acc"},
        {"metric/acc": {"gt": 0.05}, "sorted_type": "descending", "sorted_name": "metric/acc"},
    ]
    with LineageIndex(tmp_path) as index:
        answers = [index.query(q) for q in questions]
        path = index.path
    conn = sqlite3.connect(path)
    to_schema_6(conn, SQLITE)
    conn.commit()
    assert "signature" in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    conn.close()

    def refuse(run_dir: str) -> dict[str, object]:
        raise AssertionError(f"re-parsed {run_dir}")

    with LineageIndex(tmp_path, reader=refuse) as index:
        assert index.refresh().parsed == 0
        assert [index.query(q) for q in questions] == answers
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (SCHEMA_VERSION,)
    assert "signature" not in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    conn.close()


def test_damaged_index_file_is_rebuilt(tmp_path: Path) -> None:
    write_run(tmp_path, "a")
    with LineageIndex(tmp_path) as index:
        index.refresh()
        path = index.path
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    Path(path).write_bytes(b"this is not a database" * 100)
    assert filter_summary_lineage(str(tmp_path), {"limit": 5})["count"] == 1


def test_dataset_marks_stable_and_never_collide(tmp_path: Path) -> None:
    """MindInsight's max() over strings merged every graph after the ninth; ours do not."""
    with LineageIndex(tmp_path) as index:
        marks: dict[str, str] = {}
        for i in range(14):
            write_run(tmp_path, f"r{i:02d}", mtime=1000 + i, graph={"op_type": "G", "n": i})
            result = index.query({"sorted_name": "summary_dir"})
            now = {o["summary_dir"]: o["model_lineage"]["dataset_mark"] for o in result["object"]}
            assert all(now[k] == v for k, v in marks.items())  # stable as runs are added
            marks = now
        assert len(set(marks.values())) == 14
        assert marks["./r00"] == "1" and marks["./r13"] == "14"
        write_run(tmp_path, "same_as_3", mtime=2000, graph={"op_type": "G", "n": 3})
        got = index.query({"dataset_mark": {"eq": marks["./r03"]}})
        assert sorted(dirs(got)) == ["./r03", "./same_as_3"]


def test_no_cap_on_runs(tmp_path: Path) -> None:
    for i in range(1205):
        write_run(tmp_path, f"r{i:04d}", mtime=1000 + i, batch_size=i)
    with LineageIndex(tmp_path) as index:
        result = index.query()
        assert result["count"] == 1205 and len(result["object"]) == 1205
        page = index.query({"sorted_name": "batch_size", "limit": 100, "offset": 12})
        assert dirs(page) == [f"./r{i:04d}" for i in range(1200, 1205)]


def test_annotations_roundtrip_sort_and_persist(tmp_path: Path) -> None:
    for i in range(3):
        write_run(tmp_path, f"r{i}", mtime=100 + i)
    with LineageIndex(tmp_path) as index:
        assert index.set_annotation("./r0", tag=9) == {"tag": 9}
        index.set_annotation("./r2", tag=1, remark="x" * 1000)
        index.set_annotation("./r0", remark="best")
        assert index.get_annotations() == {
            "./r0": {"tag": 9, "remark": "best"},
            "./r2": {"tag": 1, "remark": "x" * 1000},
        }
        got = index.query({"sorted_name": "tag", "sorted_type": "descending"})
        assert dirs(got) == ["./r0", "./r2", "./r1"]
        assert got["object"][0]["added_info"] == {"tag": 9, "remark": "best"}
        index.set_annotation("./r0", tag=None)
        assert index.get_annotations()["./r0"] == {"remark": "best"}
    data = json.loads((tmp_path / ".trainledger" / "annotations.json").read_text())
    assert data["annotations"]["./r0"] == {"remark": "best"}


def test_annotation_written_by_another_process_is_seen(tmp_path: Path) -> None:
    write_run(tmp_path, "r0")
    with LineageIndex(tmp_path) as mine, LineageIndex(tmp_path) as theirs:
        mine.query()
        theirs.set_annotation("./r0", tag=3)
        assert mine.query()["object"][0]["added_info"] == {"tag": 3}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tag": 11}, "should in"),
        ({"tag": -1}, "should in"),
        ({"tag": True}, "must be int"),
        ({"tag": 1.0}, "must be int"),
        ({"remark": "x" * 1001}, "length of remark"),
        ({"remark": 5}, "must be str"),
    ],
)
def test_annotation_validation(tmp_path: Path, kwargs: dict, match: str) -> None:
    with LineageIndex(tmp_path) as index, pytest.raises(LineageParamValueError, match=match):
        index.set_annotation("./r0", **kwargs)


@pytest.mark.parametrize("run_id", ["r0", "./../x", "./a\x00b", 3])
def test_annotation_run_id_validation(tmp_path: Path, run_id: object) -> None:
    with LineageIndex(tmp_path) as index, pytest.raises(LineageParamValueError, match="run id"):
        index.set_annotation(run_id, tag=1)  # type: ignore[arg-type]


def test_read_only_base_uses_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "base"
    write_run(base, "a")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real_access = os.access
    monkeypatch.setattr(
        index_location.os,
        "access",
        lambda p, m: False if str(p).startswith(str(base)) else real_access(p, m),
    )
    with LineageIndex(base) as index:
        assert index.directory.startswith(str(tmp_path / "cache"))
        assert index.query()["count"] == 1
        index.set_annotation("./a", tag=2)
        assert index.query()["object"][0]["added_info"] == {"tag": 2}


def _child_query(base: str, out: object) -> None:
    from trainledger.query.lineage_api import filter_summary_lineage

    out.put(filter_summary_lineage(base)["count"])  # type: ignore[attr-defined]


def test_index_used_again_after_fork(tmp_path: Path) -> None:
    import multiprocessing as mp

    write_run(tmp_path, "a")
    assert filter_summary_lineage(str(tmp_path))["count"] == 1  # parent holds a connection
    write_run(tmp_path, "b")
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_query, args=(str(tmp_path), queue))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and queue.get(timeout=5) == 2
    assert filter_summary_lineage(str(tmp_path))["count"] == 2
