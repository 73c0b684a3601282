"""Issue 16 item 2: a damaged ``index.db`` is moved aside and rebuilt from the run files.

Real damaged files (garbage pages, a truncated file, a zero-length file while another
connection is open, a record that no longer decodes), read by a second process where the
fault was "every new process fails"; annotations (kept in ``annotations.json``) survive.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs import write_run
from trainledger.errors import LineageQuerySummaryDataError
from trainledger.query import LineageIndex, filter_summary_lineage

RUNS = 12
_CHILD = (
    "import json, sys\n"
    "from trainledger.query import filter_summary_lineage\n"
    "r = filter_summary_lineage(sys.argv[1], {'sorted_name': 'summary_dir'})\n"
    "print(json.dumps([[o['summary_dir'], o['added_info']] for o in r['object']]))\n"
)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    for i in range(RUNS):
        write_run(tmp_path, f"run{i:02d}", metrics={"acc": i / RUNS}, user={"note": "n" * 3000})
    with LineageIndex(tmp_path) as index:
        index.set_annotation("./run03", tag=4, remark="keep me")
        assert index.query(None)["count"] == RUNS
    return tmp_path


def _db(base: Path) -> Path:
    return base / ".trainledger" / "index.db"


def _expected() -> list[list[object]]:
    return [
        [f"./run{i:02d}", {"tag": 4, "remark": "keep me"} if i == 3 else {}] for i in range(RUNS)
    ]


def _query_in_child(base: Path) -> list[list[object]]:
    """Query from a new process (bounded: a hang is a failure, not a stuck suite)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(base)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_garbage_pages_are_rebuilt_in_a_new_process(base: Path) -> None:
    data = bytearray(_db(base).read_bytes())
    page = 4096
    assert len(data) > 4 * page
    for start in range(2 * page, len(data) - page, page):
        data[start : start + 512] = os.urandom(512)
    _db(base).write_bytes(data)
    assert _query_in_child(base) == _expected()
    assert (_db(base).parent / "index.db.damaged").exists()  # kept for inspection
    assert _query_in_child(base) == _expected()  # and the rebuilt file stays good


@pytest.mark.parametrize("keep", [0.5, 0.25])
def test_a_truncated_index_is_rebuilt(base: Path, keep: float) -> None:
    data = _db(base).read_bytes()
    _db(base).write_bytes(data[: int(len(data) * keep) // 4096 * 4096])
    assert _query_in_child(base) == _expected()


def test_a_foreign_file_is_rebuilt(base: Path) -> None:
    _db(base).write_bytes(b"not a database at all\n" * 100)
    assert _query_in_child(base) == _expected()


@pytest.mark.parametrize("keep", [0.0, 0.5])
def test_truncated_while_another_connection_is_open(base: Path, keep: float) -> None:
    with LineageIndex(base) as holder:  # keeps -wal/-shm alive, as a running UI would
        holder.query(None)
        size = _db(base).stat().st_size
        os.truncate(_db(base), int(size * keep) // 4096 * 4096)
        assert _query_in_child(base) == _expected()
        # the holder notices the file was replaced and answers from the rebuilt one
        assert holder.query(None)["count"] == RUNS


def test_an_open_index_recovers_from_damage_under_it(base: Path) -> None:
    with LineageIndex(base) as index:
        index.query(None)
        conn = sqlite3.connect(_db(base))
        conn.execute("UPDATE records SET record = '{\"summary_dir\": ' WHERE run_id = 2")
        conn.commit()
        conn.close()
        result = index.query({"sorted_name": "summary_dir"})  # was a raw JSONDecodeError
        assert [[o["summary_dir"], o["added_info"]] for o in result["object"]] == _expected()


def test_damaged_records_in_a_one_shot_query(base: Path) -> None:
    conn = sqlite3.connect(_db(base))
    conn.execute("UPDATE records SET record = 'garbage'")
    conn.commit()
    conn.close()
    result = filter_summary_lineage(base, {"sorted_name": "summary_dir"})
    assert [[o["summary_dir"], o["added_info"]] for o in result["object"]] == _expected()


def test_an_error_that_is_not_damage_is_a_lineage_error(base: Path) -> None:
    with LineageIndex(base) as index:
        index.query(None)
        conn = sqlite3.connect(_db(base))
        conn.execute("DROP TABLE records")  # sound file, wrong content: quick_check says ok
        conn.commit()
        conn.close()
    # a missing table is not damage that quick_check sees: a clear error, no raw sqlite3 (a
    # new index object: the first one answers from its decoded records, record_cache.py)
    with LineageIndex(base) as index:
        with pytest.raises(LineageQuerySummaryDataError, match="no such table"):
            index.query(None)


_FULL_DISK_CHILD = (
    "import resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # every write fails: a full disk\n"
    "from trainledger.query import filter_summary_lineage\n"
    "try:\n"
    "    filter_summary_lineage(sys.argv[1])\n"
    "except Exception as exc:\n"
    "    print(type(exc).__name__, exc)\n"
)


def test_a_full_disk_is_reported_as_such_and_moves_nothing_aside(tmp_path: Path) -> None:
    write_run(tmp_path, "run00", metrics={"acc": 0.5})
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "cannot write the lineage index" in done.stdout, done.stdout + done.stderr
    assert "free some disk space" in done.stdout
    assert "damaged" not in done.stdout + done.stderr
    assert not list((tmp_path / ".trainledger").glob("index.db.damaged*"))
