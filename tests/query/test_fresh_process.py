"""A new process trusts the index after the cheap freshness check of ``query.scan_state`` (a
``stat`` per directory and per file that is not final), on SQLite and PostgreSQL: it reads no
run while nothing changed, and still sees every change the check is documented to detect."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.runs import write_run
from trainledger.query import schema
from trainledger.query.index import LineageIndex
from trainledger.storage import lineage_file_name

_ACC = {"sorted_name": "metric/acc"}


def _age(path: Path, seconds: float = 100) -> None:
    t = os.stat(path).st_mtime - seconds
    os.utime(path, (t, t))


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The pid of a process that has exited: files named after it are final."""
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def _finished(base: Path, name: str, dead: int, acc: float, seq: int = 0) -> Path:
    """A run whose lineage file was written by an exited trainledger process (final)."""
    run = write_run(base, name, metrics={"acc": acc}, seq=seq)
    for src in run.iterdir():
        if "testhost" in src.name:
            src.rename(run / lineage_file_name(1_800_000_000 + seq, 0, None, dead, seq))
    _age(run)
    return run


class Reads:
    """A lineage reader that counts which runs it read."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, run_dir: str) -> dict[str, Any]:
        from trainledger.lineage import read_lineage

        self.paths.append(os.path.basename(run_dir))
        return read_lineage(run_dir)


def _new_process(base: Path, url: str | None, **kw: Any) -> tuple[LineageIndex, Reads]:
    reads = Reads()
    return LineageIndex(base, reader=reads, watch=False, index=url, **kw), reads


def _indexed(base: Path, url: str | None) -> None:
    """Index ``base`` once with every listing trusted (the runs changed long ago)."""
    with LineageIndex(base, watch=False, index=url) as index:  # (makes .trainledger/ first)
        for path in [*base.iterdir(), base]:
            if path.is_dir() and path.name != ".trainledger":
                _age(path)
        index.refresh()
        assert index.refresh().parsed == 0


def _accs(index: LineageIndex, refresh: bool = True) -> list[float]:
    answer = index.query(_ACC, refresh=refresh)
    return [o["model_lineage"]["metric"]["acc"] for o in answer["object"]]


@pytest.fixture
def base(tmp_path: Path, dead_pid: int) -> Path:
    for i in range(3):
        _finished(tmp_path, f"r{i}", dead_pid, acc=i / 10)
    write_run(tmp_path, "live", metrics={"acc": 0.9})  # another host's writer: never final
    _age(tmp_path / "live")
    return tmp_path


def test_unchanged_runs_are_trusted_without_a_scan(
    base: Path, index_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainledger.query import discovery, index_tables

    _indexed(base, index_url)
    scans: list[str] = []
    monkeypatch.setattr(discovery.Scanner, "scan", lambda self: scans.append("scan"))
    monkeypatch.setattr(index_tables, "load_listings", lambda conn: scans.append("listings"))
    fresh, reads = _new_process(base, index_url)
    with fresh:
        stats = fresh.refresh()
        assert (stats.trusted, stats.runs, stats.parsed) == (True, 4, 0)
        assert _accs(fresh, refresh=False) == [0.0, 0.1, 0.2, 0.9]
    assert reads.paths == [] and scans == []


def test_a_different_depth_is_not_trusted(base: Path) -> None:
    _indexed(base, None)
    fresh, reads = _new_process(base, None, max_depth=2)
    with fresh:
        assert not fresh.refresh().trusted
    assert reads.paths == []  # (scanned, and found nothing to read)


Change = Callable[[Path, int], None]


def _append(base: Path, dead: int) -> None:
    write_run(base, "live", train=False, metrics={"acc": 0.95})  # appended to its file


def _new_run(base: Path, dead: int) -> None:
    _finished(base, "r3", dead, acc=0.3)


def _removed_run(base: Path, dead: int) -> None:
    shutil.rmtree(base / "r1")


def _resumed_run(base: Path, dead: int) -> None:
    """A new session writes a second lineage file into a finished run."""
    _finished(base, "r2", dead, acc=0.25, seq=1)
    os.utime(base / "r2")  # (_finished aged it: a new file moves its mtime to now)


def _lineage_bytes(acc: float) -> bytes:
    """A lineage file's content (written outside the base: no directory of it changes)."""
    with tempfile.TemporaryDirectory() as scratch:
        (src,) = write_run(scratch, "x", metrics={"acc": acc}).iterdir()
        return src.read_bytes()


