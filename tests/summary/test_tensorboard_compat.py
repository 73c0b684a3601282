"""What we write is read back by TensorBoard's own reader, and a small file is byte-stable."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.compat.proto import event_pb2, summary_pb2

from trainledger.storage import read_records
from trainledger.summary import writer as writer_mod
from trainledger.summary.record import SummaryRecord

GOLDEN = Path(__file__).parent / "golden" / "small.tfevents.bin"
T0 = 1_700_000_000.0


def _accumulate(log_dir: Path) -> ea.EventAccumulator:
    acc = ea.EventAccumulator(
        str(log_dir),
        size_guidance={ea.SCALARS: 0, ea.TENSORS: 0, ea.IMAGES: 0, ea.HISTOGRAMS: 0},
    )
    acc.Reload()
    return acc


def test_tensorboard_reads_scalars_histograms_images_text(tmp_path):
    rng = np.random.default_rng(0)
    weights = rng.normal(size=500)
    img = rng.integers(0, 256, size=(3, 5, 6), dtype=np.uint8)
    with SummaryRecord(tmp_path) as rec:
        for step in range(1, 21):
            rec.add_scalar("loss", 1.0 / step, step)
        rec.add_value("scalar", "acc", 0.75)
        rec.add_value("histogram", "fc.weight", weights)
        rec.add_value("image", "input", img)
        rec.add_value("text", "notes", "first run")
        rec.record(21)
        rec.add_scalar("acc", 0.8, 22)
    acc = _accumulate(tmp_path)
    tags = acc.Tags()
    assert set(tags["scalars"]) == {"loss", "acc"}
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(1, 21))
    np.testing.assert_allclose([e.value for e in loss], [1.0 / s for s in range(1, 21)], rtol=1e-6)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("acc")] == [(21, 0.75), (22, 0.8)]
    (histo,) = acc.Histograms("fc.weight")
    assert histo.step == 21 and histo.histogram_value.num == 500
    assert histo.histogram_value.min == pytest.approx(weights.min())
    assert sum(histo.histogram_value.bucket) == 500
    (image,) = acc.Images("input")
    assert (image.step, image.height, image.width) == (21, 5, 6)
    decoded = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    np.testing.assert_array_equal(decoded, img.transpose(1, 2, 0))
    (text,) = acc.Tensors("notes")
    assert text.step == 21 and list(text.tensor_proto.string_val) == [b"first run"]
    assert acc.summary_metadata["notes"].plugin_data.plugin_name == "text"
    assert acc.file_version == 2.0


def test_tensorboard_reads_every_rolled_over_file(tmp_path, monkeypatch):
    """TensorBoard reads a directory in string order: the file counter crosses 9 -> 10 in the
    same second here, and the later files must not be read first."""
    import itertools

    from trainledger.storage import naming

    monkeypatch.setattr(naming, "_event_counter", itertools.count(5))
    monkeypatch.setattr(naming.time, "time", lambda: T0)
    with SummaryRecord(tmp_path, max_file_size=300) as rec:
        for step in range(50):
            rec.add_scalar("x", float(step), step)
    assert len(list(tmp_path.glob("*tfevents*"))) > 3
    acc = _accumulate(tmp_path)
    assert [e.step for e in acc.Scalars("x")] == list(range(50))


def write_small(log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden file's content: every value and time fixed (PNG left out: zlib builds differ)."""
    monkeypatch.setattr(writer_mod.time, "time", lambda: T0)
    with SummaryRecord(log_dir) as rec:
        rec.add_scalar("loss", 0.25, 1, wall_time=T0 + 1)
        rec.add_histogram("w", np.array([0.0, 1.0, 1.5, 3.0]), 2, wall_time=T0 + 2)
        rec.add_text("note", "hi", 3, wall_time=T0 + 3)
        rec.add_tensor("t", np.array([1.0, 2.0], dtype=np.float32), 4, wall_time=T0 + 4)
        rec.add_value("scalar", "lr", 0.5)
        rec.add_value("scalar", "loss", 0.125)
        rec.record(5)
        path = rec.file_path
    return path


