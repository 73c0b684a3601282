"""Bulk reading of scalar events from TensorBoard event files: the hot path of ``read_scalars``.

Writers (ours: ``scalar_bytes.scalar_rows_records``; TensorBoard's, tensorboardX's) write one
event per step with the same few tags, so consecutive records usually have the same length
and the same bytes except for wall time, step and values. Such a run of records is checked
and decoded as ``(n, record_size)`` numpy arrays (pieces of at most ``_MAX_RUN`` records):
headers compared at once, payload CRCs recomputed in bulk (``storage.masked_row_crcs``) and
compared with the footers, and the events of one layout (``wall_time``, ``step``, a summary
of ``tag`` / ``simple_value`` pairs) decoded with strided views.

Everything else takes the protobuf path, record by record, with the same result: short runs,
records of other layouts (images, tensors, ``file_version``, scalar tensors), and damage. A
record whose header fails its check is handed, with the rest of the file, to ``RecordReader``,
which resynchronises and counts exactly as when it reads the file itself. The tests check the
two paths agree on arbitrary mixes of events, damage and truncated tails.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from trainledger.storage import (
    FOOTER_SIZE,
    HEADER_SIZE,
    MAX_RECORD_BYTES,
    RecordReader,
    masked_crc32c,
    masked_row_crcs,
)
from trainledger.summary.media import TB_NUMPY_DTYPES
from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.scalar_layout import MINDSPORE_FLOAT, TENSORBOARD_FLOAT, Block, Layout

__all__ = [
    "MINDSPORE_EVENTS",
    "TENSORBOARD_EVENTS",
    "EventFormat",
    "SeriesBuilder",
    "event_scalars",
    "scan_scalars",
]

_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_MIN_RUN = 16  # a run shorter than this costs more in numpy calls than record by record
# a longer run is checked and decoded in pieces of this many records: a piece's arrays (under
# a megabyte) stay in the CPU's caches; ten million records in one piece read 1.3-1.5x slower
# (2^12 to 2^15 measured alike, 2^16 and more slower)
_MAX_RUN = 1 << 14
_MAX_LAYOUTS = 8  # layouts tried per run before the rest goes record by record
_SCALAR_PLUGINS = frozenset({"scalars"})


_Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class SeriesBuilder:
    """Scalar points per tag, added one by one or as arrays, kept in the order added, each
    with the ``session`` current when it was added (``summary.series``)."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[_Chunk]] = {}
        self._pending: dict[str, tuple[list[int], list[float], list[float], int]] = {}
        self.session = 0
        #: session -> the step of its first ``SessionLog.START`` (a writer that resumed)
        self.starts: dict[int, int] = {}

    def start(self, step: int) -> None:
        """A ``SessionLog.START`` event at ``step`` in the current session."""
        self.starts.setdefault(self.session, int(step))

    def point(self, tag: str, step: int, wall_time: float, value: float) -> None:
        pending = self._pending.get(tag)
        if pending is None or pending[3] != self.session:
            self._flush(tag, self._chunks.setdefault(tag, []))
            pending = self._pending[tag] = ([], [], [], self.session)
        pending[0].append(step)
        pending[1].append(wall_time)
        pending[2].append(value)

    def arrays(self, tag: str, steps: np.ndarray, walls: np.ndarray, values: np.ndarray) -> None:
        chunks = self._chunks.setdefault(tag, [])
        self._flush(tag, chunks)
        chunks.append((steps, walls, values, np.full(len(steps), self.session, np.int32)))

    def _flush(self, tag: str, chunks: list[_Chunk]) -> None:
        pending = self._pending.pop(tag, None)
        if pending is not None:
            steps, walls, values, session = pending
            sessions = np.full(len(steps), session, np.int32)
            chunks.append((np.array(steps, np.int64), np.array(walls), np.array(values), sessions))

    def result_sessions(
        self,
    ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """``{tag: (steps int64, wall_times float64, values float64, sessions int32)}``,
        first-seen tag first."""
        out = {}
        for tag, chunks in self._chunks.items():
            self._flush(tag, chunks)
            parts = [np.concatenate(column) for column in zip(*chunks, strict=True)]
            steps, walls, values, sessions = (
                p.astype(t) for p, t in zip(parts, _DTYPES, strict=True)
            )
            out[tag] = (steps, walls, values, sessions)
        self._chunks.clear()
        return out

    def result(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``{tag: (steps int64, wall_times float64, values float64)}``, first-seen tag first."""
        return {tag: series[:3] for tag, series in self.result_sessions().items()}


_DTYPES = (np.int64, np.float64, np.float64, np.int32)


def _tensor_scalar(tensor: pb.TensorProto) -> float | None:
    """The single number held by a scalar tensor (TensorFlow 2 writes scalars this way)."""
    if tensor.float_val:
        return float(tensor.float_val[0])
    if tensor.double_val:
        return float(tensor.double_val[0])
    dtype = TB_NUMPY_DTYPES.get(tensor.dtype)
    if dtype is not None and tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=dtype)
        return float(arr[0]) if arr.size == 1 else None
    if tensor.int_val:
        return float(tensor.int_val[0])
    if tensor.int64_val:
        return float(tensor.int64_val[0])
    return None


def event_scalars(event: pb.Event, scalar_tags: set[str]) -> Iterator[tuple[str, float]]:
    """``(tag, value)`` of each scalar of ``event``: ``simple_value``s, and scalar tensors of
    tags whose metadata (in this event or an earlier one, recorded in ``scalar_tags``) names
    TensorBoard's ``scalars`` plugin, as TensorFlow 2 writes them."""
    for value in event.summary.value:
        if value.HasField("simple_value"):
            yield value.tag, value.simple_value
        elif value.HasField("tensor"):
            tag = value.tag
            if value.HasField("metadata") and (
                value.metadata.plugin_data.plugin_name in _SCALAR_PLUGINS
            ):
                scalar_tags.add(tag)
            if tag in scalar_tags and (number := _tensor_scalar(value.tensor)) is not None:
                yield tag, number


# One event as the scan needs it: (step, wall time, its scalars, whether it is a
# SessionLog.START); None when the payload is not an Event of the format
_Decoded = tuple[int, float, list[tuple[str, float]], bool] | None


def tensorboard_event(payload: bytes, scalar_tags: set[str]) -> _Decoded:
    """A TensorBoard ``Event``'s scalars (``event_scalars``) and restart mark."""
    try:
        event = pb.Event.FromString(payload)
    except DecodeError:
        return None
    start = event.session_log.status == pb.SessionLog.START
    return event.step, event.wall_time, list(event_scalars(event, scalar_tags)), start


def mindspore_event(payload: bytes, scalar_tags: set[str]) -> _Decoded:
    """A MindSpore ``Event``'s ``scalar_value``s (MindSpore has no restart mark)."""
    try:
        event = ms.Event.FromString(payload)
    except DecodeError:
        return None
    values = event.summary.value
    scalars = [(v.tag, v.scalar_value) for v in values if v.HasField("scalar_value")]
    return event.step, event.wall_time, scalars, False


@dataclass(frozen=True)
class EventFormat:
    """What tells the two formats' scalar events apart: the float's tag byte in the bulk
    layout (``scalar_layout.py``) and the decoder of every other record."""

    float_tag: int
    decode: Callable[[bytes, set[str]], _Decoded]


TENSORBOARD_EVENTS = EventFormat(TENSORBOARD_FLOAT, tensorboard_event)
MINDSPORE_EVENTS = EventFormat(MINDSPORE_FLOAT, mindspore_event)


def _new_bytes(reader: RecordReader) -> bytes:
    """The bytes of ``reader``'s file after its offset (the offset is reset to 0 when the file
    shrank: it was replaced), as ``RecordReader.read`` reads them."""
    try:
        with open(reader.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < reader.offset:
                reader.offset = 0
            fh.seek(reader.offset)
            return fh.read(size - reader.offset)
    except FileNotFoundError:
        return b""


def scan_scalars(
    reader: RecordReader,
    out: SeriesBuilder,
    scalar_tags: set[str],
    fmt: EventFormat = TENSORBOARD_EVENTS,
) -> int:
    """Add the scalars of the records appended to ``reader``'s file since its offset to ``out``;
    advance ``reader.offset`` and ``reader.corrupt`` as ``reader.read()`` would. Returns the
    number of intact payloads that are not Events. Raises OSError for an unreadable file."""
    data = _new_bytes(reader)
    base, end, pos, undecodable = reader.offset, len(data), 0, 0
    buf = np.frombuffer(data, np.uint8)
    view = memoryview(data)
    while end - pos >= HEADER_SIZE:
        length, length_crc = _HEADER.unpack_from(data, pos)
        if length > MAX_RECORD_BYTES or length_crc != masked_crc32c(view[pos : pos + 8]):
            # Damage: RecordReader resynchronises and counts, reading from here on.
            tail = RecordReader(reader.path, offset=base + pos)
            for payload in tail.read():
                undecodable += _decode(payload, out, scalar_tags, fmt)
            reader.offset, reader.corrupt = tail.offset, reader.corrupt + tail.corrupt
            return undecodable
        size = HEADER_SIZE + length + FOOTER_SIZE
        if pos + size > end:
            break  # truncated tail: resume here on the next read
        n = _run_length(buf, pos, size)
        if n >= _MIN_RUN:
            rows = buf[pos : pos + n * size].reshape(n, size)
            corrupt, bad = _bulk(rows, out, scalar_tags, fmt)
            reader.corrupt += corrupt
            undecodable += bad
            pos += n * size
            continue
        stop = pos + size - FOOTER_SIZE
        if _U32.unpack_from(data, stop)[0] != masked_crc32c(view[pos + HEADER_SIZE : stop]):
            reader.corrupt += 1
        else:
            undecodable += _decode(data[pos + HEADER_SIZE : stop], out, scalar_tags, fmt)
        pos += size
    reader.offset = base + pos
    return undecodable


def _decode(payload: bytes, out: SeriesBuilder, scalar_tags: set[str], fmt: EventFormat) -> int:
    """Add one payload's scalars to ``out``; 1 if it is not an Event, else 0."""
    decoded = fmt.decode(payload, scalar_tags)
    if decoded is None:
        return 1
    step, wall_time, scalars, start = decoded
    for tag, value in scalars:
        out.point(tag, step, wall_time, value)
    if start:
        out.start(step)
    return 0


def _run_length(buf: np.ndarray, pos: int, size: int) -> int:
    """How many records of ``size`` bytes from ``pos`` have the same header as the first (and
    fit in ``buf``): a run that may be read in bulk. Grows its window geometrically so short
    runs in a long file cost little."""
    available = min((len(buf) - pos) // size, _MAX_RUN)
    if available < _MIN_RUN or not np.array_equal(
        buf[pos + size : pos + size + HEADER_SIZE], buf[pos : pos + HEADER_SIZE]
    ):
        return 1
    rows = buf[pos : pos + available * size].reshape(available, size)
    head = rows[0, :HEADER_SIZE]
    n, window = 1, 64
    while n < available:
        hi = min(available, n + window)
        same = (rows[n:hi, :HEADER_SIZE] == head).all(axis=1)
        if not same.all():
            return n + int(np.argmin(same))
        n, window = hi, window * 2
    return n


def _bulk(
    rows: np.ndarray, out: SeriesBuilder, scalar_tags: set[str], fmt: EventFormat
) -> tuple[int, int]:
    """Check and decode ``n`` records of one size and header; returns (corrupt, undecodable)."""
    payloads = np.ascontiguousarray(rows[:, HEADER_SIZE:-FOOTER_SIZE])
    footers = np.ascontiguousarray(rows[:, -FOOTER_SIZE:]).view("<u4").reshape(-1)
    intact = masked_row_crcs(payloads) == footers
    corrupt = len(rows) - int(np.count_nonzero(intact))
    index = np.flatnonzero(intact) if corrupt else np.arange(len(rows))
    if corrupt:
        payloads = payloads[index]
    merge = _Merge()
    rest = np.arange(len(payloads))
    for _ in range(_MAX_LAYOUTS):
        if not len(rest):
            break
        layout = Layout.parse(payloads[rest[0]].tobytes(), fmt.float_tag)
        if layout is None:
            merge.fallback.append(int(rest[0]))
            rest = rest[1:]
            continue
        match = layout.matches(payloads[rest])
        blocks, bad = layout.decode(payloads[rest[match]], rest[match])
        merge.blocks.extend(blocks)
        merge.fallback.extend(rest[match][bad].tolist())
        rest = rest[~match]
    merge.fallback.extend(rest.tolist())
    undecodable = merge.run_fallback(payloads, scalar_tags, fmt)
    merge.emit(out)
    return corrupt, undecodable


class _Merge:
    """Points of one run from several layouts and the protobuf path, put back in row order."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.fallback: list[int] = []
        self.starts: list[int] = []

    def run_fallback(self, payloads: np.ndarray, scalar_tags: set[str], fmt: EventFormat) -> int:
        """Decode the fallback rows (in row order) with protobuf into blocks of one point."""
        undecodable = 0
        for row in sorted(self.fallback):
            decoded = fmt.decode(payloads[row].tobytes(), scalar_tags)
            if decoded is None:
                undecodable += 1
                continue
            event_step, event_wall, scalars, start = decoded
            if start:
                self.starts.append(event_step)
            step, wall = np.array([event_step], np.int64), np.array([event_wall])
            for slot, (tag, value) in enumerate(scalars):
                self.blocks.append((np.array([row]), slot, tag, step, wall, np.array([value])))
        return undecodable

    def emit(self, out: SeriesBuilder) -> None:
        """Add the points to ``out`` per tag, in (row, slot) order, tags in first-seen order."""
        for step in self.starts:
            out.start(step)
        by_tag: dict[str, list[Block]] = {}
        for block in sorted(self.blocks, key=lambda b: (int(b[0][0]), b[1])):
            by_tag.setdefault(block[2], []).append(block)
        for tag, blocks in by_tag.items():
            if len(blocks) == 1:
                _rows, _slot, _tag, steps, walls, values = blocks[0]
                out.arrays(tag, steps, walls, values)
                continue
            rows = np.concatenate([b[0] for b in blocks])
            slots = np.concatenate([np.full(len(b[0]), b[1]) for b in blocks])
            order = np.lexsort((slots, rows))
            out.arrays(
                tag,
                *(np.concatenate([b[i] for b in blocks])[order] for i in (3, 4, 5)),
            )
