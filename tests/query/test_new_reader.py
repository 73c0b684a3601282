"""A new reader of a base written by trainledger's writers (issue 50 items 2 and 3), against a
real S3 server (moto): its first answer comes from the newest snapshot of the change records
and the records after it, with no listing of the prefix; the safety listing runs right after
that answer and finds what a writer that records nothing put there; writers with a few
records each leave snapshots at their final pass."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from tests.query.test_object_copy import ours, upload
from tests.s3_server import objects, server_requests
from trainledger.errors import ObjectStoreError
from trainledger.query import filter_summary_lineage
from trainledger.storage import ObjectLocation, compaction
from trainledger.storage.cache import index_copy_dir, sync_down
from trainledger.storage.copy_sync import listing_due
from trainledger.storage.deferred_listing import wait_listings
from trainledger.storage.mirror import UploadMirror
from trainledger.storage.objects import ObjectStore

SNAPSHOTS = ".trainledger/changes/s/"


def _put_straight(local: Path, url: str) -> None:
    """Every file under ``local`` to ``url`` with boto3 and no change record (``aws s3 cp``)."""
    loc = ObjectLocation.parse(url)
    client = boto3.client("s3")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = f"{loc.key}/{path.relative_to(local).as_posix()}"
        client.put_object(Bucket=loc.bucket, Key=key, Body=path.read_bytes())


def _runs(answer: dict) -> list[str]:
    return sorted(o["summary_dir"] for o in answer["object"])


def test_a_new_reader_answers_from_the_snapshot_then_lists_after_its_answer(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("trainledger.storage.locations.READ_MAX_AGE", 0.0)
    base = tmp_path / "runs"
    for i in range(3):
        ours(base, f"r{i}", range(1, 11))
    url = f"s3://{s3_bucket}/b"
    upload(base, url)  # each object with its record, as a mirror leaves it
    assert compaction.compact(ObjectStore(), s3_bucket, "test.0", every=1)
    _put_straight(ours(tmp_path / "cp", "cp", range(1, 11)).parent, url)  # records nothing
    with server_requests(s3_bucket) as first:
        answer = filter_summary_lineage(url)
        assert wait_listings(60)
    assert _runs(answer) == ["./r0", "./r1", "./r2"]  # answered before the listing
    assert first.count("prefix=b") == 1  # the one listing, after the answer
    assert not listing_due(index_copy_dir(ObjectLocation.parse(url)))
    assert _runs(filter_summary_lineage(url)) == ["./cp", "./r0", "./r1", "./r2"]
    other = tmp_path / "other-copy"  # another machine's new copy learns it from the records
    sync_down(url, local_dir=str(other), defer_listing=True)
    assert (other / "cp").is_dir() and listing_due(str(other))


def test_a_copy_started_from_a_snapshot_leaves_its_listing_to_the_listing_after_the_answer(
    s3_bucket: str, tmp_path: Path
) -> None:
    """Until its listing completes, a copy so started applies records and does not list;
    a plain sync (the deferred listing's, or a process that never defers) lists it."""
    base = tmp_path / "runs"
    ours(base, "r0", range(1, 5))
    url, copy = f"s3://{s3_bucket}/b", str(tmp_path / "copy")
    upload(base, url)
    assert compaction.compact(ObjectStore(), s3_bucket, "test.0", every=1)
    for deferred in (True, True):
        with server_requests(s3_bucket) as seen:
            sync_down(url, local_dir=copy, defer_listing=deferred)
        assert seen.count("prefix=b") == 0 and listing_due(copy), seen.lines
    with server_requests(s3_bucket) as seen:
        sync_down(url, local_dir=copy)
    assert seen.count("prefix=b") == 1 and not listing_due(copy)


def test_a_new_reader_of_a_base_without_snapshots_lists_before_answering(
    s3_bucket: str, tmp_path: Path
) -> None:
    url, copy = f"s3://{s3_bucket}/b", str(tmp_path / "copy")
    _put_straight(ours(tmp_path / "runs", "r0", range(1, 5)).parent, url)
    with server_requests(s3_bucket) as seen:
        sync_down(url, local_dir=copy, defer_listing=True)
    assert seen.count("prefix=b") == 1 and not listing_due(copy)
    assert (Path(copy) / "r0").is_dir()


def test_short_writers_leave_snapshots_at_their_final_pass(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run's mirror writes two records, far fewer than a writer's check interval: the
    check at its final pass is what writes snapshots. A check that is not due reads none."""
    monkeypatch.setattr(compaction, "SNAPSHOT_EVERY", 5)
    snapshots = []
    for i in range(6):
        local = tmp_path / "staged" / f"r{i}"
        local.mkdir(parents=True)
        (local / "lineage").write_bytes(b"L")
        (local / "events").write_bytes(b"E")
        mirror = UploadMirror(local, ObjectLocation(s3_bucket, f"b/r{i}"), interval=0)
        with server_requests(s3_bucket) as seen:
            mirror.close()
        made = sorted(objects(s3_bucket, SNAPSHOTS, records=True))
        if made == snapshots:  # not due: the snapshot (if any) was listed, never read
            assert not [x for x in seen.lines if f"GET /{s3_bucket}/{SNAPSHOTS}" in x]
        snapshots = made
    assert len(snapshots) >= 1
    copy = str(tmp_path / "copy")
    with server_requests(s3_bucket) as seen:
        sync_down(f"s3://{s3_bucket}/b", local_dir=copy, defer_listing=True)
    assert seen.count("prefix=b") == 0
    assert sorted(p.name for p in Path(copy).iterdir() if p.is_dir()) == [f"r{i}" for i in range(6)]


def test_a_listing_after_the_answer_that_fails_is_logged_and_started_again(
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("trainledger.storage.locations.READ_MAX_AGE", 0.0)
    base = tmp_path / "runs"
    ours(base, "r0", range(1, 5))
    url = f"s3://{s3_bucket}/b"
    upload(base, url)
    assert compaction.compact(ObjectStore(), s3_bucket, "test.0", every=1)
    _put_straight(ours(tmp_path / "cp", "cp", range(1, 5)).parent, url)
    real_list = ObjectStore.list

    def unreachable(self: ObjectStore, *args: object, **kwargs: object) -> dict:
        raise ObjectStoreError(f"could not list s3://{s3_bucket}/b: the test's failure")

    monkeypatch.setattr(ObjectStore, "list", unreachable)
    assert _runs(filter_summary_lineage(url)) == ["./r0"]
    assert wait_listings(60)
    assert "the test's failure" in caplog.text
    copy = index_copy_dir(ObjectLocation.parse(url))
    assert listing_due(copy)
    monkeypatch.setattr(ObjectStore, "list", real_list)
    assert _runs(filter_summary_lineage(url)) == ["./r0"]  # (records only: the listing follows)
    assert wait_listings(60) and not listing_due(copy)
    assert _runs(filter_summary_lineage(url)) == ["./cp", "./r0"]