def _replaced_in_place(base: Path, dead: int) -> None:
    """A tool rewrites a finished run's file under the same name (an atomic rename): only the
    run directory's mtime tells."""
    (final,) = (base / "r0").iterdir()
    temp = base / "r0" / "rewrite.tmp"
    temp.write_bytes(_lineage_bytes(0.05))
    os.replace(temp, final)


def _rewritten_mindspore_file(base: Path) -> None:
    """A file of an unknown writer (MindSpore's naming) rewritten in place: no directory
    changes, only the file's size and mtime tell."""
    (src,) = (base / "ms").iterdir()
    src.write_bytes(_lineage_bytes(0.55))


@pytest.mark.parametrize(
    ("change", "parsed", "accs"),
    [
        (_append, ["live"], [0.0, 0.1, 0.2, 0.95]),
        (_new_run, ["r3"], [0.0, 0.1, 0.2, 0.3, 0.9]),
        (_removed_run, [], [0.0, 0.2, 0.9]),
        (_resumed_run, ["r2"], [0.0, 0.1, 0.25, 0.9]),
        (_replaced_in_place, ["r0"], [0.05, 0.1, 0.2, 0.9]),
    ],
    ids=["appended", "new run", "removed run", "resumed run", "replaced by rename"],
)
def test_a_new_process_sees_each_change(
    base: Path,
    index_url: str | None,
    dead_pid: int,
    change: Change,
    parsed: list[str],
    accs: list[float],
) -> None:
    _indexed(base, index_url)
    change(base, dead_pid)
    fresh, reads = _new_process(base, index_url)
    with fresh:
        assert not fresh.refresh().trusted
        assert _accs(fresh) == accs
    assert reads.paths == parsed  # the unchanged runs are not read again
    _indexed(base, index_url)  # (a listing taken 2 s or less after a change is not trusted)
    fresh, reads = _new_process(base, index_url)
    with fresh:
        assert fresh.refresh().trusted  # the index is trusted again
        assert _accs(fresh) == accs
    assert reads.paths == []


def test_a_mindspore_file_rewritten_in_place_is_seen(base: Path) -> None:
    ms = write_run(base, "ms", metrics={"acc": 0.5})
    (src,) = ms.iterdir()
    src.rename(ms / "events.out.events.summary.1800000001.0.vm_lineage")
    _age(ms)
    _indexed(base, None)
    _rewritten_mindspore_file(base)
    fresh, reads = _new_process(base, None)
    with fresh:
        assert not fresh.refresh().trusted
        assert _accs(fresh) == [0.0, 0.1, 0.2, 0.55, 0.9]
    assert reads.paths == ["ms"]


