"""The bulk scalar reader agrees with the protobuf path, record by record, on any file."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainledger.storage import RecordReader, frame
from trainledger.summary import scalar_scan
from trainledger.summary.encoders import event, file_version_event, image, scalar, tensor
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.reader import RunReader
from trainledger.summary.scalar_bytes import scalar_event_bytes, scalar_rows_records
from trainledger.summary.scalar_scan import event_scalars

NAME = "events.out.tfevents.1700000000.host.1.0"
# Equal-length tags (so records of different tags share one length), non-ASCII, empty.
TAGS = st.sampled_from(["loss", "acc1", "lr", "é", "", "train/loss", "train/acc1"])
STEPS = st.one_of(st.integers(-3, 300), st.integers(-(2**63), 2**63 - 1))
WALLS = st.one_of(st.sampled_from([0.0, -0.0, 1.7e9]), st.floats(allow_nan=False, width=64))
VALUES = st.floats(width=32)


def _rows(tags: tuple[str, ...], n: int, start: int, wall: float) -> bytes:
    """``n`` rows framed in bulk by our writer (steps ``start, start+1, ...``)."""
    rows = [(start + i, wall + i, *(float(i * k) for k in range(len(tags)))) for i in range(n)]
    return b"".join(chunk for chunk, _size in scalar_rows_records(tags, rows))


def _single(tag: str, value: float, step: int, wall: float) -> bytes:
    return frame(scalar_event_bytes(tag, value, step, wall))


def _bad_utf8(n: int, step: int) -> bytes:
    """Intact records of scalar events whose tag is not UTF-8, among ones whose tag is."""
    good = [scalar_event_bytes("ab", 1.0, step + i, 5.0) for i in range(n)]
    return b"".join(
        frame(p.replace(b"\x0a\x02ab", b"\x0a\x02\xff\xfe") if i % 3 == 1 else p)
        for i, p in enumerate(good)
    )


def _other(kind: int, tag: str, step: int) -> bytes:
    """Events the bulk path does not decode: the protobuf path must."""
    if kind == 0:
        return frame(file_version_event(3.0).SerializeToString())
    if kind == 1:
        img = image(tag, np.zeros((2, 2, 3), np.uint8))
        return frame(event(step, 4.0, [img]).SerializeToString())
    if kind == 2:  # a TF2-style scalar tensor, owned by the scalars plugin
        value = tensor(tag, np.float32(2.5))
        value.metadata.plugin_data.plugin_name = "scalars"
        return frame(event(step, 4.0, [value]).SerializeToString())
    if kind == 3:  # two scalars plus a node name: not the plain layout
        value = scalar(tag, 1.5)
        value.node_name = "n"
        return frame(event(step, 4.0, [value, scalar("x", 2.0)]).SerializeToString())
    return frame(b"not an event")


PIECES = st.one_of(
    st.builds(_rows, st.lists(TAGS, min_size=1, max_size=3).map(tuple), st.integers(1, 60),
              STEPS.filter(lambda s: -(2**62) < s < 2**62), WALLS.filter(lambda w: abs(w) < 1e300)),
    st.builds(_single, TAGS, VALUES, STEPS, WALLS),
    st.builds(_bad_utf8, st.integers(1, 40), st.integers(0, 1000)),
    st.builds(_other, st.integers(0, 4), TAGS, STEPS),
)  # fmt: skip


def _reference(
    path: Path, data: bytes, split: int
) -> tuple[dict[str, list[tuple[int, float, float]]], int]:
    """Scalars and skipped-record count by the protobuf path (RecordReader + Event.FromString),
    reading the file in the same two steps as the reader under test: damage that straddles the
    first step's end is counted as the record-by-record reader counts it."""
    path.write_bytes(data[:split])
    reader = RecordReader(path)
    out: dict[str, list[tuple[int, float, float]]] = {}
    bad, scalar_tags = 0, set()
    for step in (1, 2):
        if step == 2:
            path.write_bytes(data)
        for payload in reader.read():
            try:
                ev = pb.Event.FromString(payload)
            except Exception:
                bad += 1
                continue
            for tag, value in event_scalars(ev, scalar_tags):
                out.setdefault(tag, []).append((ev.step, ev.wall_time, value))
    return out, bad + reader.corrupt


def _as_points(series: dict) -> dict[str, list[tuple[int, float, float]]]:
    return {
        tag: list(zip(s.tolist(), w.tolist(), v.tolist(), strict=True))
        for tag, (s, w, v) in series.items()
    }


