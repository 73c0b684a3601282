"""The series sidecar: ``SummaryRecord`` keeps each tag's statistics as it writes, and the
index's first read of a run takes them instead of reading its event files, giving exactly
what a full read gives; when a sidecar cannot be trusted the files are read."""

from __future__ import annotations

import json
import math
import shutil
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator, io_wrapper

from tests.conftest import GOLDEN
from trainledger.errors import DiskSpaceError
from trainledger.query.series_index import read_series_state
from trainledger.storage import frame, is_series_sidecar_name
from trainledger.summary import SummaryRecord, sidecar_state
from trainledger.summary.proto import summary_pb2 as pb

MINDSPORE_RUN = GOLDEN / "mindspore-runs" / "adam_lr001"


def sidecars(run: Path) -> list[Path]:
    return sorted(p for p in run.iterdir() if is_series_sidecar_name(p.name))


def write_everything(run: Path, **kwargs: Any) -> None:
    """Every way a record writes scalars: add_scalar, add_value + record, record_scalars,
    scalar rows; NaN, infinities, a value beyond float32, repeated steps; rolled-over files."""
    rng = np.random.default_rng(7)
    with SummaryRecord(run, max_file_size=3000, **kwargs) as record:
        for step in range(200):
            value = float(rng.normal())
            record.add_scalar("loss", float("nan") if step == 40 else value, step)
            if step % 7 == 0:
                record.add_value("scalar", "lr", 0.1 / (1 + step))
                record.add_value("histogram", "w", rng.normal(size=8))
                record.record(step)
            if step % 50 == 0:
                record.record_scalars(step, [("loss", value - 1.0), ("inf", math.inf)])
        rows = [
            (s, time.time(), float(s), 1e39 if s == 230 else -float(s)) for s in range(200, 260)
        ]
        record.record_scalar_rows(("rows/a", "rows/b"), rows)
        record.add_scalar("loss", 5.0, 10)  # a repeated (earlier) step keeps both points


def full_read(run: Path) -> Any:
    return read_series_state(str(run), sidecars=False)


def test_the_sidecar_gives_what_a_full_read_gives_and_no_point_is_read(
    tmp_path: Path, decoded_points: list[int]
) -> None:
    write_everything(tmp_path)
    assert len(sidecars(tmp_path)) == 1
    assert len(list(tmp_path.glob("*tfevents*"))) > 3  # rolled over
    expected = full_read(tmp_path)
    assert set(expected.tags) == {"loss", "lr", "inf", "rows/a", "rows/b"}
    assert expected.tags["loss"].nonfinite_step == 40
    assert expected.tags["rows/b"].max is None or expected.tags["rows/b"].max <= 0
    assert expected.tags["inf"].min is None and expected.tags["inf"].last is None
    counts = decoded_points
    counts.clear()
    got = read_series_state(str(tmp_path))
    assert got.tags == expected.tags
    assert got.positions == expected.positions
    assert sum(counts) == 0  # every statistic came from the sidecar


def test_points_written_after_the_sidecar_are_read_from_its_sizes(
    tmp_path: Path, decoded_points: list[int]
) -> None:
    record = SummaryRecord(tmp_path)
    for step in range(50):
        record.add_scalar("loss", 1.0 / (step + 1), step)
    record.flush()
    (sidecar,) = sidecars(tmp_path)
    older = sidecar.read_bytes()
    for step in range(50, 80):
        record.add_scalar("loss", -1.0 * step, step)
    record.close()
    sidecar.write_bytes(older)  # as if the writer died before its next flush
    expected = full_read(tmp_path)
    counts = decoded_points
    counts.clear()
    assert read_series_state(str(tmp_path)).tags == expected.tags
    assert sum(counts) == 30
    assert expected.tags["loss"].min == -79.0 and expected.tags["loss"].count == 80


