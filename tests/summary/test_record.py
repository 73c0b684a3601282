"""SummaryRecord: staging and recording, files, rollover, disk guard, errors, export."""

from __future__ import annotations

import logging
import shutil
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import torch

from trainledger.errors import DiskSpaceError, SummaryError, SummaryWriteError
from trainledger.storage import read_records
from trainledger.summary import record as record_mod
from trainledger.summary import writer as writer_mod
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.reader import iter_events, read_scalars
from trainledger.summary.record import SummaryRecord

Usage = namedtuple("Usage", "total used free")


def _values(log_dir: Path) -> list[tuple[int, str, str]]:
    """(step, tag, kind) of every summary value written."""
    return [
        (e.step, v.tag, v.WhichOneof("value"))
        for e in iter_events(log_dir)
        for v in e.summary.value
    ]


def test_file_name_and_header(tmp_path):
    log_dir = tmp_path / "new" / "dir"
    with SummaryRecord(log_dir, file_prefix="run", file_suffix="_x") as rec:
        path = rec.file_path
    assert path.parent == log_dir
    prefix, out, tf, ts, *rest = path.name.split(".")
    assert (prefix, out, tf) == ("run", "out", "tfevents") and ts.isdigit()
    assert rest[-1].endswith("_x")
    payloads, corrupt = read_records(path)
    assert corrupt == 0 and pb.Event.FromString(payloads[0]).file_version == "brain.Event:2"


