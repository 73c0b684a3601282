"""Bulk reading of scalar events from TensorBoard event files: the hot path of ``read_scalars``.

Writers (ours: ``scalar_bytes.scalar_rows_records``; TensorBoard's, tensorboardX's) write one
event per step with the same few tags, so consecutive records usually have the same length
and the same bytes except for wall time, step and values. Such a run of records is checked
and decoded as one ``(n, record_size)`` numpy array: headers compared at once, payload CRCs
recomputed in bulk by re-framing the payloads with ``frame_equal_length`` and comparing the
footers, and the events of one layout (``wall_time``, ``step``, a summary of ``tag`` /
``simple_value`` pairs) decoded with strided views.

Everything else takes the protobuf path, record by record, with the same result: short runs,
records of other layouts (images, tensors, ``file_version``, scalar tensors), and damage. A
record whose header fails its check is handed, with the rest of the file, to ``RecordReader``,
which resynchronises and counts exactly as when it reads the file itself. The tests check the
two paths agree on arbitrary mixes of events, damage and truncated tails.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

import numpy as np
from google.protobuf.message import DecodeError

from trainledger.storage import (
    FOOTER_SIZE,
    HEADER_SIZE,
    MAX_RECORD_BYTES,
    RecordReader,
    frame_equal_length,
    masked_crc32c,
)
from trainledger.summary.media import TB_NUMPY_DTYPES
from trainledger.summary.proto import summary_pb2 as pb

__all__ = ["SeriesBuilder", "event_scalars", "scan_scalars"]

_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_MIN_RUN = 16  # a run shorter than this costs more in numpy calls than record by record
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


def scan_scalars(reader: RecordReader, out: SeriesBuilder, scalar_tags: set[str]) -> int:
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
                undecodable += _decode(payload, out, scalar_tags)
            reader.offset, reader.corrupt = tail.offset, reader.corrupt + tail.corrupt
            return undecodable
        size = HEADER_SIZE + length + FOOTER_SIZE
        if pos + size > end:
            break  # truncated tail: resume here on the next read
        n = _run_length(buf, pos, size)
        if n >= _MIN_RUN:
            rows = buf[pos : pos + n * size].reshape(n, size)
            corrupt, bad = _bulk(rows, out, scalar_tags)
            reader.corrupt += corrupt
            undecodable += bad
            pos += n * size
            continue
        stop = pos + size - FOOTER_SIZE
        if _U32.unpack_from(data, stop)[0] != masked_crc32c(view[pos + HEADER_SIZE : stop]):
            reader.corrupt += 1
        else:
            undecodable += _decode(data[pos + HEADER_SIZE : stop], out, scalar_tags)
        pos += size
    reader.offset = base + pos
    return undecodable


def _decode(payload: bytes, out: SeriesBuilder, scalar_tags: set[str]) -> int:
    """Add one payload's scalars to ``out``; 1 if it is not an Event, else 0."""
    try:
        event = pb.Event.FromString(payload)
    except DecodeError:
        return 1
    if event.summary.value:
        step, wall_time = event.step, event.wall_time
        for tag, value in event_scalars(event, scalar_tags):
            out.point(tag, step, wall_time, value)
    elif event.session_log.status == pb.SessionLog.START:
        out.start(event.step)
    return 0


def _run_length(buf: np.ndarray, pos: int, size: int) -> int:
    """How many records of ``size`` bytes from ``pos`` have the same header as the first (and
    fit in ``buf``): a run that may be read in bulk. Grows its window geometrically so short
    runs in a long file cost little."""
    available = (len(buf) - pos) // size
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


