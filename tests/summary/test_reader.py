"""Reader: results, incremental reads, and robustness against damaged files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from trainledger.errors import PathNotFoundError
from trainledger.storage import frame, read_records
from trainledger.summary.reader import RunReader, iter_events, list_event_files, read_scalars
from trainledger.summary.record import SummaryRecord

NAME = "events.out.tfevents.1700000000.host.1.0"


def _small_file(tmp_path: Path) -> bytes:
    src = tmp_path / "src"
    with SummaryRecord(src) as rec:
        for step in range(6):
            rec.add_scalar("loss", float(step) / 2, step, wall_time=100.0 + step)
        rec.add_text("note", "hi", 6)
        rec.add_scalar("acc", 0.5, 7, wall_time=107.0)
        path = rec.file_path
    return path.read_bytes()


def _boundaries(data: bytes) -> list[int]:
    """End offset of each record."""
    ends, pos = [], 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 8], "little")
        pos += 12 + length + 4
        ends.append(pos)
    return ends


def test_read_scalars_returns_numpy_series(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        for step in range(10):
            rec.add_scalar("loss", step * 0.5, step, wall_time=1000.0 + step)
        rec.add_scalar("lr", 0.1, 3)
    scalars = read_scalars(tmp_path)
    steps, times, values = scalars["loss"]
    assert steps.dtype == np.int64 and times.dtype == np.float64 and values.dtype == np.float64
    assert steps.tolist() == list(range(10))
    assert times.tolist() == [1000.0 + s for s in range(10)]
    assert values.tolist() == [s * 0.5 for s in range(10)]
    assert scalars["lr"][0].tolist() == [3]


def test_iter_events_yields_header_then_events_in_file_order(tmp_path):
    with SummaryRecord(tmp_path, max_file_size=200) as rec:
        for step in range(30):
            rec.add_scalar("x", float(step), step)
    files = rec.file_paths
    assert len(files) > 2
    events = list(iter_events(tmp_path))
    summaries = [e for e in events if e.HasField("summary")]
    assert [e.step for e in summaries] == list(range(30))
    assert sum(e.file_version == "brain.Event:2" for e in events) == len(files)


def test_files_are_ordered_numerically(tmp_path):
    for n in (10, 9, 2):
        (tmp_path / f"events.out.tfevents.1700000000.h.1.{n}").write_bytes(b"")
    (tmp_path / "events.out.tfevents.1600000000.h.1.99").write_bytes(b"")
    assert [p.name.rsplit(".", 2)[-2:] for p in list_event_files(tmp_path)] == [
        ["1", "99"],
        ["1", "2"],
        ["1", "9"],
        ["1", "10"],
    ]


def test_truncated_at_every_offset(tmp_path):
    data = _small_file(tmp_path)
    ends = _boundaries(data)
    full, _ = read_records_bytes(tmp_path, data)
    run = tmp_path / "run"
    run.mkdir()
    path = run / NAME
    for cut in range(len(data) + 1):
        path.write_bytes(data[:cut])
        events = list(iter_events(run))
        intact = sum(end <= cut for end in ends)
        assert [e.SerializeToString() for e in events] == full[:intact], cut
        scalars = read_scalars(run)
        n_loss = len(scalars.get("loss", ([],))[0])
        assert n_loss == max(0, min(6, intact - 1)), cut


def read_records_bytes(tmp_path: Path, data: bytes) -> tuple[list[bytes], int]:
    p = tmp_path / "whole.bin"
    p.write_bytes(data)
    return read_records(p)


def test_flipped_byte_anywhere_loses_only_that_record(tmp_path):
    data = _small_file(tmp_path)
    ends = _boundaries(data)
    starts = [0, *ends[:-1]]
    full, _ = read_records_bytes(tmp_path, data)
    run = tmp_path / "run"
    run.mkdir()
    path = run / NAME
    for pos in range(len(data)):
        damaged = bytearray(data)
        damaged[pos] ^= 0xFF
        path.write_bytes(bytes(damaged))
        hit = next(i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s <= pos < e)
        reader = RunReader(run)
        got = [e.SerializeToString() for e in reader.read_events()]
        assert got[:hit] == full[:hit], pos  # every intact record before the damage
        assert got == full[:hit] + full[hit + 1 :], pos
        assert reader.corrupt >= 1, pos
        read_scalars(run)  # never raises


def test_empty_missing_and_garbage(tmp_path):
    with pytest.raises(PathNotFoundError, match="missing"):  # a mistake is not {}
        read_scalars(tmp_path / "missing")
    assert list(iter_events(tmp_path / "missing")) == []
    (tmp_path / NAME).write_bytes(b"")
    assert read_scalars(tmp_path) == {}
    (tmp_path / NAME).write_bytes(os.urandom(5000))
    reader = RunReader(tmp_path)
    assert reader.read_scalars() == {}


def test_payload_that_is_not_an_event_is_counted(tmp_path):
    (tmp_path / NAME).write_bytes(frame(b"\xff\xff\xff") + frame(b""))
    reader = RunReader(tmp_path)
    events = reader.read_events()
    assert reader.corrupt == 1 and len(events) == 1  # b"" is a valid empty Event


def test_mixed_directory(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_scalar("loss", 1.0, 1)
    (tmp_path / "events.out.events.summary.1700000000.0.host_lineage").write_bytes(frame(b"x"))
    (tmp_path / "notes.txt").write_text("not an event file")
    (tmp_path / "sub.tfevents.dir").mkdir()
    (tmp_path / "events.out.tfevents.1.h.1.0.tl-tmp-12-abcd").write_bytes(b"partial")
    (tmp_path / "events.out.tfevents.2.h.1.0").write_bytes(b"garbage bytes, not records")
    scalars = read_scalars(tmp_path)
    assert list(scalars) == ["loss"] and scalars["loss"][2].tolist() == [1.0]


def test_incremental_reads_return_only_new_data(tmp_path):
    rec = SummaryRecord(tmp_path, max_file_size=400)
    reader = RunReader(tmp_path)
    try:
        rec.add_scalar("x", 1.0, 1)
        rec.flush()
        first = reader.read_scalars()
        assert first["x"][0].tolist() == [1]
        assert reader.read_scalars() == {}
        for step in range(2, 40):
            rec.add_scalar("x", float(step), step)
        rec.flush()
        assert len(rec.file_paths) > 1  # new files are picked up
        second = reader.read_scalars()
        assert second["x"][0].tolist() == list(range(2, 40))
    finally:
        rec.close()


def test_incremental_read_completes_a_truncated_tail(tmp_path):
    data = _small_file(tmp_path)
    ends = _boundaries(data)
    path = tmp_path / "run" / NAME
    path.parent.mkdir()
    cut = ends[2] + 5  # header + 2 scalars complete, third cut short
    path.write_bytes(data[:cut])
    reader = RunReader(path.parent)
    assert reader.read_scalars()["loss"][0].tolist() == [0, 1]
    with open(path, "ab") as fh:
        fh.write(data[cut:])
    rest = reader.read_scalars()
    assert rest["loss"][0].tolist() == [2, 3, 4, 5] and rest["acc"][0].tolist() == [7]
    assert reader.corrupt == 0


def test_reads_torch_summary_writer_and_tf2_tensor_scalars(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path))
    for step in range(3):
        w.add_scalar("torch/loss", step + 0.5, step)
    w.close()
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    events = [
        event_pb2.Event(
            step=s,
            wall_time=1.0,
            summary=summary_pb2.Summary(
                value=[
                    summary_pb2.Summary.Value(
                        tag="tf2/acc",
                        metadata=meta if s == 0 else None,
                        tensor=tensor_pb2.TensorProto(dtype=1, float_val=[s / 10]),
                    )
                ]
            ),
        )
        for s in range(3)
    ]
    (tmp_path / "events.out.tfevents.9999999999.h.1.0").write_bytes(
        b"".join(frame(e.SerializeToString()) for e in events)
    )
    scalars = read_scalars(tmp_path)
    assert scalars["torch/loss"][2].tolist() == [0.5, 1.5, 2.5]
    assert scalars["tf2/acc"][0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(scalars["tf2/acc"][2], [0.0, 0.1, 0.2], rtol=1e-6)


@pytest.mark.parametrize("size", [0, 1, 11, 12, 13])
def test_tiny_files(tmp_path, size):
    (tmp_path / NAME).write_bytes(b"\x00" * size)
    assert read_scalars(tmp_path) == {}


def test_reader_and_record_work_without_torch(tmp_path):
    """The reader (used by the UI and the query side) never imports torch."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from trainledger.summary import SummaryRecord, read_scalars\n"
        f"with SummaryRecord({str(tmp_path)!r}) as r:\n"
        "    r.add_scalar('x', 1.5, 2)\n"
        f"s = read_scalars({str(tmp_path)!r})\n"
        "assert s['x'][2].tolist() == [1.5], s\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_two_writers_of_one_second_are_read_in_the_order_they_started(tmp_path: Path) -> None:
    """Event file names give whole seconds: a failed session and its resume can share one,
    and the resume's process may have the smaller pid (a full run of the suite met it).
    Their first events' wall times order them; TensorBoard's reader, given the same names,
    would read pid order."""
    import time

    from trainledger.summary import SummaryRecord
    from trainledger.summary.reader import list_event_files, read_scalar_sessions

    made = []
    for k, steps in enumerate((range(1, 4), range(4, 7))):
        scratch = tmp_path / f"w{k}"
        with SummaryRecord(scratch) as record:
            for step in steps:
                record.add_scalar("loss", float(step), step)
        made.append(next(p for p in scratch.iterdir() if "tfevents" in p.name))
        time.sleep(0.01)
    run = tmp_path / "run"
    run.mkdir()
    first, resumed = made  # the resume gets the smaller pid
    (run / "events.out.tfevents.1700000000.host.5000.000000").write_bytes(first.read_bytes())
    (run / "events.out.tfevents.1700000000.host.900.000000").write_bytes(resumed.read_bytes())
    assert [p.name.split(".")[5] for p in list_event_files(run)] == ["5000", "900"]
    steps, _, _, sessions = read_scalar_sessions(run, raw=True)["loss"]
    assert [int(s) for s in steps[sessions == 0]] == [1, 2, 3]
    assert [int(s) for s in steps[sessions == 1]] == [4, 5, 6]
