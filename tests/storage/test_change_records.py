"""Change records (issue 50): a copy of an ``s3://`` prefix refreshes by what changed, counted
in requests at the moto server, and falls back to a listing whenever the records cannot be
trusted to be whole. Writers are trainledger's own (``UploadMirror``) unless a test says it
plays a writer that records nothing."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest

from tests.s3_server import objects, server_requests
from trainledger.storage import change_log, compaction
from trainledger.storage.cache import sync_down
from trainledger.storage.change_log import RECORDS_PREFIX, ChangeRecorder, parse_record
from trainledger.storage.mirror import UploadMirror
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore

REPO = Path(__file__).resolve().parents[2]


def write(folder: Path, files: dict[str, bytes]) -> None:
    for rel, body in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(body)


def mirror_of(tmp_path: Path, bucket: str, run: str) -> tuple[Path, UploadMirror]:
    local = tmp_path / "staged" / run
    local.mkdir(parents=True, exist_ok=True)
    return local, UploadMirror(local, ObjectLocation(bucket, f"base/{run}"), interval=0)


def copy_files(local: str) -> dict[str, bytes]:
    root = Path(local)
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".trainledger-")
    }


def bucket_files(bucket: str) -> dict[str, bytes]:
    return {k.removeprefix("base/"): v for k, v in objects(bucket, "base/").items()}


def test_a_quiet_refresh_is_one_request_and_a_change_costs_only_what_changed(
    s3_bucket: str, tmp_path: Path
) -> None:
    runs = {f"r{i}": mirror_of(tmp_path, s3_bucket, f"r{i}") for i in range(5)}
    for name, (local, mirror) in runs.items():
        write(local, {"lineage": name.encode(), "events": b"e" * 10})
        mirror.sync()
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    sync_down(url, local_dir=copy)  # the first sync lists
    assert copy_files(copy) == bucket_files(s3_bucket)
    with server_requests(s3_bucket) as quiet:
        sync_down(url, local_dir=copy)
    assert quiet.count() == 1 and quiet.count("prefix=.trainledger/changes/r/") == 1
    local, mirror = runs["r3"]
    write(local, {"events": b"e" * 20, "new": b"n"})
    mirror.sync()
    with server_requests(s3_bucket) as changed:
        sync_down(url, local_dir=copy)
    gets = sorted(line.split()[6] for line in changed.lines if '"GET /' in line)
    assert changed.count() == 3, changed.lines  # 1 LIST + the run's 2 changed objects
    assert [g for g in gets if "list-type" not in g] == [
        f"/{s3_bucket}/base/r3/events",
        f"/{s3_bucket}/base/r3/new",
    ]
    assert copy_files(copy) == bucket_files(s3_bucket)
    (local / "new").unlink()
    mirror.request_delete("new")
    mirror.sync()
    sync_down(url, local_dir=copy)
    assert "r3/new" not in copy_files(copy) and copy_files(copy) == bucket_files(s3_bucket)


def test_records_landing_out_of_order_from_two_processes_are_all_applied(
    s3_bucket: str, tmp_path: Path
) -> None:
    """Two writer processes upload at once while a reader refreshes: every refresh is a
    subset of the bucket, and the last one equals it (late records come from the window)."""
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from trainledger.storage.mirror import UploadMirror\n"
        "from trainledger.storage.objects import ObjectLocation\n"
        "bucket, name, root = sys.argv[1:4]\n"
        "local = Path(root) / name\n"
        "local.mkdir(parents=True)\n"
        "mirror = UploadMirror(local, ObjectLocation(bucket, f'base/{name}'), interval=0)\n"
        "for i in range(15):\n"
        "    (local / f'f{i}').write_bytes(f'{name}{i}'.encode())\n"
        "    mirror.sync()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    sync_down(url, local_dir=copy)
    writers = [
        subprocess.Popen([sys.executable, str(script), s3_bucket, n, str(tmp_path / "w")], env=env)
        for n in ("a", "b")
    ]
    deadline = time.monotonic() + 120
    while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
        sync_down(url, local_dir=copy)
        assert copy_files(copy).items() <= bucket_files(s3_bucket).items()
    assert [w.wait(60) for w in writers] == [0, 0]
    # a record that lands late, stamped before the reader's cursor (within the window)
    recorder = ChangeRecorder(ObjectStore(), s3_bucket)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="base/late/x", Body=b"late")
    back = int(time.time() * 1000) - 5000
    key = f"{RECORDS_PREFIX}{back:013d}-{recorder.writer}-000000001~p~4~0~base%2Flate%2Fx"
    boto3.client("s3").put_object(Bucket=s3_bucket, Key=key, Body=b"")
    sync_down(url, local_dir=copy)
    assert copy_files(copy) == bucket_files(s3_bucket) and len(copy_files(copy)) == 31


def test_a_writer_that_records_nothing_is_found_by_the_safety_listing_or_a_rescan(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    local, mirror = mirror_of(tmp_path, s3_bucket, "r0")
    write(local, {"a": b"1"})
    mirror.sync()
    sync_down(url, local_dir=copy)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="base/cp/b", Body=b"aws s3 cp")
    sync_down(url, local_dir=copy)
    assert "cp/b" not in copy_files(copy)  # no record: not seen before the safety listing
    other = str(tmp_path / "other-copy")  # another reader, in step before the cp
    sync_down(url, local_dir=other)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="base/cp/b2", Body=b"again")
    sync_down(url, local_dir=copy, rescan=True)
    assert copy_files(copy)["cp/b"] == b"aws s3 cp"
    with server_requests(s3_bucket) as told:  # the rescan recorded what it found, for others
        sync_down(url, local_dir=other)
    assert told.count("prefix=base") == 0 and copy_files(other)["cp/b2"] == b"again"
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="base/cp/c", Body=b"later")
    monkeypatch.setenv("TRAINLEDGER_OBJECT_SAFETY_LISTING", "0.5")
    time.sleep(0.6)
    with server_requests(s3_bucket) as seen:
        sync_down(url, local_dir=copy)
    assert seen.count("prefix=base") == 1  # the safety listing
    assert copy_files(copy) == bucket_files(s3_bucket)


def test_a_writer_killed_between_its_upload_and_its_record(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "killed.py"
    script.write_text(
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from trainledger.storage import change_log\n"
        "from trainledger.storage.mirror import UploadMirror\n"
        "from trainledger.storage.objects import ObjectLocation\n"
        "def die(*a, **k):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "change_log.ChangeRecorder.record = die\n"
        "local = Path(sys.argv[2])\n"
        "local.mkdir(parents=True)\n"
        "(local / 'lineage').write_bytes(b'uploaded, never recorded')\n"
        "UploadMirror(local, ObjectLocation(sys.argv[1], 'base/k'), interval=0).sync()\n"
    )
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    sync_down(url, local_dir=copy)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, str(script), s3_bucket, str(tmp_path / "k")], env=env, timeout=120
    )
    assert done.returncode == -signal.SIGKILL
    assert "base/k/lineage" in objects(s3_bucket)  # uploaded, and no record of it
    sync_down(url, local_dir=copy)
    assert "k/lineage" not in copy_files(copy)
    monkeypatch.setenv("TRAINLEDGER_OBJECT_SAFETY_LISTING", "1e-9")
    sync_down(url, local_dir=copy)
    assert copy_files(copy)["k/lineage"] == b"uploaded, never recorded"


def test_a_record_naming_a_missing_object_a_gap_or_a_malformed_record_lists_the_prefix(
    s3_bucket: str, tmp_path: Path
) -> None:
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    local, mirror = mirror_of(tmp_path, s3_bucket, "r0")
    write(local, {"a": b"1"})
    mirror.sync()
    sync_down(url, local_dir=copy)
    store, s3 = ObjectStore(), boto3.client("s3")
    recorder = ChangeRecorder(store, s3_bucket)
    recorder.record(ObjectLocation(s3_bucket, "base/ghost/x"), ObjectInfo(3, "abc"))
    with server_requests(s3_bucket) as missing:
        sync_down(url, local_dir=copy)
    assert missing.count("prefix=base") == 1 and "ghost/x" not in copy_files(copy)
    s3.put_object(Bucket=s3_bucket, Key="base/gap/y", Body=b"y")
    recorder.seq += 1  # the record of seq 2 was never written
    recorder.record(ObjectLocation(s3_bucket, "base/r0/a"), ObjectInfo(1, "x"))
    with server_requests(s3_bucket) as gap:
        sync_down(url, local_dir=copy)
    assert gap.count("prefix=base") == 1 and copy_files(copy)["gap/y"] == b"y"
    s3.put_object(Bucket=s3_bucket, Key="base/bad/z", Body=b"z")
    s3.put_object(
        Bucket=s3_bucket, Key=f"{RECORDS_PREFIX}{int(time.time() * 1000):013d}-junk", Body=b""
    )
    with server_requests(s3_bucket) as bad:
        sync_down(url, local_dir=copy)
    assert bad.count("prefix=base") == 1 and copy_files(copy) == bucket_files(s3_bucket)


def test_records_are_untrusted_keys_and_write_nothing_outside_the_copy(
    s3_bucket: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url, copy = f"s3://{s3_bucket}/team", str(tmp_path / "cache" / "copy")
    local, mirror = mirror_of(tmp_path, s3_bucket, "r0")
    sync_down(url, local_dir=copy)
    s3, recorder = boto3.client("s3"), ChangeRecorder(ObjectStore(), s3_bucket)
    evil = ["team/../../victim/x", "team/r1//y", "team/r1/./z", "team/a\\b", "team/" + "n" * 300]
    for key in [*evil, "team/r1/ok"]:
        answer = s3.put_object(Bucket=s3_bucket, Key=key, Body=b"pwned")
        recorder.record(ObjectLocation(s3_bucket, key), ObjectInfo(5, answer["ETag"].strip('"')))
    recorder.record(ObjectLocation(s3_bucket, "team/../../victim/keep"), None)  # a delete
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_bytes(b"mine")
    with caplog.at_level(logging.WARNING, logger="trainledger.storage.cache"):
        sync_down(url, local_dir=copy)
    assert copy_files(copy) == {"r1/ok": b"pwned"}
    assert [p.name for p in victim.iterdir()] == ["keep"] and (
        victim / "keep"
    ).read_bytes() == b"mine"
    assert sum("skipped the object" in r.message for r in caplog.records) == len(evil)


def test_a_reader_far_behind_starts_from_the_newest_snapshot_and_compaction_races_a_writer(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_log, "PAGE_SIZE", 10)
    url, copy = f"s3://{s3_bucket}/base", str(tmp_path / "copy")
    local, mirror = mirror_of(tmp_path, s3_bucket, "r0")
    write(local, {"first": b"0"})
    mirror.sync()
    sync_down(url, local_dir=copy)
    stop = threading.Event()
    other, other_mirror = mirror_of(tmp_path, s3_bucket, "r1")

    def keep_writing() -> None:
        i = 0
        while not stop.is_set():
            write(other, {"live": str(i).encode()})  # one object, sent again and again
            other_mirror.sync()
            i += 1

    racer = threading.Thread(target=keep_writing)
    racer.start()
    try:
        for i in range(30):
            write(local, {f"f{i}": b"x"})
            mirror.sync()
            if i in (12, 25):
                assert compaction.compact(ObjectStore(), s3_bucket, "test.0", every=10)
    finally:
        stop.set()
        racer.join(60)
    snaps = [k for k in objects(s3_bucket, ".trainledger/changes/s/", records=True)]
    assert snaps
    body = json.loads(
        __import__("gzip").decompress(objects(s3_bucket, snaps[-1], records=True)[snaps[-1]])
    )
    assert sum(k.startswith("base/r1/") for k in body["objects"]) == 1  # superseded: one entry
    with server_requests(s3_bucket) as behind:
        sync_down(url, local_dir=copy)
    assert behind.count(".trainledger/changes/s/") >= 2  # listed, then read
    assert behind.count("prefix=base") == 0  # no listing of the prefix
    assert copy_files(copy) == bucket_files(s3_bucket)


def test_the_record_format_round_trips_and_refuses_what_is_not_one() -> None:
    recorder_key = f"{RECORDS_PREFIX}{1:013d}-{2:013d}.ab12-000000003~p~10~d41d8cd9-2~a%2Fb%7Ec"
    change = parse_record(recorder_key)
    assert change is not None and (change.key, change.size, change.seq) == ("a/b~c", 10, 3)
    assert change.etag == "d41d8cd9-2" and not change.deleted and change.writer_start_ms == 2
    for bad in [
        "x",
        f"{RECORDS_PREFIX}1-2-3",
        recorder_key.replace("~p~", "~q~"),
        recorder_key.replace("~10~", "~ten~"),
        recorder_key.replace("~a%2Fb%7Ec", "~"),
    ]:
        assert parse_record(bad) is None, bad


def test_sync_rescan_makes_every_copy_list_its_prefix(s3_bucket: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trainledger.cli.main import cli
    from trainledger.storage.cache import cache_dir

    url = f"s3://{s3_bucket}/base"
    sync_down(url)  # the download cache, under $TRAINLEDGER_CACHE_DIR
    boto3.client("s3").put_object(Bucket=s3_bucket, Key="base/cp/x", Body=b"x")
    sync_down(url)
    assert "cp/x" not in copy_files(cache_dir(ObjectLocation.parse(url)))
    done = CliRunner().invoke(cli, ["sync", "--rescan", str(tmp_path / "no-staging")])
    assert done.exit_code == 0, done.output
    assert "rescan asked of 1 local copies" in done.output
    sync_down(url)
    assert copy_files(cache_dir(ObjectLocation.parse(url)))["cp/x"] == b"x"


def test_a_running_ui_over_a_quiet_bucket_asks_once_a_period_and_sees_a_new_run_at_once(
    s3_bucket: str, tmp_path: Path
) -> None:
    """The UI's refresh loop (``cli.locations.keep_fresh``, as ``trainledger ui s3://...``
    runs it): one LIST of records per period while nothing changes, and a run uploaded by a
    trainledger writer is in the index's copy within the 5-second bound."""
    from trainledger.cli.locations import keep_fresh
    from trainledger.storage import index_copy_dir

    local, mirror = mirror_of(tmp_path, s3_bucket, "r0")
    write(local, {"a_lineage": b"L"})
    mirror.sync()
    url = f"s3://{s3_bucket}/base"
    copy = Path(index_copy_dir(ObjectLocation.parse(url)))
    period = 0.25
    with server_requests(s3_bucket) as quiet:
        stop = keep_fresh(url, period)
        began = time.monotonic()
        time.sleep(3)
        stop.set()
        elapsed = time.monotonic() - began
    periods = int(elapsed / period) + 1
    first = quiet.count("prefix=base") + quiet.count("/base/r0/a_lineage")  # the first sync,
    first += quiet.count("prefix=.trainledger/changes/s/")  # after a look for a snapshot
    records = quiet.count("prefix=.trainledger/changes/r/")
    assert first == 3 and records + first == quiet.count(), quiet.lines
    assert records <= periods, (records, periods)
    stop = keep_fresh(url, period)
    try:
        new, new_mirror = mirror_of(tmp_path, s3_bucket, "r9")
        write(new, {"b_lineage": b"new run"})
        new_mirror.sync()
        uploaded = time.monotonic()
        while not (copy / "r9" / "b_lineage").exists():
            assert time.monotonic() - uploaded < 5, "the new run was not seen within 5 s"
            time.sleep(0.02)
    finally:
        stop.set()