def _bulk(rows: np.ndarray, out: SeriesBuilder, scalar_tags: set[str]) -> tuple[int, int]:
    """Check and decode ``n`` records of one size and header; returns (corrupt, undecodable)."""
    payloads = np.ascontiguousarray(rows[:, HEADER_SIZE:-FOOTER_SIZE])
    framed = np.frombuffer(frame_equal_length(payloads), np.uint8).reshape(rows.shape)
    intact = (framed[:, -FOOTER_SIZE:] == rows[:, -FOOTER_SIZE:]).all(axis=1)
    corrupt = len(rows) - int(np.count_nonzero(intact))
    index = np.flatnonzero(intact) if corrupt else np.arange(len(rows))
    if corrupt:
        payloads = payloads[index]
    merge = _Merge()
    rest = np.arange(len(payloads))
    for _ in range(_MAX_LAYOUTS):
        if not len(rest):
            break
        layout = _Layout.parse(payloads[rest[0]].tobytes())
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
    undecodable = merge.run_fallback(payloads, scalar_tags)
    merge.emit(out)
    return corrupt, undecodable


# One layout's points: (row numbers, slot numbers, tag, steps, wall times, values)
_Block = tuple[np.ndarray, int, str, np.ndarray, np.ndarray, np.ndarray]


