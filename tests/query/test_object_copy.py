"""A query over an ``s3://`` base downloads no event file whose series sidecar says what it
holds (``query/object_copy.py``), against a real S3 server (moto in server mode): the
answers equal those over the same runs on local disk, and every file the index must read
(another writer's, a TensorBoard run's, one a sidecar stopped covering) is a real copy."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.runs import write_run
from tests.s3_server import server_requests
from trainledger.cli.main import cli
from trainledger.lineage.records import RunValues
from trainledger.query import STATS, filter_summary_lineage
from trainledger.query.object_copy import held_copy, index_copy
from trainledger.storage import OBJECTS_MANIFEST, STAND_IN, ObjectLocation, ObjectStore
from trainledger.storage.cache import index_copy_dir, sync_down
from trainledger.storage.change_log import ChangeRecorder
from trainledger.storage.objects import ObjectInfo

FIELDS = [f"{stat}(loss)" for stat in STATS]


def ours(base: Path, name: str, steps: range, value: float = 10.0) -> Path:
    """A lineage run whose ``loss`` trainledger's ``SummaryRecord`` wrote (with its sidecar);
    a run that exists gets another writer session."""
    from trainledger.summary import SummaryRecord

    run = base / name
    if not run.is_dir():
        write_run(base, name, run=RunValues(status="finished"))
    with SummaryRecord(run) as record:
        for step in steps:
            record.add_scalar("loss", value / step, step)
    return run


def torch_events(folder: Path, steps: range) -> None:
    """``loss`` written by TensorBoard's own writer: a file no sidecar covers."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(folder)) as writer:
        for step in steps:
            writer.add_scalar("loss", 1.0 + step / 1000, step)


def upload(local: Path, url: str) -> None:
    """Every file under ``local`` to ``url``, as a mirror leaves it: each object (boto3, not
    our client) followed by its change record."""
    import boto3

    loc = ObjectLocation.parse(url)
    client = boto3.client("s3")
    recorder = ChangeRecorder(ObjectStore(), loc.bucket)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = f"{loc.key}/{path.relative_to(local).as_posix()}"
        answer = client.put_object(Bucket=loc.bucket, Key=key, Body=path.read_bytes())
        info = ObjectInfo(path.stat().st_size, answer["ETag"].strip('"'))
        recorder.record(ObjectLocation(loc.bucket, key), info)


def series(base: str | Path) -> dict[str, dict[str, Any]]:
    answer = filter_summary_lineage(base, series=FIELDS)
    return {o["summary_dir"]: o["series"] for o in answer["object"]}


def copy_of(url: str) -> tuple[Path, dict[str, str]]:
    """The index copy's directory and its manifest's entries."""
    local = Path(index_copy_dir(ObjectLocation.parse(url)))
    return local, json.loads((local / OBJECTS_MANIFEST).read_text())["files"]


def event_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*tfevents*"))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every query lists the store again (no 5-second reuse of a copy)."""
    monkeypatch.setattr("trainledger.storage.locations.READ_MAX_AGE", 0.0)


def test_a_query_over_s3_reads_sidecars_not_the_event_files_they_cover(
    s3_bucket: str, tmp_path: Path, fresh: None
) -> None:
    from trainledger.summary import SummaryRecord

    base = tmp_path / "runs"
    ours(base, "ours", range(1, 301))
    mixed = ours(base, "mixed", range(1, 51))
    torch_events(mixed, range(51, 61))  # another writer's file in a lineage run
    torch_events(base / "tb", range(1, 41))  # a TensorBoard run: no lineage file
    with SummaryRecord(base / "tbours") as record:  # one whose HParams would be read too
        record.add_scalar("loss", 3.0, 1)
    url = f"s3://{s3_bucket}/team/runs"
    upload(base, url)

    assert series(url) == series(base)
    local, files = copy_of(url)
    (stand_in,) = event_files(local / "ours")
    assert files[f"ours/{stand_in.name}"].startswith(STAND_IN)
    assert stand_in.stat().st_size == (base / "ours" / stand_in.name).stat().st_size > 0
    assert stand_in.read_bytes() == bytes(stand_in.stat().st_size)  # never downloaded
    for run in ("mixed", "tb", "tbours"):  # their files are read: real copies
        copies = event_files(local / run)
        assert copies and [c.read_bytes() for c in copies] == [
            (base / run / c.name).read_bytes() for c in copies
        ]
        assert not any(files[f"{run}/{c.name}"].startswith(STAND_IN) for c in copies)
    assert len(list(local.rglob("*tlseries*"))) == 3  # the sidecars themselves are copied

    shown = CliRunner().invoke(cli, ["lineage", url, "-w", "min(loss) < 0.05"])
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.output.splitlines()[2:-1]]
    assert [row[:2] for row in rows] == [["ours", "finished"]]  # (the run record: the copy's)
    assert stand_in.read_bytes() == bytes(stand_in.stat().st_size)