def test_record_writes_staged_values_once(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("scalar", "loss", 2.0)
        rec.add_value("scalar", "loss", 1.0)  # replaces the unrecorded 2.0
        rec.add_value("histogram", "w", torch.ones(4))
        rec.add_value("tensor", "t", np.zeros(2))
        assert rec.record(3) is True
        rec.record(4)  # nothing staged: nothing written
    assert sorted(_values(tmp_path)) == [
        (3, "loss", "simple_value"),
        (3, "t", "tensor"),
        (3, "w", "histo"),
    ]
    assert read_scalars(tmp_path)["loss"][2].tolist() == [1.0]


def test_plugin_filter_drops_other_plugins_for_that_step(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("scalar", "loss", 1.0)
        rec.add_value("tensor", "t", np.zeros(2))
        rec.record(1, plugin_filter=lambda plugin: plugin == "tensor")
        rec.record(2)
    assert _values(tmp_path) == [(1, "t", "tensor")]


def test_values_are_snapshotted_when_added(tmp_path):
    t = torch.zeros(3)
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("tensor", "t", t)
        t += 5
        rec.record(1)
    (event,) = [e for e in iter_events(tmp_path) if e.HasField("summary")]
    assert np.frombuffer(event.summary.value[0].tensor.tensor_content, "<f4").tolist() == [0, 0, 0]


def test_network_structure_written_once_as_a_graph_tensorboard_reads(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    with SummaryRecord(tmp_path, network=net) as rec:
        rec.add_value("scalar", "a", 1.0)
        rec.record(1)
        rec.add_value("scalar", "a", 2.0)
        rec.record(2)
    assert sum(e.HasField("graph_def") for e in iter_events(tmp_path)) == 1
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    nodes = {n.name: n for n in acc.Graph().node}
    weight = nodes["Sequential/Linear[0]/weight"]
    assert weight.op == "Parameter"
    assert [d.size for d in weight.attr["_output_shapes"].list.shape[0].dim] == [3, 2]
    assert nodes["Sequential/BatchNorm1d[1]/running_mean"].op == "Buffer"
    assert "Sequential/Linear[0]/weight" in nodes["Sequential/Linear[0]/Linear"].input


def test_graph_value_must_be_graphdef_bytes(tmp_path):
    with SummaryRecord(tmp_path) as rec, pytest.raises(TypeError, match="serialised GraphDef"):
        rec.add_value("graph", "g", "a text")


@pytest.mark.parametrize(
    "plugin,name,value,exc",
    [
        ("nope", "a", 1.0, ValueError),
        ("scalar", 3, 1.0, TypeError),
        ("scalar", "", 1.0, ValueError),
        ("scalar", "a", np.zeros(3), ValueError),
        ("image", "a", np.zeros((2, 5, 5)), ValueError),
        ("text", "a", 3, TypeError),
        ("histogram", "a", np.array(["x"]), TypeError),
    ],
)
def test_add_value_rejects_bad_input(tmp_path, plugin, name, value, exc):
    with SummaryRecord(tmp_path) as rec:
        with pytest.raises(exc):
            rec.add_value(plugin, name, value)


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        ({"max_file_size": 0}, ValueError),
        ({"max_file_size": True}, TypeError),  # MindSpore's split: the type, then the range
        ({"histogram_bins": 2.0}, TypeError),
        ({"histogram_bins": 0}, ValueError),
        ({"raise_exception": 1}, TypeError),
        ({"file_prefix": "a/b"}, ValueError),
        ({"file_suffix": 3}, TypeError),
        ({"export_options": {"tensor_format": "csv"}}, ValueError),
        ({"export_options": {"other": "npy"}}, ValueError),
        ({"export_options": ["npy"]}, TypeError),
        ({"min_free_bytes": -1}, ValueError),
    ],
)
def test_constructor_rejects_bad_arguments(tmp_path, kwargs, exc):
    with pytest.raises(exc):
        SummaryRecord(tmp_path, **kwargs)
    with pytest.raises(TypeError):
        SummaryRecord(3)  # type: ignore[arg-type]


def test_step_must_be_int_and_closed_record_refuses(tmp_path):
    rec = SummaryRecord(tmp_path)
    with pytest.raises(TypeError):
        rec.record(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rec.add_scalar("a", 1.0, 1.5)  # type: ignore[arg-type]
    rec.record(np.int64(3))
    rec.close()
    rec.close()  # idempotent
    assert rec.closed
    with pytest.raises(SummaryError):
        rec.record(1)
    with pytest.raises(SummaryError):
        rec.add_scalar("a", 1.0, 1)


def test_set_mode(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        assert rec.mode == "train"
        rec.set_mode("eval")
        assert rec.mode == "eval"
        with pytest.raises(ValueError):
            rec.set_mode("predict")


def test_lineage_plugins_are_kept_for_the_lineage_writer(tmp_path):
    seen = []
    with SummaryRecord(tmp_path) as rec:
        rec.lineage_handler = lambda *args: seen.append(args)
        rec.add_value("train_lineage", "train_lineage", {"loss": 0.1})
        rec.add_value("custom_lineage_data", "custom_lineage_data", {"k": 1})
        rec.record(1)
        assert rec.lineage_values == {
            "train_lineage": {"train_lineage": {"loss": 0.1}},
            "custom_lineage_data": {"custom_lineage_data": {"k": 1}},
        }
    assert seen[0] == ("train_lineage", "train_lineage", {"loss": 0.1})
    assert _values(tmp_path) == []  # never in the TensorBoard files


def test_several_records_open_at_once(tmp_path):
    recs = [SummaryRecord(tmp_path / "shared") for _ in range(3)] + [
        SummaryRecord(tmp_path / "other")
    ]
    for i, rec in enumerate(recs):
        rec.add_scalar(f"r{i}", float(i), 1)
    for rec in recs:
        rec.close()
    assert len({rec.file_path for rec in recs}) == 4
    assert sorted(read_scalars(tmp_path / "shared")) == ["r0", "r1", "r2"]
    assert list(read_scalars(tmp_path / "other")) == ["r3"]


def test_flush_drains_and_fsyncs(tmp_path, monkeypatch):
    synced = []
    real_fsync = writer_mod.os.fsync
    monkeypatch.setattr(writer_mod.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    rec = SummaryRecord(tmp_path)
    try:
        for step in range(10):
            rec.add_scalar("x", float(step), step)
        rec.flush()
        assert synced, "flush must fsync"
        assert read_scalars(tmp_path)["x"][0].tolist() == list(range(10))  # visible before close
    finally:
        rec.close()


def test_rollover_keeps_every_file_under_the_limit(tmp_path):
    limit = 256
    with SummaryRecord(tmp_path, max_file_size=limit) as rec:
        for step in range(100):
            rec.add_scalar("loss", float(step), step)
    files = rec.file_paths
    assert len(files) > 5
    for path in files:
        assert path.stat().st_size <= limit
        payloads, _ = read_records(path)
        assert pb.Event.FromString(payloads[0]).file_version == "brain.Event:2"
    assert read_scalars(tmp_path)["loss"][0].tolist() == list(range(100))  # nothing dropped


def test_record_bigger_than_the_limit_is_written_alone(tmp_path):
    with SummaryRecord(tmp_path, max_file_size=200) as rec:
        rec.add_scalar("a", 1.0, 1)
        rec.add_tensor("big", np.zeros(1000), 2)
        rec.add_scalar("a", 2.0, 3)
    assert [v[:2] for v in _values(tmp_path)] == [(1, "a"), (2, "big"), (3, "a")]
    assert len(rec.file_paths) == 3


def test_disk_guard_refuses_at_construction(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_mod.shutil, "disk_usage", lambda p: Usage(10**9, 10**9, 1000))
    with pytest.raises(DiskSpaceError, match="bytes free"):
        SummaryRecord(tmp_path)


def test_disk_guard_raises_on_flush_before_the_disk_fills(tmp_path, monkeypatch):
    free = {"bytes": 10**12}
    monkeypatch.setattr(writer_mod.shutil, "disk_usage", lambda p: Usage(0, 0, free["bytes"]))
    rec = SummaryRecord(tmp_path, raise_exception=True, min_free_bytes=10**6)
    rec.add_tensor("big", np.zeros(300_000), 1)  # > the re-check interval: checked at once
    rec.flush()
    free["bytes"] = 10**6 + 100  # the next big write would cross the margin
    rec.add_tensor("big", np.zeros(300_000), 2)
    with pytest.raises(DiskSpaceError, match="margin"):
        rec.flush()
    rec.flush()  # raised once only
    free["bytes"] = 10**12
    rec.close()
    assert [s for s, _, _ in _values(tmp_path)] == [1]  # the refused write is not half-written


def test_disk_guard_logs_without_raise_exception(tmp_path, monkeypatch, caplog):
    free = {"bytes": 10**12}
    monkeypatch.setattr(writer_mod.shutil, "disk_usage", lambda p: Usage(0, 0, free["bytes"]))
    rec = SummaryRecord(tmp_path, min_free_bytes=10**6)
    free["bytes"] = 10
    with caplog.at_level(logging.ERROR, logger="trainledger.summary.writer"):
        rec.add_tensor("big", np.zeros(300_000), 1)
        rec.flush()  # logged, not raised
        rec.close()
    assert any("margin" in r.getMessage() for r in caplog.records)


def test_writer_thread_error_raised_once_as_summary_write_error(tmp_path, monkeypatch):
    rec = SummaryRecord(tmp_path, raise_exception=True)

    def broken(self, payloads):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_mod.EventFileWriter, "write", broken)
    rec.add_scalar("x", 1.0, 1)
    with pytest.raises(SummaryWriteError, match="No space left") as info:
        rec.flush()
    assert isinstance(info.value.__cause__, OSError)
    rec.flush()
    monkeypatch.undo()
    rec.add_scalar("x", 2.0, 2)
    rec.close()
    assert read_scalars(tmp_path)["x"][2].tolist() == [2.0]  # later writes still work


def test_pending_error_surfaces_on_next_record(tmp_path, monkeypatch):
    monkeypatch.setattr(record_mod, "_BATCH_EVENTS", 1)  # hand every event over at once
    rec = SummaryRecord(tmp_path, raise_exception=True)
    monkeypatch.setattr(
        writer_mod.EventFileWriter, "write", lambda self, p: (_ for _ in ()).throw(OSError("boom"))
    )
    rec.add_value("scalar", "x", 1.0)
    rec.record(1)
    for _ in range(1000):  # wait (bounded) for the thread to fail
        if rec._writer.pending_error() is not None:
            break
        time.sleep(0.005)
    with pytest.raises(SummaryWriteError):
        rec.record(2)
    monkeypatch.undo()
    rec.close()


def test_export_tensors_as_npy(tmp_path):
    with SummaryRecord(tmp_path, export_options={"tensor_format": "npy"}) as rec:
        rec.add_value("tensor", "layer/out", torch.arange(6.0).reshape(2, 3))
        rec.add_value("scalar", "loss", 1.0)
        rec.record(7)
        rec.add_tensor("x", np.array([1, 2], dtype=np.int64), 8)
    export_dir = rec.export_dir
    assert export_dir is not None and export_dir.parent == tmp_path
    assert export_dir.name.startswith("export_")
    files = sorted(p.name for p in (export_dir / "tensor").iterdir())
    assert files == ["layer%2Fout_7.npy", "x_8.npy"]
    np.testing.assert_array_equal(
        np.load(export_dir / "tensor" / "layer%2Fout_7.npy", allow_pickle=False),
        np.arange(6.0).reshape(2, 3),
    )


def test_no_export_without_options(tmp_path):
    with SummaryRecord(tmp_path, export_options={"tensor_format": None}) as rec:
        rec.add_tensor("x", np.zeros(2), 1)
    assert rec.export_dir is None
    assert not list(tmp_path.glob("export_*"))


def test_real_disk_usage_is_checked(tmp_path):
    # The guard uses the real filesystem by default; a tiny margin passes.
    with SummaryRecord(tmp_path, min_free_bytes=1) as rec:
        rec.add_scalar("x", 1.0, 1)
    assert shutil.disk_usage(tmp_path).free > 1


def test_a_record_never_closed_is_written_at_exit(tmp_path):
    import subprocess
    import sys

    code = (
        "from trainledger.summary import SummaryRecord\n"
        f"rec = SummaryRecord({str(tmp_path)!r})\n"
        "for step in range(10):\n"
        "    rec.add_scalar('x', float(step), step)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert read_scalars(tmp_path)["x"][0].tolist() == list(range(10))


def test_a_dropped_record_is_written_on_garbage_collection(tmp_path):
    import gc

    rec = SummaryRecord(tmp_path)
    rec.add_scalar("x", 1.0, 1)
    del rec
    gc.collect()
    assert read_scalars(tmp_path)["x"][0].tolist() == [1]


def test_flush_without_fsync_makes_data_visible(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(writer_mod.os, "fsync", lambda fd: synced.append(fd))
    with SummaryRecord(tmp_path) as rec:
        rec.add_scalar("x", 1.0, 1)
        rec.flush(fsync=False)
        assert read_scalars(tmp_path)["x"][0].tolist() == [1]
        assert synced == []
    assert synced  # close() fsyncs


def test_unusable_log_dir_is_a_summary_write_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(SummaryWriteError, match="cannot create an event file") as info:
        SummaryRecord(blocker / "run")
    assert isinstance(info.value.__cause__, OSError)


def test_record_scalar_rows_keeps_order_and_validates(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_scalar("loss", 9.0, 0, wall_time=1.0)
        rec.record_scalar_rows(("loss", "lr"), [(1, 2.0, 0.5, 0.1), (2, 3.0, 0.25, 0.1)])
        rec.add_scalar("loss", 0.125, 3, wall_time=4.0)
        with pytest.raises(ValueError, match="rows"):
            rec.record_scalar_rows(("loss",), [(1, 2.0)])
        with pytest.raises(ValueError):
            rec.record_scalar_rows(("",), [(1, 2.0, 3.0)])
        with pytest.raises(TypeError, match="real numbers"):
            rec.record_scalar_rows(("x",), [(1, 2.0, "3")])
    steps, times, values = read_scalars(tmp_path)["loss"]
    assert steps.tolist() == [0, 1, 2, 3] and times.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert values.tolist() == [9.0, 0.5, 0.25, 0.125]
    assert read_scalars(tmp_path)["lr"][0].tolist() == [1, 2]


def test_record_scalar_rows_rejects_bools_ragged_rows_and_non_int_steps(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        good = [(1, 2.0, 0.5), (2, 3.0, 0.25)]
        for bad, error in (
            ([*good, (3, 4.0, True)], TypeError),  # a bool is not a scalar value
            ([*good, (True, 4.0, 0.5)], ValueError),  # nor a step
            ([*good, (3.0, 4.0, 0.5)], ValueError),
            ([*good, (3, 4.0)], ValueError),  # ragged
            ([*good, 3], ValueError),  # not a row
        ):
            with pytest.raises(error, match="record_scalar_rows"):
                rec.record_scalar_rows(("loss",), bad)
        rec.record_scalar_rows(("loss",), [(3, 4.0, np.float32(0.5)), (4, 5.0, 2)])
    steps, _, values = read_scalars(tmp_path)["loss"]
    assert steps.tolist() == [3, 4] and values.tolist() == [0.5, 2.0]  # nothing of the bad


def test_record_scalar_rows_roll_over_between_records(tmp_path):
    """Rows are written as chunks of framed records; rollover still splits between records."""
    limit = 300
    with SummaryRecord(tmp_path, max_file_size=limit) as rec:
        rec.record_scalar_rows(
            ("loss", "lr"), [(step, 1.0 + step, step / 2, 0.1) for step in range(1, 200)]
        )
    assert len(rec.file_paths) > 10
    for path in rec.file_paths:
        assert path.stat().st_size <= limit
        payloads, corrupt = read_records(path)
        assert corrupt == 0
        assert pb.Event.FromString(payloads[0]).file_version == "brain.Event:2"
    steps, _, values = read_scalars(tmp_path)["loss"]
    assert steps.tolist() == list(range(1, 200))
    assert values.tolist() == [step / 2 for step in range(1, 200)]


def test_record_scalars(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("tensor", "t", np.zeros(1))
        rec.record_scalars(5, [("a", 1.0), ("b", np.float32(2.0))])
        assert rec.staged == 1  # staged values are left alone
        rec.record(6)
    assert sorted(_values(tmp_path)) == [
        (5, "a", "simple_value"),
        (5, "b", "simple_value"),
        (6, "t", "tensor"),
    ]


def test_hand_over_scalar_rows_writes_prebuilt_rows_in_order(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_scalar("loss", 9.0, 0, wall_time=1.0)
        rec.hand_over_scalar_rows(("loss", "lr"), [(1, 2.0, 0.5, 0.1), (2, 3.0, 0.25, 0.05)])
        rec.add_scalar("loss", 0.125, 3, wall_time=4.0)
    steps, times, values = read_scalars(tmp_path)["loss"]
    assert steps.tolist() == [0, 1, 2, 3] and times.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert values.tolist() == [9.0, 0.5, 0.25, 0.125]
    assert read_scalars(tmp_path)["lr"][2].tolist() == pytest.approx([0.1, 0.05])
    with pytest.raises(SummaryError):
        rec.hand_over_scalar_rows(("loss",), [(4, 5.0, 1.0)])  # closed: still refused
