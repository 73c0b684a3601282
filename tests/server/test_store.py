"""IndexedRunStore over the query package's QueryService: an index on disk answers at once, the
re-scan catches up, results are cached per data version, a poll reads no run's files."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.runs import make_base, sample_run
from trainledger.server import run_store
from trainledger.server.run_store import IndexedRunStore


def wait_for(predicate, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_index_on_disk_answers_first_then_background_rescan_catches_up(tmp_path: Path) -> None:
    base = make_base(tmp_path / "runs", n=3, scalars=0)
    first = IndexedRunStore(base)
    assert first.search(None)["count"] == 3  # no index yet: the first search builds it
    first.close()
    sample_run(base, "late", 7)
    store = IndexedRunStore(base, rescan_interval=0.05)
    release = threading.Event()
    real_refresh = store.service._index.refresh

    def slow_refresh():  # type: ignore[no-untyped-def]
        release.wait(20)
        return real_refresh()

    store.service._index.refresh = slow_refresh  # type: ignore[method-assign]
    try:
        assert store.search(None)["count"] == 3  # served from the index left on disk
        release.set()
        assert wait_for(lambda: store.stamp()["count"] == 4)
        assert "late" in {o["run_id"] for o in store.search(None)["object"]}
    finally:
        release.set()
        store.close()


def test_without_background_every_request_sees_new_runs(tmp_path: Path) -> None:
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    store = IndexedRunStore(base, rescan_interval=0.0, stale_after=0.0, background_rescan=False)
    try:
        assert store.stamp()["count"] == 2
        sample_run(base, "new", 3)
        assert store.stamp()["count"] == 3
        assert store.service.is_known("./new") and not store.service.is_known("./absent")
    finally:
        store.close()


def test_the_pages_first_status_takes_the_runs_as_last_scanned(tmp_path: Path) -> None:
    """``GET /status?scan=false`` (the page's first call) waits for no re-scan; a poll does."""
    from fastapi.testclient import TestClient

    from trainledger.server.app import create_app

    base = make_base(tmp_path / "runs", n=2, scalars=0)
    store = IndexedRunStore(base, rescan_interval=0.0, stale_after=3600.0)
    # (no start-up scan in a thread: on a busy machine it could run after the new run was
    # written, and the runs as last scanned would then rightly hold it)
    with TestClient(create_app(base, store=store, warm=False)) as client:
        assert client.get("/api/v1/status").json()["count"] == 2
        sample_run(base, "new", 3)
        assert client.get("/api/v1/status", params={"scan": "false"}).json()["count"] == 2
        assert client.get("/api/v1/status").json()["count"] == 3


def test_search_results_are_cached_per_version(tmp_path: Path) -> None:
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    store = IndexedRunStore(base, rescan_interval=3600)
    try:
        a = store.search({"offset": 0, "limit": 10})
        assert store.search({"limit": 10, "offset": 0}) is a
        store.annotate("run00", tag=1)
        b = store.search({"offset": 0, "limit": 10})
        assert b is not a
        assert {o["run_id"]: o["added_info"] for o in b["object"]}["run00"] == {"tag": 1}
    finally:
        store.close()


def test_status_poll_reads_no_run_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The poll (and the app's start-up warm-up, which calls it in a background thread)
    counts runs in the index; it used to fetch a one-run page with its run info, a lineage
    read that could land after a later request had started."""
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    reads: list[Any] = []
    real = run_store.lineage_files
    monkeypatch.setattr(run_store, "lineage_files", lambda p: reads.append(p) or real(p))
    store = IndexedRunStore(base, rescan_interval=0.0, stale_after=0.0, background_rescan=False)
    try:
        assert store.stamp()["count"] == 2
        assert store.stamp()["count"] == 2
        assert reads == []
        store.search(None)  # a page of the table does show run info
        assert len(reads) == 2
    finally:
        store.close()


def test_run_info_is_reused_within_a_version_and_refreshed_after_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    sample_run(base, "live", 5, status="running")
    store = IndexedRunStore(base, rescan_interval=0.0, stale_after=0.0, background_rescan=False)
    try:
        store.stamp()
        assert store.run_info("live")["status"] == "running"
        stats = []
        real = run_store.lineage_files
        monkeypatch.setattr(run_store, "lineage_files", lambda p: stats.append(p) or real(p))
        assert store.run_info("live")["status"] == "running"
        assert stats == []  # same data version: not even a stat
        time.sleep(0.01)
        sample_run(base, "live", 5, status="finished")  # the run ends: a new lineage record
        store.stamp()  # the poll's re-scan moves the version
        assert store.run_info("live")["status"] == "finished"
    finally:
        store.close()


def test_two_servers_on_one_postgresql_index_see_each_others_annotations(
    tmp_path: Path, pg_url: str
) -> None:
    """Two UI processes of a team (here two stores) share the index: a tag set through one
    is a new data version for the other, whose cached answers are dropped."""
    base = make_base(tmp_path / "runs", n=3, scalars=0)

    def server() -> IndexedRunStore:
        return IndexedRunStore(
            base, rescan_interval=0.0, stale_after=0.0, background_rescan=False, index=pg_url
        )

    a, b = server(), server()
    try:
        assert a.stamp()["count"] == b.stamp()["count"] == 3
        before = b.stamp()["stamp"]
        cached = b.search({"sorted_name": "tag", "sorted_type": "descending"})
        a.annotate("run01", tag=5, remark="seen by b")
        assert b.stamp()["stamp"] != before
        top = b.search({"sorted_name": "tag", "sorted_type": "descending"})
        assert top is not cached
        assert top["object"][0]["run_id"] == "run01"
        assert top["object"][0]["added_info"] == {"tag": 5, "remark": "seen by b"}
        assert not (base / ".trainledger" / "annotations.json").exists()  # kept in the database
    finally:
        a.close()
        b.close()


def test_a_postgresql_outage_answers_503_naming_the_index(
    tmp_path: Path, pg_server: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI over a shared index whose server is stopped: 503 saying which backend, not a
    400 that blames the request (the retry window shortened to a second)."""
    from fastapi.testclient import TestClient

    from trainledger.server import create_app

    base = make_base(tmp_path / "runs", n=2, scalars=0)
    store = IndexedRunStore(
        base, rescan_interval=0.0, stale_after=0.0, background_rescan=False, index=pg_url
    )
    client = TestClient(create_app(base, store=store))
    monkeypatch.setenv("TRAINLEDGER_INDEX_RETRY_SECONDS", "1")
    try:
        assert client.post("/api/v1/runs", json={}).status_code == 200
        pg_server.ctl("stop", "-m", "fast")
        try:
            answer = client.post("/api/v1/runs", json={"sorted_name": "tag"})
        finally:
            pg_server.ctl("start", "-l", f"{pg_server.datadir}/server.log")
    finally:
        store.close()
    assert answer.status_code == 503, answer.text
    assert answer.json()["backend"] == "postgresql"
    assert "unreachable" in answer.json()["detail"]


def test_the_old_name_engine_store_still_works_with_a_deprecation_warning(tmp_path: Path) -> None:
    import trainledger.server as server
    from trainledger.server import run_store

    for module in (server, run_store):
        with pytest.warns(DeprecationWarning, match="EngineStore is now IndexedRunStore"):
            assert module.EngineStore is IndexedRunStore