def test_each_sync_decides_again_what_stays_in_the_store(
    s3_bucket: str, tmp_path: Path, fresh: None
) -> None:
    base = tmp_path / "runs"
    run = ours(base, "r", range(1, 101))
    url = f"s3://{s3_bucket}/b"
    upload(base, url)
    assert series(url) == series(base)
    local, _ = copy_of(url)
    (first,) = event_files(local / "r")

    ours(base, "r", range(101, 151), value=0.5)  # a resumed writer: a new file, a new sidecar
    upload(base, url)
    assert series(url) == series(base)
    _, files = copy_of(url)
    assert [files[f"r/{f.name}"].startswith(STAND_IN) for f in event_files(local / "r")] == [
        True,
        True,
    ]

    torch_events(run, range(151, 161))  # a file no sidecar covers: every file is read
    upload(base, url)
    assert series(url) == series(base)
    assert series(url)["./r"]["count(loss)"] == 160
    _, files = copy_of(url)
    for copy in event_files(local / "r"):
        assert not files[f"r/{copy.name}"].startswith(STAND_IN)
        assert copy.read_bytes() == (run / copy.name).read_bytes()
    assert first.read_bytes() == (run / first.name).read_bytes()


def test_sync_down_leaves_the_picked_event_files_as_sparse_stand_ins(
    s3_bucket: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    torch_events(folder, range(1, 21))
    (folder / "notes.txt").write_text("kept")
    url = f"s3://{s3_bucket}/one"
    upload(folder, url)
    (name,) = [p.name for p in event_files(folder)]
    real = (folder / name).read_bytes()
    store = ObjectStore()
    calls: list[dict[str, int]] = []

    def pick(local: str, listing: Any) -> set[str]:
        assert (Path(local) / "notes.txt").read_text() == "kept"  # copied before the pick
        calls.append({rel: info.size for rel, info in listing.items()})
        return {name, "notes.txt"}  # (only event files can stay in the store)

    local = Path(sync_down(url, local_dir=str(tmp_path / "c"), store=store, stand_ins=pick))
    assert calls == [{name: len(real), "notes.txt": 4}]
    assert (local / name).read_bytes() == bytes(len(real))
    manifest = json.loads((local / OBJECTS_MANIFEST).read_text())["files"]
    assert manifest[name].startswith(STAND_IN) and not manifest["notes.txt"].startswith(STAND_IN)
    sync_down(url, local_dir=str(local), store=store, stand_ins=lambda *_: set())
    assert (local / name).read_bytes() == real  # no longer picked: downloaded
    sync_down(url, local_dir=str(local), store=store, stand_ins=pick)
    assert (local / name).read_bytes() == real  # a copy of this version stays a copy


def test_a_query_holds_off_another_sync_of_the_buckets_copies(
    s3_bucket: str, tmp_path: Path
) -> None:
    base = tmp_path / "runs"
    ours(base, "r", range(1, 11))
    url = f"s3://{s3_bucket}/held"
    upload(base, url)
    done = threading.Event()

    def other() -> None:
        index_copy(f"{url}/r")  # a run's copy lies inside its base's: the same lock
        done.set()

    with held_copy(url) as local:
        assert Path(local, "r").is_dir()
        thread = threading.Thread(target=other, daemon=True)
        thread.start()
        time.sleep(0.5)
        assert not done.is_set()
    assert done.wait(30)
    thread.join(30)


def test_a_series_long_enough_for_an_overview_is_downloaded(
    s3_bucket: str, tmp_path: Path, fresh: None
) -> None:
    """A sidecar holds no overview, and the index reads a long series once to make one."""
    from trainledger.query.series_overviews import MIN_POINTS

    base = tmp_path / "runs"
    run = ours(base, "long", range(1, MIN_POINTS + 1))
    url = f"s3://{s3_bucket}/long"
    upload(base, url)
    assert series(url) == series(base)
    local, files = copy_of(url)
    (copy,) = event_files(local / "long")
    assert not files[f"long/{copy.name}"].startswith(STAND_IN)
    assert copy.read_bytes() == (run / copy.name).read_bytes()


def test_the_ui_indexes_the_copy_and_reads_a_runs_points_from_the_store(
    s3_bucket: str, tmp_path: Path, fresh: None
) -> None:
    """``trainledger ui s3://...`` indexes the index copy (no event file downloaded at
    start) and reads a run's points, when its page asks, from the download cache of that
    run alone; the refresh thread keeps the index copy fresh."""
    from trainledger.cli.locations import keep_fresh, local_copy
    from trainledger.server import IndexedRunStore
    from trainledger.storage.cache import cache_dir
    from trainledger.summary import read_scalars

    base = tmp_path / "runs"
    ours(base, "a", range(1, 41), value=1.0)
    ours(base, "b", range(1, 41))
    url = f"s3://{s3_bucket}/ui"
    upload(base, url)
    local = Path(local_copy(url, for_index=True))
    assert local == Path(index_copy_dir(ObjectLocation.parse(url)))
    store = IndexedRunStore(local, background_rescan=False, remote=url)
    try:
        found = store.search({"sorted_name": "min(loss)"})
        assert [o["summary_dir"] for o in found["object"]] == ["./a", "./b"]
        points = store.scalar_series("a", "loss")
        want = read_scalars(base / "a")["loss"]
        assert list(points[0]) == list(want[0]) and list(points[2]) == list(want[2])
        assert len(points[0]) == 40
        done = threading.Event()

        def scan() -> None:
            store.service.rescan(force=True)
            done.set()

        with held_copy(url):  # a sync of the copy under way: the UI's scan waits for it
            threading.Thread(target=scan, daemon=True).start()
            time.sleep(0.5)
            assert not done.is_set()
        assert done.wait(30)
    finally:
        store.close()
    (stand_in,) = event_files(local / "a")
    assert stand_in.read_bytes() == bytes(stand_in.stat().st_size)  # the index's: untouched
    cached = Path(cache_dir(ObjectLocation.parse(f"{url}/a")))
    assert (cached / stand_in.name).read_bytes() == (base / "a" / stand_in.name).read_bytes()
    assert not Path(cache_dir(ObjectLocation.parse(f"{url}/b"))).exists()  # never opened

    ours(base, "c", range(1, 11))
    upload(base, url)
    stop = keep_fresh(url, 0.05)
    try:
        deadline = time.monotonic() + 30
        while not event_files(local / "c") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
    (added,) = event_files(local / "c")
    assert added.read_bytes() == bytes(added.stat().st_size)  # a stand-in there too


def test_a_query_over_a_quiet_bucket_costs_one_request_and_a_new_run_one_list_more(
    s3_bucket: str, tmp_path: Path, fresh: None
) -> None:
    """Issue 50's first target, counted at the server: once the copy is in step, a query
    where nothing changed asks the store one thing (the records since its place), and a new
    run costs that request plus the run's own objects."""
    base = tmp_path / "runs"
    for i in range(4):
        ours(base, f"r{i}", range(1, 21))
    url = f"s3://{s3_bucket}/b"
    upload(base, url)
    assert filter_summary_lineage(url)["count"] == 4
    with server_requests(s3_bucket) as quiet:
        assert filter_summary_lineage(url)["count"] == 4
    assert quiet.count() == 1 and quiet.count("prefix=.trainledger/changes/r/") == 1
    new = ours(tmp_path / "more", "r9", range(1, 21))
    upload(new.parent, url)
    with server_requests(s3_bucket) as added:
        assert filter_summary_lineage(url)["count"] == 5
    fetched = [line for line in added.lines if f"/{s3_bucket}/b/r9/" in line]
    assert added.count("list-type") == 1 and len(fetched) == added.count() - 1
    assert fetched and all('"GET ' in line for line in fetched)


def test_on_a_shared_postgresql_index_one_process_refreshes_for_everyone(
    s3_bucket: str, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50 item 5: a process that refreshed the shared index from the bucket stamps it;
    another process (here: another cache directory, as on another machine) within the
    staleness bound answers from the index with no request to the bucket and no copy."""
    import subprocess
    import sys

    monkeypatch.setenv("TRAINLEDGER_INDEX_URL", pg_url)
    base = tmp_path / "runs"
    for i in range(3):
        ours(base, f"r{i}", range(1, 11))
    url = f"s3://{s3_bucket}/team"
    upload(base, url)
    assert filter_summary_lineage(url)["count"] == 3  # this process syncs and refreshes
    script = (
        "import sys; from trainledger.query import filter_summary_lineage; "
        "print('COUNT', filter_summary_lineage(sys.argv[1])['count'])"
    )
    env = {**os.environ, "TRAINLEDGER_CACHE_DIR": str(tmp_path / "elsewhere")}
    env["TRAINLEDGER_OBJECT_MAX_AGE"] = "60"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    with server_requests(s3_bucket) as seen:
        done = subprocess.run(
            [sys.executable, "-c", script, url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert "COUNT 3" in done.stdout and seen.count() == 0
    copy = tmp_path / "elsewhere" / "_index-copies" / s3_bucket / "team"
    assert not any(p.is_file() for p in copy.rglob("*"))  # nothing synced there
    env["TRAINLEDGER_OBJECT_MAX_AGE"] = "0.001"  # older than the bound: it syncs its own copy
    with server_requests(s3_bucket) as synced:
        done = subprocess.run(
            [sys.executable, "-c", script, url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "COUNT 3" in done.stdout and synced.count("prefix=team") == 1, done.stderr
