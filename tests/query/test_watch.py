"""Watched bases: a warm query stats nothing when nothing changed, only the changed runs when
some did, and still sees every change (ours at once, other processes' within the bound)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.runs import make_base, sample_run
from trainledger.query import LineageIndex

REPO = Path(__file__).resolve().parents[2]


_OPEN: list[LineageIndex] = []


@pytest.fixture(autouse=True)
def _watching(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TRAINLEDGER_WATCH", "1")
    yield
    while _OPEN:  # closing releases the watchers (an inotify instance each)
        _OPEN.pop().close()


def _index(base: Path, **kwargs: bool) -> LineageIndex:
    index = LineageIndex(base, **kwargs)
    _OPEN.append(index)
    return index


def _stats(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> tuple[int, object]:
    """How many os.stat calls ``action`` made, and its result."""
    calls = [0]
    real = os.stat

    def counting(*args: object, **kwargs: object) -> os.stat_result:
        calls[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counting)
    try:
        result = action()
    finally:
        monkeypatch.setattr(os, "stat", real)
    return calls[0], result


def _dirs(index: LineageIndex) -> list[str]:
    return sorted(o["summary_dir"] for o in index.query({"limit": 100})["object"])


def _trusted(index: LineageIndex, base: Path) -> None:
    """Scan until the watcher (started at the second scan) has proved itself."""
    deadline = time.monotonic() + 20
    while True:
        index.query({"limit": 1})
        watch = index._scanner._watch  # noqa: SLF001 - the state under test
        if watch.watcher is not None and watch.watcher.trusted and watch.since is not None:
            return
        assert time.monotonic() < deadline, "the watcher never became trusted"
        time.sleep(0.05)


def test_a_warm_query_costs_the_same_over_10_or_60_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = []
    for n in (10, 60):
        base = make_base(tmp_path / f"b{n}", n=n, scalars=0)
        index = _index(base)
        _trusted(index, base)
        count, result = _stats(monkeypatch, lambda: _dirs(index))  # noqa: B023
        assert len(result) == n  # type: ignore[arg-type]
        counts.append(count)
    assert counts[0] == counts[1] <= 5, counts  # the index's own files, no run directory


def test_one_changed_run_costs_its_own_stats_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = make_base(tmp_path / "b", n=40, scalars=0)
    index = _index(base)
    _trusted(index, base)
    sample_run(base, "run_new", 7)  # written by this process's test helper, not our writer
    deadline = time.monotonic() + 5
    while "./run_new" not in _dirs(index):  # the kernel's notification arrives within the bound
        assert time.monotonic() < deadline, "a new run never showed"
        time.sleep(0.02)
    sample_run(base, "run05", 5, learning_rate=0.5)  # rewrite one run (appends a new file)
    deadline = time.monotonic() + 5
    while True:
        count, result = _stats(monkeypatch, lambda: index.query({"learning_rate": {"eq": 0.5}}))
        if result["count"] == 1:  # type: ignore[index]
            break
        assert time.monotonic() < deadline, "the changed run never showed"
        time.sleep(0.02)
    # the changed directory and its files, and the few directories changed in the last seconds
    # whose listings became trustable meanwhile (taken again once: discovery._settled), not
    # 41 directories
    assert count < 16, count


def test_our_own_writes_show_at_once_and_deletions_too(tmp_path: Path) -> None:
    import shutil

    from trainledger.lineage import get_writer
    from trainledger.lineage.records import RunValues, run_event

    base = make_base(tmp_path / "b", n=3, scalars=0)
    index = _index(base)
    _trusted(index, base)
    run_dir = base / "ours"
    get_writer(run_dir).write([run_event(RunValues(status="running"))])
    assert "./ours" in _dirs(index)  # no wait: the writer told the watcher itself
    shutil.rmtree(base / "run01")
    deadline = time.monotonic() + 5
    while "./run01" in _dirs(index):
        assert time.monotonic() < deadline, "a deleted run never left"
        time.sleep(0.02)


_WRITE = """
import sys
from pathlib import Path
from tests.runs import sample_run
for i in range(int(sys.argv[2])):
    sample_run(Path(sys.argv[1]), f"p{i}", i)