class _Merge:
    """Points of one run from several layouts and the protobuf path, put back in row order."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.fallback: list[int] = []
        self.starts: list[int] = []

    def run_fallback(self, payloads: np.ndarray, scalar_tags: set[str]) -> int:
        """Decode the fallback rows (in row order) with protobuf into blocks of one point."""
        undecodable = 0
        for row in sorted(self.fallback):
            try:
                event = pb.Event.FromString(payloads[row].tobytes())
            except DecodeError:
                undecodable += 1
                continue
            if event.session_log.status == pb.SessionLog.START:
                self.starts.append(event.step)
            step, wall = np.array([event.step], np.int64), np.array([event.wall_time])
            for slot, (tag, value) in enumerate(event_scalars(event, scalar_tags)):
                self.blocks.append((np.array([row]), slot, tag, step, wall, np.array([value])))
        return undecodable

    def emit(self, out: SeriesBuilder) -> None:
        """Add the points to ``out`` per tag, in (row, slot) order, tags in first-seen order."""
        for step in self.starts:
            out.start(step)
        by_tag: dict[str, list[_Block]] = {}
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


class _Layout:
    """Where the varying fields sit in an Event of the form ``wall_time? step? summary{value{tag
    simple_value}*}`` (the form every TensorBoard writer gives a scalar event)."""

    def __init__(self, first: np.ndarray, wall_at: int, step_at: int, step_len: int,
                 slots: list[tuple[int, int, int]]) -> None:  # fmt: skip
        self.first = first
        self.wall_at, self.step_at, self.step_len = wall_at, step_at, step_len
        self.slots = slots  # (tag offset, tag length, float offset) per value
        fixed = np.ones(len(first), bool)
        if wall_at >= 0:
            fixed[wall_at : wall_at + 8] = False
        fixed[step_at : step_at + step_len] = False
        for tag_at, tag_len, float_at in slots:
            fixed[tag_at : tag_at + tag_len] = False
            fixed[float_at : float_at + 4] = False
        self.fixed = np.flatnonzero(fixed)

    @classmethod
    def parse(cls, payload: bytes) -> _Layout | None:
        """The layout of ``payload``, or None when it is not a plain scalar event."""
        try:
            return cls._parse(payload)
        except (IndexError, UnicodeDecodeError):
            return None

    @classmethod
    def _parse(cls, p: bytes) -> _Layout | None:
        pos, wall_at, step_at, step_len = 0, -1, 0, 0
        if p[pos] == 0x09:
            wall_at, pos = 1, 9
        if p[pos] == 0x10:
            step_at = pos + 1
            pos = _skip_varint(p, step_at)
            step_len = pos - step_at
        if p[pos] != 0x2A or step_len > 10:
            return None
        size, pos = _varint(p, pos + 1)
        if pos + size != len(p):
            return None
        slots = []
        while pos < len(p):
            if p[pos] != 0x0A:
                return None
            value_len, pos = _varint(p, pos + 1)
            if p[pos] != 0x0A:
                return None
            tag_len, tag_at = _varint(p, pos + 1)
            p[tag_at : tag_at + tag_len].decode("utf-8")
            float_at = tag_at + tag_len + 1
            if p[float_at - 1] != 0x15 or float_at + 4 != pos + value_len or float_at + 4 > len(p):
                return None
            slots.append((tag_at, tag_len, float_at))
            pos = float_at + 4
        return cls(np.frombuffer(p, np.uint8), wall_at, step_at, step_len, slots)

    def matches(self, payloads: np.ndarray) -> np.ndarray:
        """Rows with this layout: same fixed bytes, a varint of the same length for the step."""
        ok = (payloads[:, self.fixed] == self.first[self.fixed]).all(axis=1)
        if self.step_len:
            step = payloads[:, self.step_at : self.step_at + self.step_len]
            ok &= (step[:, :-1] >= 0x80).all(axis=1) & (step[:, -1] < 0x80)
        return ok

    def decode(self, payloads: np.ndarray, rows: np.ndarray) -> tuple[list[_Block], np.ndarray]:
        """The points of ``payloads`` (rows of this layout), one block per slot and tag, and
        the rows left out because a tag is not UTF-8 (protobuf refuses them: they must be
        decoded, and counted, by the protobuf path)."""
        tags = [_tags(payloads[:, at : at + size]) for at, size, _ in self.slots]
        bad = np.zeros(len(payloads), bool)
        for _names, ids in tags:
            if ids is not None:
                bad |= ids < 0
        if bad.any():
            keep = ~bad
            payloads, rows = payloads[keep], rows[keep]
            tags = [(t, None if i is None else i[keep]) for t, i in tags]
        n = len(payloads)
        walls = np.zeros(n)
        if self.wall_at >= 0:
            walls = payloads[:, self.wall_at : self.wall_at + 8].copy().view("<f8").ravel()
        steps = np.zeros(n, np.uint64)
        for j in range(self.step_len):
            byte = payloads[:, self.step_at + j].astype(np.uint64) & np.uint64(0x7F)
            steps |= byte << np.uint64(7 * j)
        steps = steps.view(np.int64)
        blocks: list[_Block] = []
        for slot, ((names, ids), (_, _, float_at)) in enumerate(zip(tags, self.slots, strict=True)):
            values = payloads[:, float_at : float_at + 4].copy().view("<f4").ravel()
            if ids is None:
                blocks.append((rows, slot, str(names[0]), steps, walls, values.astype(np.float64)))
                continue
            for k, tag in enumerate(names):
                if tag is not None and (which := np.flatnonzero(ids == k)).size:
                    blocks.append((rows[which], slot, tag, steps[which], walls[which],
                                   values[which].astype(np.float64)))  # fmt: skip
        return blocks, np.flatnonzero(bad)


def _tags(column: np.ndarray) -> tuple[list[str | None], np.ndarray | None]:
    """The distinct tags of a ``(n, tag_len)`` column (None for one that is not UTF-8) and
    each row's index into them (-1 for a bad tag); None instead of indexes when all rows hold
    the first row's tag."""
    if (column == column[0]).all():
        return [column[0].tobytes().decode("utf-8")], None  # the layout checked it decodes
    keys = np.ascontiguousarray(column).view(f"V{column.shape[1]}").ravel()
    uniques, inverse = np.unique(keys, return_inverse=True)
    names: list[str | None] = []
    for raw in uniques:
        try:
            names.append(raw.tobytes().decode("utf-8"))
        except UnicodeDecodeError:
            names.append(None)
    ids = inverse.ravel().astype(np.int64)
    valid = np.array([name is not None for name in names])
    ids[~valid[ids]] = -1
    return names, ids


def _varint(p: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = p[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _skip_varint(p: bytes, pos: int) -> int:
    return _varint(p, pos)[1]