def test_golden_bytes(tmp_path, monkeypatch):
    path = write_small(tmp_path, monkeypatch)
    assert path.read_bytes() == GOLDEN.read_bytes()


def test_golden_file_is_what_tensorboard_protos_would_encode():
    """Cross-check the golden file against events built with TensorBoard's own classes."""
    payloads, corrupt = read_records(GOLDEN)
    assert corrupt == 0
    events = [event_pb2.Event.FromString(p) for p in payloads]
    assert events[0] == event_pb2.Event(wall_time=T0, file_version="brain.Event:2")
    expected_scalar = event_pb2.Event(
        wall_time=T0 + 1,
        step=1,
        summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.25)]
        ),
    )
    assert payloads[1] == expected_scalar.SerializeToString()
    assert events[2].summary.value[0].histo.num == 4
    assert events[3].summary.value[0].metadata.plugin_data.plugin_name == "text"
    assert np.frombuffer(events[4].summary.value[0].tensor.tensor_content, "<f4").tolist() == [1, 2]
    last = events[5]
    assert (last.step, last.wall_time) == (5, T0)
    assert {(v.tag, v.simple_value) for v in last.summary.value} == {("lr", 0.5), ("loss", 0.125)}
    assert len(events) == 6


if (
    __name__ == "__main__"
):  # regenerate the golden file: python tests/summary/test_tensorboard_compat.py
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        GOLDEN.write_bytes(write_small(Path(tmp), mp).read_bytes())
        print(f"wrote {GOLDEN}")


def test_a_resumed_run_reads_as_tensorboards_own_reader_reads_it(tmp_path: Path) -> None:
    """Killed at step 24 and resumed from step 21 by another process: the resuming writer
    writes ``SessionLog.START`` at step 21, TensorBoard's reader drops the first session's
    21..24 (``purge_orphaned_data``), and so does ``read_scalars``; the raw points keep both
    sessions apart."""
    import subprocess
    import sys
    import time

    from trainledger.summary import read_scalar_sessions, read_scalars

    first = (
        "import sys\n"
        "from trainledger.summary.record import SummaryRecord\n"
        "with SummaryRecord(sys.argv[1]) as record:\n"
        "    for step in range(1, 25):\n"
        "        record.add_value('scalar', 'loss', float(step))\n"
        "        record.record(step)\n"
    )
    subprocess.run([sys.executable, "-c", first, str(tmp_path)], check=True, timeout=120)
    time.sleep(1.1)  # files are ordered by the second in their names, as TensorBoard reads them
    with SummaryRecord(tmp_path) as record:  # this process resumes the run
        record.mark_resumed()
        for step in range(21, 41):
            record.add_value("scalar", "loss", float(step) + 100.0)
            record.record(step)
    ours = read_scalars(tmp_path)["loss"]
    theirs = _accumulate(tmp_path).Scalars("loss")
    assert ours[0].tolist() == [e.step for e in theirs] == list(range(1, 41))
    np.testing.assert_allclose(ours[2], [e.value for e in theirs], rtol=1e-6)
    assert ours[2][20] == 121.0  # step 21: the resumed session's point wins
    steps, _, _, sessions = read_scalar_sessions(tmp_path, raw=True)["loss"]
    assert len(steps) == 44 and sorted(set(sessions.tolist())) == [0, 1]


def test_two_records_of_one_process_are_one_session(tmp_path: Path) -> None:
    """A training's record and its evaluation's, in one process: no START, nothing dropped."""
    from trainledger.summary import read_scalars

    for steps in (range(1, 11), range(1, 3)):
        with SummaryRecord(tmp_path) as record:
            for step in steps:
                record.add_value("scalar", "loss", float(step))
                record.record(step)
    assert read_scalars(tmp_path)["loss"][0].tolist() == [*range(1, 11), 1, 2]
    assert [e.step for e in _accumulate(tmp_path).Scalars("loss")] == [*range(1, 11), 1, 2]