"""


def test_runs_from_another_process_show_within_the_bound(tmp_path: Path) -> None:
    base = make_base(tmp_path / "b", n=2, scalars=0)
    index = _index(base)
    _trusted(index, base)
    subprocess.run([sys.executable, "-c", _WRITE, str(base), "5"], cwd=REPO, check=True, timeout=60)
    written = time.monotonic()
    while len(_dirs(index)) < 7:
        assert time.monotonic() - written < 5, _dirs(index)
        time.sleep(0.01)
    fresh = _index(base, watch=False)
    assert _dirs(index) == _dirs(fresh)


def test_watching_off_scans_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINLEDGER_WATCH", "0")
    base = make_base(tmp_path / "b", n=20, scalars=0)
    index = _index(base)
    for _ in range(3):
        index.query({"limit": 1})
    assert index._scanner._watch.watcher is None  # noqa: SLF001
    count, _ = _stats(monkeypatch, lambda: _dirs(index))
    assert count >= 20


def test_closing_the_last_index_stops_its_watcher(tmp_path: Path) -> None:
    base = make_base(tmp_path / "b", n=2, scalars=0)
    first, second = _index(base), _index(base)
    _trusted(first, base)
    _trusted(second, base)
    watcher = first._scanner._watch.watcher  # noqa: SLF001
    assert watcher is second._scanner._watch.watcher and watcher.users == 2  # one per base
    first.close()
    assert not watcher.failed  # still used by the second
    second.close()
    assert watcher.failed and watcher.users == 0
    watcher._thread.join(5)  # noqa: SLF001
    assert not watcher._thread.is_alive()  # noqa: SLF001


def test_the_first_query_starts_what_makes_the_next_ones_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50 item 6: after a process's first answer, the watcher starts and, once trusted,
    the index proves itself fresh on the watcher's thread, with no query asking: the next
    query stats no run directory. Another process's write after that is still seen."""
    base = make_base(tmp_path / "b", n=30, scalars=0)
    with LineageIndex(base) as earlier:  # (an index built by an earlier process)
        earlier.refresh()
    index = _index(base)
    assert len(_dirs(index)) == 30  # the first answer
    deadline = time.monotonic() + 10
    watch = index._scanner._watch  # noqa: SLF001 - the state under test
    while index._refresher._proof is None and watch.since is None:  # noqa: SLF001
        assert time.monotonic() < deadline, "no proof without a second query"
        time.sleep(0.02)
    count, result = _stats(monkeypatch, lambda: _dirs(index))
    assert len(result) == 30 and count <= 5, count  # type: ignore[arg-type]
    subprocess.run([sys.executable, "-c", _WRITE, str(base), "1"], cwd=REPO, check=True, timeout=60)
    deadline = time.monotonic() + 5
    while "./p0" not in _dirs(index):
        assert time.monotonic() < deadline, "another process's run never showed"
        time.sleep(0.02)


def test_a_watched_process_still_saves_the_scan_state_a_new_process_trusts(
    tmp_path: Path,
) -> None:
    """A listing taken less than 2 s after its directory changed is not trusted, so no scan
    state is saved from it. With a watcher trusted at once, later scans are incremental and
    used to skip that directory for good: the state was never saved, and every new process
    loaded every listing. Such listings are taken again once they can be trusted."""
    base = make_base(tmp_path / "b", n=20, scalars=0)
    index = _index(base)
    _trusted(index, base)  # (the first build touched the base: its listing is not trusted)
    time.sleep(2.1)
    _dirs(index)
    with LineageIndex(base, watch=False) as fresh:
        assert fresh.refresh().trusted  # the saved state proved it: nothing loaded