def _same(got: dict, want: dict) -> None:
    """Equal point for point, NaN equal to NaN, -0.0 told from 0.0 (compared as bits)."""
    assert got.keys() == want.keys()
    for tag in want:
        pack = [struct.pack("<qdd", *point) for point in got[tag]]
        assert pack == [struct.pack("<qdd", *point) for point in want[tag]], tag


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(PIECES, min_size=1, max_size=12),
    damage=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=3),
    cut=st.floats(0.5, 1.0),
    split=st.floats(0, 1),
)
def test_bulk_path_agrees_with_protobuf_path(tmp_path_factory, pieces, damage, cut, split):
    """Any mix of scalar rows, single events, other events, damaged bytes and a truncated tail,
    read in two steps (the file growing in between): same points, same skipped count."""
    data = bytearray(b"".join(pieces))
    for where, xor in damage:
        data[min(int(where * len(data)), len(data) - 1)] ^= xor
    data = bytes(data[: max(1, int(cut * len(data)))])
    run = tmp_path_factory.mktemp("run")
    path = run / NAME
    want, want_bad = _reference(run / "reference", data, int(split * len(data)))

    path.write_bytes(data[: int(split * len(data))])
    reader = RunReader(run)
    first = _as_points(reader.read_scalars())
    path.write_bytes(data)  # the writer appended the rest
    second = _as_points(reader.read_scalars())
    got = {tag: first.get(tag, []) + second.get(tag, []) for tag in {*first, *second}}
    _same(got, want)
    assert reader.corrupt == want_bad


def test_long_runs_are_read_in_bulk_with_exact_values(tmp_path):
    """A realistic file (several tags per row, step varints of 1-3 bytes) reads back exactly."""
    tags = ("loss", "acc1", "lr")
    rows = [(s, 1.7e9 + s / 10, np.sin(s), s / 7, 1e-3) for s in range(20_000)]
    data = b"".join(chunk for chunk, _ in scalar_rows_records(tags, rows))
    (tmp_path / NAME).write_bytes(data)
    series = RunReader(tmp_path).read_scalars()
    assert list(series) == list(tags)
    steps, walls, values = series["acc1"]
    np.testing.assert_array_equal(steps, np.arange(20_000))
    np.testing.assert_array_equal(walls, [r[1] for r in rows])
    np.testing.assert_array_equal(values, np.float32([r[3] for r in rows]))
    assert steps.dtype == np.int64 and walls.dtype == values.dtype == np.float64


def test_a_run_longer_than_a_bulk_piece_reads_whole_with_its_damage_skipped(tmp_path):
    """Runs are checked and decoded in pieces of ``_MAX_RUN`` records: every record of a
    longer run is read once, in order, and a damaged record on either side of a piece's
    boundary is skipped and counted."""
    n = 2 * scalar_scan._MAX_RUN + 123
    first = 2**14  # steps of one varint length: records of one size
    rows = [(first + s, 10.0 + s, float(s)) for s in range(n)]
    data = bytearray(b"".join(chunk for chunk, _ in scalar_rows_records(("loss",), rows)))
    size = len(data) // n
    hurt = [scalar_scan._MAX_RUN - 1, scalar_scan._MAX_RUN, n - 1]
    for record in hurt:
        data[record * size + 20] ^= 0x01
    (tmp_path / NAME).write_bytes(bytes(data))
    reader = RunReader(tmp_path)
    steps, walls, values = reader.read_scalars()["loss"]
    assert reader.corrupt == len(hurt)
    kept = [s for s in range(n) if s not in hurt]
    assert steps.tolist() == [first + s for s in kept]
    assert values.tolist() == [float(s) for s in kept]
    np.testing.assert_array_equal(walls, [10.0 + s for s in kept])


def test_corrupt_payload_in_a_run_is_skipped_and_counted(tmp_path):
    rows = [(s, 10.0 + s, float(s)) for s in range(1, 100)]
    data = bytearray(b"".join(chunk for chunk, _ in scalar_rows_records(("loss",), rows)))
    size = len(data) // len(rows)
    data[10 * size + 20] ^= 0x01  # inside record 10's payload: its CRC fails
    (tmp_path / NAME).write_bytes(bytes(data))
    reader = RunReader(tmp_path)
    steps, _walls, _values = reader.read_scalars()["loss"]
    assert reader.corrupt == 1
    assert steps.tolist() == [s for s in range(1, 100) if s != 11]