def test_another_process_writing_the_index_voids_the_saved_state(base: Path) -> None:
    _indexed(base, None)
    with LineageIndex(base, watch=False) as other:  # e.g. an older release: bumps, saves none
        other.db.write(lambda conn: None, bump=True)
    fresh, _ = _new_process(base, None)
    with fresh:
        assert not fresh.refresh().trusted


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_schema_8_index_gains_the_table_and_stays_readable_by_version_8(
    base: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    from tests.query.old_layouts import to_schema_8

    url = None if backend == "sqlite" else str(request.getfixturevalue("pg_url"))
    _indexed(base, url)
    with LineageIndex(base, watch=False, index=url) as index:
        index.db.write(lambda conn: to_schema_8(conn, index.db.dialect), bump=False)
    fresh, reads = _new_process(base, url)
    with fresh:
        assert not fresh.refresh().trusted  # migrated: nothing saved yet, nothing re-read
        meta = fresh.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
    assert meta == [schema.SCHEMA_VERSION, 8] and reads.paths == []
    assert schema.usable(schema.SCHEMA_VERSION, 8, known=8)  # code of version 8 keeps using it


def test_a_new_process_answers_without_loading_the_readers(base: Path) -> None:
    """What every ``trainledger lineage BASE`` pays first is its imports: a query over a
    trusted index loads no numpy, protobuf, crc32c or summary reader (those load when a run
    is parsed; about 0.07 s of a 0.17 s import when ``query.tb_runs`` loaded them), nor
    OpenSSL's hashes or what a build's parse processes and threads need (about 0.05 s more:
    ``storage/redact.py``, ``query/bulk_build.py``, ``query/parse_worker.py``)."""
    _indexed(base, None)
    heavy = ["numpy", "google.protobuf", "crc32c", "trainledger.summary.reader", "torch"]
    heavy += ["hashlib", "subprocess", "concurrent.futures", "tempfile", "shutil"]
    script = (
        "import json, sys\n"
        "from trainledger.query.index import LineageIndex\n"
        "with LineageIndex(sys.argv[1], watch=False) as index:\n"
        "    stats = index.refresh()\n"
        "    count = index.query({'sorted_name': 'metric/acc'})['count']\n"
        f"print(json.dumps([stats.trusted, count, [m for m in {heavy!r} if m in sys.modules]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(base)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[true, 4, []]"


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_the_lineage_command_loads_no_storage_or_protobuf_modules(base: Path, fmt: str) -> None:
    """``trainledger lineage BASE -f json|csv`` over a trusted index imports neither the
    object store's modules (its sockets, hashes and threads: ``storage/cache.py``,
    ``storage/mirror.py``, ``storage/staging.py``), nor protobuf where no blurring was asked
    (``TRAINLEDGER_REDACT``), nor what a hint needs (``shutil``)."""
    _indexed(base, None)
    heavy = ["numpy", "google.protobuf", "crc32c", "hashlib", "socket", "shutil", "subprocess"]
    heavy += [f"trainledger.storage.{m}" for m in ("cache", "mirror", "staging")]
    script = (
        "import json, sys\n"
        "from trainledger.cli import cli\n"
        "try:\n"
        f"    cli(['lineage', sys.argv[1], '-f', {fmt!r}], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRAINLEDGER_REDACT"}
    out = subprocess.run(
        [sys.executable, "-c", script, str(base)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    lines = out.stdout.strip().splitlines()
    assert "r2" in out.stdout and lines[-1] == "[]", out.stdout + out.stderr


@pytest.mark.parametrize(
    ("change", "parsed", "accs"),
    [
        (_append, ["live"], [0.0, 0.1, 0.2, 0.95]),
        (_new_run, ["r3"], [0.0, 0.1, 0.2, 0.3, 0.9]),
        (_resumed_run, ["r2"], [0.0, 0.1, 0.25, 0.9]),
    ],
    ids=["appended", "new run", "resumed run"],
)
def test_a_process_that_asks_again_checks_the_state_again_and_sees_each_change(
    base: Path,
    index_url: str | None,
    dead_pid: int,
    monkeypatch: pytest.MonkeyPatch,
    change: Change,
    parsed: list[str],
    accs: list[float],
) -> None:
    """A script's second query (no watcher) checks the saved state again instead of loading
    every run's listing (2.5-3.5 s at 100,000 runs), and a change between the two is seen."""
    from trainledger.query import index_tables

    _indexed(base, index_url)
    fresh, reads = _new_process(base, index_url)
    loads: list[int] = []
    real_load = index_tables.load_listings
    monkeypatch.setattr(
        index_tables, "load_listings", lambda conn: (loads.append(1), real_load(conn))[1]
    )
    with fresh:
        assert [fresh.refresh().trusted for _ in range(3)] == [True, True, True]
        assert loads == [] and reads.paths == []
        change(base, dead_pid)
        assert not fresh.refresh().trusted
        assert _accs(fresh, refresh=False) == accs
    assert reads.paths == parsed and loads == [1]


def test_a_trusted_watcher_keeps_the_proof_until_it_sees_a_change(
    base: Path, dead_pid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a state check passed while the base watcher was trusted, a refresh checks nothing
    until the watcher sees a change (or ``FULL_RESCAN_SECONDS`` pass); then the check runs
    again, and the change is indexed."""
    import time

    from trainledger.query import scan_state

    monkeypatch.setenv("TRAINLEDGER_WATCH", "1")
    _indexed(base, None)
    checks: list[int] = []
    real_check = scan_state.trusted_runs
    monkeypatch.setattr(
        scan_state, "trusted_runs", lambda *a, **k: (checks.append(1), real_check(*a, **k))[1]
    )
    with LineageIndex(base, watch=True) as index:
        assert index.refresh().trusted and index.refresh().trusted  # (the first starts it)
        deadline = time.monotonic() + 20
        while index._scanner.watched.watcher is None:  # noqa: SLF001 - (just after the answer)
            assert time.monotonic() < deadline, "the watcher never started"
            time.sleep(0.01)
        watcher = index._scanner.watched.watcher  # noqa: SLF001 - the state under test
        while not watcher.trusted:
            assert time.monotonic() < deadline, "the watcher never became trusted"
            time.sleep(0.05)
        assert index.refresh().trusted  # a check with the watcher trusted: the proof
        checks.clear()
        assert [index.refresh().trusted for _ in range(3)] == [True, True, True]
        assert checks == []  # nothing checked, nothing stat'ed
        _new_run(base, dead_pid)
        deadline = time.monotonic() + 20
        while len(index.query(_ACC)["object"]) != 5:
            assert time.monotonic() < deadline, "the new run was never seen"
            time.sleep(0.05)
        assert checks  # the watcher's event sent it back to the check, which failed
