"""Object storage against a real S3 server (moto in server mode): locations, the upload
mirror, the download cache, a whole training run through the store, and killed writers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.s3_server import objects
from trainledger.callbacks import EvalLineage, ModelCheckpoint, SummaryCollector, TrainLineage
from trainledger.errors import ObjectStoreError, UnsupportedLocationError
from trainledger.query import filter_summary_lineage, get_summary_lineage
from trainledger.run import Model
from trainledger.storage.cache import sync_down
from trainledger.storage.mirror import UploadMirror
from trainledger.storage.objects import (
    ObjectLocation,
    ObjectStore,
    check_location,
    is_object_url,
)
from trainledger.storage.staging import close_mirrors
from trainledger.summary import SummaryRecord, read_scalars

REPO = Path(__file__).resolve().parents[2]


# --- locations (no server needed) -----------------------------------------------------------
def test_locations_parse_and_unsupported_schemes_are_refused() -> None:
    loc = ObjectLocation.parse("s3://bucket/runs//r0/")
    assert (loc.bucket, loc.key, loc.url) == ("bucket", "runs/r0", "s3://bucket/runs/r0")
    assert loc.child("a/b.ckpt").url == "s3://bucket/runs/r0/a/b.ckpt"
    assert is_object_url("s3://b/k") and not is_object_url("runs/s3:/x")
    check_location("runs/a")  # a local path passes
    check_location("s3://b/k")
    with pytest.raises(UnsupportedLocationError, match=r"'gs'.*expected a local path or.*s3://"):
        check_location("gs://bucket/runs/r0", "summary_dir")
    with pytest.raises(UnsupportedLocationError, match="'..' are not allowed"):
        ObjectLocation.parse("s3://bucket/a/../b")
    with pytest.raises(UnsupportedLocationError, match="s3://BUCKET"):
        ObjectLocation.parse("s3:///key")


# --- the upload mirror --------------------------------------------------------------------
def test_upload_mirror_sends_changed_files_and_skips_temp_files(
    s3_bucket: str, tmp_path: Path
) -> None:
    local = tmp_path / "run"
    (local / "ckpt").mkdir(parents=True)
    (local / "a.txt").write_bytes(b"one")
    (local / "ckpt" / "m-1_2.ckpt").write_bytes(b"w" * 1000)
    (local / "m-1_3.ckpt.tl-tmp-123-abcd").write_bytes(b"half")  # a save in progress
    (local / "x.lock").write_bytes(b"")
    (local / ".trainledger").mkdir()
    (local / ".trainledger" / "index.sqlite").write_bytes(b"index")
    mirror = UploadMirror(local, ObjectLocation(s3_bucket, "runs/r0"), interval=0)
    assert mirror.sync() == 2
    assert objects(s3_bucket) == {
        "runs/r0/a.txt": b"one",
        "runs/r0/ckpt/m-1_2.ckpt": b"w" * 1000,
    }
    assert mirror.sync() == 0  # nothing changed, nothing sent
    time.sleep(0.01)
    (local / "a.txt").write_bytes(b"one two")
    (local / "ckpt" / "m-1_2.ckpt").unlink()  # gone locally, no writer asked: kept remotely
    assert mirror.sync() == 1
    assert objects(s3_bucket) == {
        "runs/r0/a.txt": b"one two",
        "runs/r0/ckpt/m-1_2.ckpt": b"w" * 1000,
    }
    mirror.request_delete("ckpt/m-1_2.ckpt")  # what retention does (remove_written)
    assert mirror.sync() == 1
    assert objects(s3_bucket) == {"runs/r0/a.txt": b"one two"}


def test_a_new_mirror_sends_what_a_killed_one_left_and_not_the_rest(
    s3_bucket: str, tmp_path: Path
) -> None:
    local = tmp_path / "run"
    local.mkdir()
    (local / "sent").write_bytes(b"already up")
    first = UploadMirror(local, ObjectLocation(s3_bucket, "r"), interval=0)
    first.sync()
    (local / "late").write_bytes(b"written after the last pass, then the writer died")
    store = ObjectStore()
    sent: list[str] = []
    real_put = store.put_file

    def counting_put(path: str, loc: ObjectLocation) -> None:
        sent.append(loc.key)
        real_put(path, loc)

    store.put_file = counting_put  # type: ignore[method-assign]
    UploadMirror(local, ObjectLocation(s3_bucket, "r"), store, interval=0).sync()
    assert sent == ["r/late"]
    assert set(objects(s3_bucket)) == {"r/sent", "r/late"}


# --- the download cache ---------------------------------------------------------------------
def test_sync_down_copies_only_changed_objects_and_forgets_deleted_ones(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINLEDGER_OBJECT_SAFETY_LISTING", "1e-9")  # (raw puts: listed)
    import boto3

    s3 = boto3.client("s3")
    for key, body in {"base/r0/a_lineage": b"L0", "base/r1/b_lineage": b"L1"}.items():
        s3.put_object(Bucket=s3_bucket, Key=key, Body=body)
    s3.put_object(Bucket=s3_bucket, Key="base/r0/big.ckpt", Body=b"W" * 100)
    store = ObjectStore()
    fetched: list[str] = []
    real_get = store.start_get

    def counting_get(loc: ObjectLocation, local: str) -> Future[None]:
        fetched.append(loc.key)
        return real_get(loc, local)

    store.start_get = counting_get  # type: ignore[method-assign]
    url = f"s3://{s3_bucket}/base"

    def want(rel: str) -> bool:
        return not rel.endswith(".ckpt")

    local = Path(sync_down(url, want, store=store))
    assert local == tmp_path / "cache" / s3_bucket / "base"
    assert (local / "r0" / "a_lineage").read_bytes() == b"L0"
    assert not (local / "r0" / "big.ckpt").exists()
    assert sorted(fetched) == ["base/r0/a_lineage", "base/r1/b_lineage"]
    fetched.clear()
    s3.put_object(Bucket=s3_bucket, Key="base/r1/b_lineage", Body=b"L1 longer")
    s3.delete_object(Bucket=s3_bucket, Key="base/r0/a_lineage")
    assert sync_down(url, want, store=store) == str(local)
    assert fetched == ["base/r1/b_lineage"]
    assert (local / "r1" / "b_lineage").read_bytes() == b"L1 longer"
    assert not (local / "r0" / "a_lineage").exists()
    s3.put_object(Bucket=s3_bucket, Key="base/r2/c_lineage", Body=b"new")
    sync_down(url, want, store=store, max_age=60)  # a young cache is not listed again
    assert not (local / "r2").exists()


def test_a_sync_that_dies_half_way_leaves_a_copy_the_next_sync_lists_again(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A young copy is used without a listing, but only one whose sync finished: a sync that
    failed (or was killed) half-way leaves the copy old, so the next one lists the store."""
    monkeypatch.setenv("TRAINLEDGER_OBJECT_SAFETY_LISTING", "1e-9")  # (raw puts: listed)
    import boto3

    s3 = boto3.client("s3")
    s3.put_object(Bucket=s3_bucket, Key="b/r0/a_lineage", Body=b"L0")
    url, local = f"s3://{s3_bucket}/b", str(tmp_path / "copy")
    sync_down(url, local_dir=local)
    for key in ("b/r1/b_lineage", "b/r2/c_lineage"):
        s3.put_object(Bucket=s3_bucket, Key=key, Body=b"new")
    store = ObjectStore()
    real_get = store.start_get

    def failing_get(loc: ObjectLocation, path: str) -> Future[None]:
        if loc.key.endswith("c_lineage"):
            failed: Future[None] = Future()
            failed.set_exception(ObjectStoreError(f"could not download {loc.url}: the failure"))
            return failed
        return real_get(loc, path)

    store.start_get = failing_get  # type: ignore[method-assign]
    with pytest.raises(ObjectStoreError):
        sync_down(url, local_dir=local, store=store)
    assert Path(local, "r1", "b_lineage").exists() and not Path(local, "r2").exists()
    sync_down(url, local_dir=local, max_age=60)  # listed again, though younger than 60 s
    assert Path(local, "r2", "c_lineage").read_bytes() == b"new"