def test_a_resumed_writer_whose_restart_drops_points_is_read_in_full(
    tmp_path: Path, decoded_points: list[int]
) -> None:
    with SummaryRecord(tmp_path) as first:
        for step in range(30):
            first.add_scalar("loss", float(step), step)
    with SummaryRecord(tmp_path) as second:
        second.mark_resumed()
        for step in range(20, 40):
            second.add_scalar("loss", 100.0 + step, step)
    assert len(sidecars(tmp_path)) == 2
    assert sidecar_state(str(tmp_path)) is None  # step 20 <= the first writer's top step
    assert read_series_state(str(tmp_path)).tags == full_read(tmp_path).tags

    third = tmp_path / "later"
    with SummaryRecord(third) as first:
        first.add_scalar("loss", 1.0, 0)
    with SummaryRecord(third) as second:
        second.mark_resumed()
        second.add_scalar("loss", 2.0, 5)  # after every earlier step: nothing dropped
    expected = full_read(third)
    counts = decoded_points
    counts.clear()
    assert read_series_state(str(third)).tags == expected.tags
    assert sum(counts) == 0


def test_a_failed_write_removes_the_sidecar(tmp_path: Path) -> None:
    record = SummaryRecord(tmp_path, raise_exception=True)
    record.add_scalar("loss", 1.0, 0)
    record.flush()
    assert sidecars(tmp_path)
    writer = record._writer.file_writer
    writer.min_free_bytes = writer._unchecked = 1 << 62  # the disk is now "full", checked now
    record.add_scalar("loss", 2.0, 1)
    with pytest.raises(DiskSpaceError):
        record.flush()
    assert sidecars(tmp_path) == []
    record.close()  # (the error was raised once)
    assert sidecars(tmp_path) == []
    assert read_series_state(str(tmp_path)).tags == full_read(tmp_path).tags


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "torn",
        "a value changed",
        "another format",
        "a file that is gone",
        "a foreign file first",
        "_MS file",
    ],
)
def test_a_sidecar_that_cannot_be_trusted_is_ignored(
    tmp_path: Path, decoded_points: list[int], damage: str
) -> None:
    with SummaryRecord(tmp_path) as record:
        for step in range(20):
            record.add_scalar("loss", float(step), step)
    (sidecar,) = sidecars(tmp_path)
    text, _, crc = sidecar.read_bytes().rpartition(b"\n")
    data = json.loads(text)

    def rewrite(data: dict[str, Any]) -> None:  # (a valid CRC: only the content is wrong)
        body = json.dumps(data).encode()
        sidecar.write_bytes(body + b"\n%08x" % zlib.crc32(body))

    if damage == "garbage":
        sidecar.write_bytes(b"{not json")
    elif damage == "another format":
        rewrite({**data, "format": "something/2"})
    elif damage == "a file that is gone":
        data["files"].append(["events.out.tfevents.1.host.1.000009", 10])
        rewrite(data)
    elif damage == "torn":  # a crash or a reader in the middle of a write
        sidecar.write_bytes(text[: len(text) // 2] + b"\n" + crc)
    elif damage == "a value changed":
        sidecar.write_bytes(text.replace(b"19", b"91") + b"\n" + crc)
    elif damage == "a foreign file first":  # TensorBoard's own writer, read before ours
        event = pb.Event(
            step=3, summary=pb.Summary(value=[pb.Summary.Value(tag="x", simple_value=7.0)])
        )
        (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(frame(event.SerializeToString()))
    else:  # a file MindSpore 2.10 wrote: MindInsight's rule needs its steps
        shutil.copy(next(MINDSPORE_RUN.glob("*_MS")), tmp_path)
    assert sidecar_state(str(tmp_path)) is None
    expected = full_read(tmp_path)
    counts = decoded_points
    counts.clear()
    assert read_series_state(str(tmp_path)).tags == expected.tags
    assert sum(counts) >= sum(s.count for s in expected.tags.values())  # a full read


def test_tensorboard_does_not_take_the_sidecar_for_an_event_file(tmp_path: Path) -> None:
    write_everything(tmp_path)
    (sidecar,) = sidecars(tmp_path)
    assert not io_wrapper.IsSummaryEventsFile(str(sidecar))
    accumulator = event_accumulator.EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert len(accumulator.Scalars("lr")) == full_read(tmp_path).tags["lr"].count
