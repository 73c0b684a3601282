"""What a bucket, a store that stops answering and a cleaned staging directory cannot do:
write or delete outside a cache, lose a run, delete remote data, or hang a process. Against
a real S3 server (moto in server mode); the timeouts are set to seconds."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner

from tests.s3_server import objects, start_moto, stop_moto
from trainledger.cli import cli
from trainledger.errors import ObjectStoreError
from trainledger.storage import flush_mirrors, remove_written, staged_locations
from trainledger.storage.cache import sync_down
from trainledger.storage.objects import ObjectLocation, key_problem
from trainledger.storage.staging import close_mirrors, staging_dir
from trainledger.summary import SummaryRecord

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_mirrors_left() -> object:
    yield
    logging.disable(logging.CRITICAL)
    try:
        close_mirrors()  # a test that stopped its server leaves nothing to the next one
    finally:
        logging.disable(logging.NOTSET)


# --- 1. keys that name files outside the cache ----------------------------------------
def _victim(tmp_path: Path) -> tuple[Path, str]:
    """A directory outside any cache, and enough ``../`` to reach ``/`` from a key."""
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    return victim_dir, "../" * (len(tmp_path.parts) + 4)


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("r1/../../../evil.txt", "'..'"),
        ("/abs/evil.txt", "empty path segment"),
        ("r1//x", "empty path segment"),
        ("newfolder/", "empty path segment"),
        ("r1/./x", "'..'"),
        ("r1\\..\\evil", "backslash"),
        ("r1/a\0b", "NUL"),
        ("r1/" + "n" * 256, "too long"),
        ("r1/" + "d/" * 600 + "x", "too long"),
    ],
)
def test_key_problem_names_each_refused_key(rel: str, why: str) -> None:
    problem = key_problem(rel)
    assert problem is not None and (why in problem or why == "'..'" and "'.'" in problem)


def test_key_problem_takes_ordinary_keys() -> None:
    for rel in ("r1/a.txt", "r 1/ünï.ckpt", "a..b/c.", ".hidden/x"):
        assert key_problem(rel) is None, rel


def test_a_bucket_cannot_write_or_delete_outside_the_cache(
    s3_bucket: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    victim_dir, depth = _victim(tmp_path)
    client = boto3.client("s3")
    evil = [
        f"team/r1/{depth}{victim_dir.relative_to('/')}/PWNED.txt",
        f"team/r1/..\\..\\{victim_dir.name}\\PWNED.txt",
        f"team//{victim_dir}/PWNED.txt",
        "team/r1/./PWNED.txt",
        "team/r1/" + "n" * 300,
    ]
    for key in [*evil, "team/r1/ok.txt"]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"pwned")
    cache = tmp_path / "cache-dir"
    with caplog.at_level(logging.WARNING, logger="trainledger.storage.cache"):
        local = sync_down(f"s3://{s3_bucket}/team", local_dir=str(cache))
    assert list(victim_dir.iterdir()) == []
    assert (Path(local) / "r1" / "ok.txt").read_bytes() == b"pwned"
    files = {str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()}
    assert files == {"r1/ok.txt", ".trainledger-objects.json", ".trainledger-changes.json"}
    assert sum("skipped the object" in r.message for r in caplog.records) == len(evil)
    # an old or tampered manifest naming a path outside is never deleted through
    (victim_dir / "keep.txt").write_bytes(b"mine")
    manifest = cache / ".trainledger-objects.json"
    record = json.loads(manifest.read_text())
    record["files"][f"r1/{depth}{victim_dir.relative_to('/')}/keep.txt"] = "x"
    manifest.write_text(json.dumps(record))
    sync_down(f"s3://{s3_bucket}/team", local_dir=str(cache))
    assert (victim_dir / "keep.txt").read_bytes() == b"mine"


def test_the_cli_reads_a_base_holding_hostile_keys_and_writes_nothing_outside(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim_dir, depth = _victim(tmp_path)
    client = boto3.client("s3")
    key = f"team/r1/{depth}{victim_dir.relative_to('/')}/PWNED.txt"
    client.put_object(Bucket=s3_bucket, Key=key, Body=b"pwned")
    monkeypatch.setenv("TRAINLEDGER_OBJECT_MAX_AGE", "0")
    done = CliRunner().invoke(cli, ["lineage", f"s3://{s3_bucket}/team"])
    assert done.exit_code == 0, done.output
    assert not (victim_dir / "PWNED.txt").exists()
    client.delete_object(Bucket=s3_bucket, Key=key)
    (victim_dir / "PWNED.txt").write_bytes(b"the user's own file")
    done = CliRunner().invoke(cli, ["lineage", f"s3://{s3_bucket}/team"])
    assert done.exit_code == 0, done.output
    assert (victim_dir / "PWNED.txt").read_bytes() == b"the user's own file"


# --- 5. folder markers and a key that is also a folder ---------------------------------
def test_folder_markers_and_file_folder_clashes_are_skipped(s3_bucket: str, tmp_path: Path) -> None:
    client = boto3.client("s3")
    for key, body in [
        ("team/newfolder/", b""),
        ("team/x", b"file"),
        ("team/x/y", b"inner"),
        ("team/r/a.txt", b"a"),
    ]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=body)
    local = Path(sync_down(f"s3://{s3_bucket}/team", local_dir=str(tmp_path / "c")))
    assert (local / "x" / "y").read_bytes() == b"inner"
    assert (local / "r" / "a.txt").read_bytes() == b"a"
    done = CliRunner().invoke(cli, ["lineage", f"s3://{s3_bucket}/team"])
    assert done.exit_code == 0, done.output


# --- 3. a missing bucket -----------------------------------------------------------------
def test_a_missing_bucket_fails_before_anything_is_written(
    s3_env: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINLEDGER_STAGING_DIR", str(tmp_path / "staging"))
    with pytest.raises(ObjectStoreError, match="bucket 'no-such-bucket-tl' does not exist"):
        SummaryRecord("s3://no-such-bucket-tl/runs/t1")
    assert not (tmp_path / "staging").exists() or not any((tmp_path / "staging").rglob("*"))


def test_a_bucket_deleted_mid_run_is_a_failure_not_a_vanished_file(s3_bucket: str) -> None:
    local = Path(staging_dir(f"s3://{s3_bucket}/runs/t1", interval=0))
    (local / "a.txt").write_bytes(b"one")
    flush_mirrors()
    client = boto3.client("s3")
    for key in objects(s3_bucket, records=True):
        client.delete_object(Bucket=s3_bucket, Key=key)
    client.delete_bucket(Bucket=s3_bucket)
    (local / "b.txt").write_bytes(b"two")
    with pytest.raises(ObjectStoreError, match="does not exist"):
        flush_mirrors()
    assert (local / "b.txt").read_bytes() == b"two"
    state = json.loads((local / ".trainledger-staging.json").read_text())
    assert state["state"] == "failed" and "b.txt" in state["error"]


# --- 4. no remote deletion without a writer's request --------------------------------------
def test_deleting_the_staging_directory_deletes_nothing_remotely(s3_bucket: str) -> None:
    local = Path(staging_dir(f"s3://{s3_bucket}/runs/r1", interval=0.05))
    (local / "ckpt").mkdir()
    for name in ("a.txt", "ckpt/m-1_1.ckpt", "ckpt/m-1_2.ckpt"):
        (local / name).write_bytes(name.encode())
    flush_mirrors()
    assert len(objects(s3_bucket)) == 3
    for path in sorted(local.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    time.sleep(0.5)  # ten background passes
    flush_mirrors()
    assert len(objects(s3_bucket)) == 3
    local.mkdir(parents=True, exist_ok=True)
    (local / "ckpt").mkdir()
    (local / "ckpt" / "m-1_2.ckpt").write_bytes(b"again")
    remove_written(local / "ckpt" / "m-1_2.ckpt")  # the one explicit delete call
    flush_mirrors()
    assert set(objects(s3_bucket)) == {"runs/r1/a.txt", "runs/r1/ckpt/m-1_1.ckpt"}


def test_checkpoint_retention_deletes_old_checkpoints_from_the_store(s3_bucket: str) -> None:
    import torch
    from torch import nn

    from trainledger import CheckpointConfig, ModelCheckpoint
    from trainledger.run import Model

    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(3)]
    url = f"s3://{s3_bucket}/runs/keep"
    config = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=2)
    model.train(2, data, callbacks=[ModelCheckpoint("m", url, config)])
    ckpts = sorted(k for k in objects(s3_bucket) if k.endswith(".ckpt"))
    assert ckpts == ["runs/keep/m-2_2.ckpt", "runs/keep/m-2_3.ckpt"]  # the last two


# --- 6. a store that stops answering ----------------------------------------------------
@pytest.fixture
def stalled_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """A private moto server (this test stops it) and time limits of about a second."""
    pytest.importorskip("moto")
    home = tmp_path / "aws"
    home.mkdir()
    server, env = start_moto(home)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TRAINLEDGER_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("TRAINLEDGER_OBJECT_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("TRAINLEDGER_OBJECT_READ_TIMEOUT", "1")
    monkeypatch.setenv("TRAINLEDGER_OBJECT_ATTEMPTS", "2")
    monkeypatch.setenv("TRAINLEDGER_OBJECT_DEADLINE", "4")
    boto3.client("s3").create_bucket(Bucket="stall")
    try:
        yield server
    finally:
        os.kill(server.pid, signal.SIGCONT)
        stop_moto(server)


def test_a_store_that_stops_answering_fails_the_end_in_bounded_time_and_sync_recovers(
    stalled_store: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    local = Path(staging_dir("s3://stall/runs/r1", interval=0))
    (local / "a.txt").write_bytes(b"one")
    os.kill(stalled_store.pid, signal.SIGSTOP)
    began = time.monotonic()
    with pytest.raises(ObjectStoreError, match="trainledger sync"):
        flush_mirrors()
    assert time.monotonic() - began < 10
    assert [s.state for s in staged_locations()] == ["failed"]
    os.kill(stalled_store.pid, signal.SIGCONT)
    _unsynced_runs_are_shown("s3://stall/runs", ["s3://stall/runs/r1"], tmp_path)
    close_mirrors()  # this process is done with it: its state is then the writer's last word
    done = CliRunner().invoke(cli, ["sync", str(tmp_path / "staging"), "--force"])
    assert done.exit_code == 0, done.output
    assert "synced  s3://stall/runs/r1" in done.output
    assert objects("stall") == {"runs/r1/a.txt": b"one"}
    assert [s.state for s in staged_locations()] == ["synced"]
    _unsynced_runs_are_shown("s3://stall/runs", [], tmp_path)


def _unsynced_runs_are_shown(base: str, urls: list[str], tmp_path: Path) -> None:
    """`trainledger lineage` warns of them, and the UI's status lists them."""
    from fastapi.testclient import TestClient

    from trainledger.server import IndexedRunStore, create_app

    done = CliRunner().invoke(cli, ["lineage", base])
    for url in urls:
        assert f"warning: {url} has files that did not reach the store" in done.output
    assert ("did not reach the store" in done.output) == bool(urls), done.output
    local = tmp_path / "ui-base"
    local.mkdir(exist_ok=True)
    store = IndexedRunStore(local, background_rescan=False, remote=base)
    try:
        status = TestClient(create_app(local, store=store)).get("/api/v1/status").json()
    finally:
        store.close()
    assert status["unsynced"] == urls