# --- a whole run through the store --------------------------------------------------------
def _train(run_dir: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model = Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy"}
    )
    callbacks = [
        SummaryCollector(
            run_dir, collect_freq=1, collect_specified_data={"collect_landscape": None}
        ),
        TrainLineage(run_dir, user_defined_info={"tag": "s3"}),
        EvalLineage(run_dir),
        ModelCheckpoint(prefix="m", directory=run_dir),
    ]
    model.fit(2, data, data, callbacks=callbacks)


def test_a_run_written_to_an_s3_url_reads_back_the_same(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"s3://{s3_bucket}/team/runs/r0"
    _train(url)  # every writer takes the URL itself
    close_mirrors()  # what interpreter exit does
    _train(str(tmp_path / "local"))  # the same run, written locally
    assert not (tmp_path / "s3:").exists()  # never a local folder named after the scheme
    keys = set(objects(s3_bucket))
    assert not any(".tl-tmp-" in k for k in keys), keys
    remote = get_summary_lineage(url)
    local = get_summary_lineage(str(tmp_path / "local"))
    assert remote["summary_dir"] == url
    for key in ("metric", "hyper_parameters", "user_defined", "train_dataset"):
        assert remote[key] == local[key], key
    assert remote["run"]["status"] == "finished"
    model = json.loads(remote["model"]["path"])["ckpt"]  # the checkpoint, by its URL
    assert model.startswith(f"s3://{s3_bucket}/team/runs/r0/m-2_")
    assert model.split("/", 3)[3] in keys
    found = filter_summary_lineage(f"s3://{s3_bucket}/team/runs")
    assert [r["summary_dir"] for r in found["object"]] == ["./r0"]
    assert read_scalars(sync_down(url))["loss/auto"][0].size > 0  # summaries went up too


@pytest.mark.parametrize(
    "make",
    [
        lambda url: TrainLineage(url),
        lambda url: EvalLineage(url),
        lambda url: SummaryRecord(url),
        lambda url: SummaryCollector(url),
        lambda url: ModelCheckpoint(directory=url),
        lambda url: get_summary_lineage(url),
        lambda url: filter_summary_lineage(url),
    ],
    ids=[
        "TrainLineage",
        "EvalLineage",
        "SummaryRecord",
        "SummaryCollector",
        "ModelCheckpoint",
        "get_summary_lineage",
        "filter_summary_lineage",
    ],
)
def test_every_entry_point_refuses_an_unsupported_scheme(
    make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedLocationError, match="'gs'"):
        make("gs://bucket/runs/r0")
    assert list(tmp_path.iterdir()) == []  # nothing written locally


def test_the_cli_reads_an_s3_base_and_refuses_other_schemes(s3_bucket: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trainledger.cli import cli

    _train(f"s3://{s3_bucket}/base/r0")
    close_mirrors()
    runner = CliRunner()
    done = runner.invoke(cli, ["lineage", f"s3://{s3_bucket}/base", "--format", "json"])
    assert done.exit_code == 0, done.output
    rows = json.loads(done.output)
    assert rows["count"] == 1 and rows["object"][0]["summary_dir"] == "./r0"
    done = runner.invoke(cli, ["lineage", "gs://bucket/base"])
    assert done.exit_code != 0 and "'gs'" in done.output


# --- killed writers -----------------------------------------------------------------------
_UPLOAD = textwrap.dedent(
    """
    import sys
    from trainledger.storage import objects
    objects.MULTIPART_CHUNK = 5 * 2**20  # S3's smallest part: many parts, a slow upload
    store = objects.ObjectStore()
    store.put_file(sys.argv[1], objects.ObjectLocation.parse(sys.argv[2]))
    """
)


@pytest.mark.slow
def test_a_writer_killed_mid_upload_leaves_no_partial_object(
    s3_bucket: str, tmp_path: Path
) -> None:
    import boto3

    big = tmp_path / "m-3_300.ckpt"
    big.write_bytes(os.urandom(64 * 2**20))
    url = f"s3://{s3_bucket}/runs/r0/m-3_300.ckpt"
    proc = subprocess.Popen([sys.executable, "-c", _UPLOAD, str(big), url], cwd=REPO)
    s3 = boto3.client("s3")
    deadline = time.monotonic() + 60
    try:
        while not s3.list_multipart_uploads(Bucket=s3_bucket).get("Uploads"):
            assert proc.poll() is None, "the upload ended before it could be killed"
            assert time.monotonic() < deadline, "no multipart upload started"
            time.sleep(0.02)
        time.sleep(0.3)  # some parts are up
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert s3.list_multipart_uploads(Bucket=s3_bucket).get("Uploads")  # it was under way
    assert objects(s3_bucket) == {}  # and nothing is visible under any name
    ObjectStore().put_file(str(big), ObjectLocation.parse(url))  # a retry completes it
    assert objects(s3_bucket)["runs/r0/m-3_300.ckpt"] == big.read_bytes()


def test_the_ui_lists_the_checkpoints_of_a_run_in_the_store(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI reads an s3:// base through a copy without checkpoints; its checkpoint table
    lists them from the store (files and a sharded directory), each once."""
    from trainledger.checkpoint import save_sharded
    from trainledger.server import IndexedRunStore

    monkeypatch.chdir(tmp_path)
    base = f"s3://{s3_bucket}/team/runs"
    _train(f"{base}/r0")
    close_mirrors()
    net = nn.Linear(3, 2)
    sharded = save_sharded(tmp_path / "m-9_1.ckpt", net, torch.optim.SGD(net.parameters(), 0.1))
    store_client = boto3_client()
    for part in sharded.iterdir():
        store_client.upload_file(str(part), s3_bucket, f"team/runs/r0/m-9_1.ckpt/{part.name}")
    keys = objects(s3_bucket, "team/runs/r0/")
    from trainledger.storage import readable_dir  # what `trainledger ui s3://...` reads

    store = IndexedRunStore(Path(readable_dir(base)), background_rescan=False, remote=base)
    try:
        rows = store.checkpoints("r0")
    finally:
        store.close()
    names = [r["name"] for r in rows]
    files = sorted(k.split("/", 3)[3] for k in keys if k.endswith(".ckpt"))
    assert sorted(n for n in names if n != "m-9_1.ckpt") == files and len(files) >= 2
    assert len(names) == len(set(names)), repr(names)  # a recorded checkpoint is not listed twice
    (shard_row,) = [r for r in rows if r["name"] == "m-9_1.ckpt"]
    assert shard_row["size"] == sum(len(v) for k, v in keys.items() if "/m-9_1.ckpt/" in k)
    assert (shard_row["epoch"], shard_row["step_in_epoch"]) == (9, 1)  # (no lineage: no step)
    for row in rows:
        if row["name"] in files:
            assert row["size"] == len(keys[f"team/runs/r0/{row['name']}"]) and row["time"]


def boto3_client() -> object:
    import boto3

    return boto3.client("s3")
