"""MindSpore ``_MS`` files take the bulk scalar path too (``scalar_layout.py``: the same layout
with the value's field number 3): it agrees with the protobuf path, record by record, on any
mix of scalar rows, other events, damage and a truncated tail, read while the file grows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.summary.test_scalar_scan import _as_points, _same
from trainledger.storage import RecordReader, frame
from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.reader import RunReader

NAME = "events.out.events.summary.1700000000.0.host_MS"
TAGS = st.sampled_from(["loss/auto", "acc1", "é", "", "lr/auto"])
STEPS = st.one_of(st.integers(-3, 300), st.integers(-(2**63), 2**63 - 1))


def _event(step: int, wall: float, values: list[ms.Summary.Value]) -> bytes:
    summary = ms.Summary(value=values)
    return frame(ms.Event(step=step, wall_time=wall, summary=summary).SerializeToString())


def _rows(tags: tuple[str, ...], n: int, start: int) -> bytes:
    """``n`` scalar events of ``tags`` at steps ``start, start+1, ...``, as MindSpore frames
    them (one record per step)."""
    return b"".join(
        _event(
            start + i,
            1.7e9 + i,
            [ms.Summary.Value(tag=t, scalar_value=float(i * k)) for k, t in enumerate(tags)],
        )
        for i in range(n)
    )


def _other(kind: int, tag: str, step: int) -> bytes:
    if kind == 0:
        return frame(ms.Event(wall_time=1.0, version="MindSpore 2.10").SerializeToString())
    if kind == 1:
        img = ms.Summary.Image(height=1, width=1, colorspace=3, encoded_image=b"x")
        return _event(step, 2.0, [ms.Summary.Value(tag=tag, image=img)])
    if kind == 2:  # a scalar beside a tensor: not the plain layout
        tensor = ms.TensorProto(dims=[1], data_type=ms.DT_FLOAT32, float_data=[1.0])
        return _event(
            step,
            3.0,
            [ms.Summary.Value(tag=tag, scalar_value=0.5), ms.Summary.Value(tag="t", tensor=tensor)],
        )
    return frame(b"not an event")


PIECES = st.one_of(
    st.builds(_rows, st.lists(TAGS, min_size=1, max_size=3).map(tuple), st.integers(1, 60),
              STEPS.filter(lambda s: -(2**62) < s < 2**62)),
    st.builds(_other, st.integers(0, 3), TAGS, STEPS),
)  # fmt: skip


def _reference(path: Path, data: bytes, split: int) -> tuple[dict[str, list[Any]], int]:
    """Scalars and skipped records by the protobuf path, read in the same two steps."""
    path.write_bytes(data[:split])
    reader = RecordReader(path)
    out: dict[str, list[Any]] = {}
    bad = 0
    for step in (1, 2):
        if step == 2:
            path.write_bytes(data)
        for payload in reader.read():
            try:
                ev = ms.Event.FromString(payload)
            except Exception:
                bad += 1
                continue
            for v in ev.summary.value:
                if v.HasField("scalar_value"):
                    out.setdefault(v.tag, []).append((ev.step, ev.wall_time, v.scalar_value))
    return out, bad + reader.corrupt


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(PIECES, min_size=1, max_size=10),
    damage=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=3),
    cut=st.floats(0.5, 1.0),
    split=st.floats(0, 1),
)
def test_bulk_path_agrees_with_protobuf_path(tmp_path_factory, pieces, damage, cut, split):
    data = bytearray(b"".join(pieces))
    for where, xor in damage:
        data[min(int(where * len(data)), len(data) - 1)] ^= xor
    data = bytes(data[: max(1, int(cut * len(data)))])
    run = tmp_path_factory.mktemp("run")
    want, want_bad = _reference(run / "reference", data, int(split * len(data)))
    path = run / NAME
    path.write_bytes(data[: int(split * len(data))])
    reader = RunReader(run)
    first = _as_points(reader.read_scalars())
    path.write_bytes(data)
    second = _as_points(reader.read_scalars())
    got = {tag: first.get(tag, []) + second.get(tag, []) for tag in {*first, *second}}
    _same(got, want)
    assert reader.corrupt == want_bad