def test_growing_files_are_sent_again_by_size_and_age(s3_bucket: str, tmp_path: Path) -> None:
    from trainledger.storage.mirror import GROWTH_BYTES, UploadMirror

    local = tmp_path / "grow"
    local.mkdir()
    big = local / "events.out.tfevents.1"
    big.write_bytes(b"x" * (2 * GROWTH_BYTES))
    mirror = UploadMirror(local, ObjectLocation(s3_bucket, "g"), interval=1.0)
    assert mirror.sync(final=False) == 1
    with open(big, "ab") as fh:
        fh.write(b"more")
    assert mirror.sync(final=False) == 0  # just sent; a 16 MiB file waits 2 x 1 s
    time.sleep(2.1)
    assert mirror.sync(final=False) == 1
    with open(big, "ab") as fh:
        fh.write(b"end")
    assert mirror.sync(final=True) == 1  # the final pass sends everything now


# --- 2. a short run in a real process that exits normally --------------------------------
SHORT_RUN = """
import sys, torch
from torch import nn
from trainledger.callbacks import ModelCheckpoint, SummaryCollector, TrainLineage
from trainledger.run import Model
from trainledger.summary import SummaryRecord

url = sys.argv[1]
torch.manual_seed(0)
net = nn.Linear(4, 2)
model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(3)]
model.fit(1, data, callbacks=[
    SummaryCollector(url, collect_specified_data={"collect_landscape": None}),
    TrainLineage(url), ModelCheckpoint("m", url)])
import boto3
keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(
    Bucket=url.split("/")[2], Prefix="runs/").get("Contents", [])]
print("AFTER_FIT", len(keys))
record = SummaryRecord(url + "/never-closed")  # the exit hook uploads it
record.add_value("scalar", "x", 1.0)
record.record(1)
record.flush()
"""


@pytest.mark.slow
def test_a_short_run_is_in_the_bucket_when_fit_returns_and_after_exit(
    s3_bucket: str, tmp_path: Path
) -> None:
    script = tmp_path / "short.py"
    script.write_text(textwrap.dedent(SHORT_RUN))
    url = f"s3://{s3_bucket}/runs/short"
    done = subprocess.run(
        [sys.executable, str(script), url],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    assert "could not upload" not in done.stderr, done.stderr
    keys = set(objects(s3_bucket))  # read from this process, with boto3
    after_fit = int(done.stdout.split("AFTER_FIT")[1].split()[0])
    staged = tmp_path / "staging" / s3_bucket / "runs" / "short"
    written = {
        str(p.relative_to(staged))
        for p in staged.rglob("*")
        if p.is_file() and p.name != ".trainledger-staging.json" and "never-closed" not in str(p)
    }
    assert after_fit == len(written) and len(written) >= 3, (after_fit, written)
    assert {f"runs/short/{w}" for w in written} <= keys
    assert any(k.startswith("runs/short/never-closed/") for k in keys), keys
    assert any(k.endswith(".ckpt") for k in keys) and any("_lineage" in k for k in keys)


# --- 7. the UI when the store is down -------------------------------------------------------
def test_the_run_page_answers_503_naming_the_store_when_it_is_down(
    stalled_store: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from trainledger.server import IndexedRunStore, create_app
    from trainledger.storage import readable_dir

    monkeypatch.setenv("TRAINLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    url = "s3://stall/team/r0"
    record = SummaryRecord(url)
    record.add_value("scalar", "loss", 1.0)
    record.record(1)
    record.close()  # uploaded now
    from trainledger.callbacks import TrainLineage  # a run needs lineage to be listed
    from trainledger.run import CallbackParams, RunContext

    lineage = TrainLineage(url)
    context = RunContext(CallbackParams(epoch_num=1, cur_step_num=1, batch_num=1))
    lineage.begin(context)
    lineage.end(context)
    flush_mirrors()
    base = "s3://stall/team"
    store = IndexedRunStore(Path(readable_dir(base)), background_rescan=False, remote=base)
    client = TestClient(create_app(store.base, store=store))
    assert client.get("/api/v1/runs/r0").status_code == 200
    os.kill(stalled_store.pid, signal.SIGSTOP)
    try:
        answer = client.get("/api/v1/runs/r0")
    finally:
        os.kill(stalled_store.pid, signal.SIGCONT)
        store.close()
    assert answer.status_code == 503, answer.text
    assert answer.json()["backend"] == "s3" and "object store" in answer.json()["detail"]


_EXIT_AFTER_FAILED_FLUSH = """
import sys, time
from pathlib import Path
from trainledger.errors import ObjectStoreError
from trainledger.storage import flush_mirrors
from trainledger.storage.staging import staging_dir

local = Path(staging_dir("s3://stall/runs/exit", interval=0))
(local / "a.txt").write_bytes(b"one")
print("ready", flush=True)
sys.stdin.readline()  # the test has stopped the store
began = time.monotonic()
try:
    flush_mirrors()  # the end-of-run upload, as the training host calls it
except ObjectStoreError:
    print(f"flush failed after {time.monotonic() - began:.1f} s", flush=True)
"""  # then the script returns: the exit hook's final pass


@pytest.mark.slow
def test_a_stalled_store_delays_exit_by_one_deadline_not_two(
    stalled_store: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """Issue 49 item 5: the end-of-run upload waited TRAINLEDGER_OBJECT_DEADLINE (4 s here),
    then the exit hook waited another whole deadline for the same stalled store."""
    import trainledger

    env = {**os.environ, "PYTHONPATH": str(Path(trainledger.__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _EXIT_AFTER_FAILED_FLUSH],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        os.kill(stalled_store.pid, signal.SIGSTOP)
        began = time.monotonic()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
        waited = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "flush failed after" in out, (out, err)
    assert waited < 1.5 * 4, f"the process took {waited:.1f} s to end: {out} {err}"
    assert "run `trainledger sync` to upload it" in err  # the exit hook still says so
    assert [s.state for s in staged_locations()] == ["failed"]
