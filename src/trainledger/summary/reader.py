"""Reading TensorBoard event files of a run: all events, or scalars as numpy arrays, incrementally.

Built for live views and for damaged files: a ``RunReader`` keeps one ``RecordReader`` per
file, so each call reads only bytes appended since the previous call; a truncated tail is
left for later, a corrupt record is skipped and counted (``corrupt``). No exception escapes
for damaged data. Parsing uses the generated protobuf classes (upb, in C) and does no
per-record work beyond decoding, which makes it several times faster than TensorBoard's
``EventAccumulator`` (see ``bench/summary_write.py``). torch is not needed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from trainledger.storage import RecordReader, event_file_order, is_event_file_name
from trainledger.summary.proto import summary_pb2 as pb

__all__ = ["RunReader", "ScalarSeries", "list_event_files", "iter_events", "read_scalars"]

# (steps int64, wall_times float64, values float64)
ScalarSeries = tuple[np.ndarray, np.ndarray, np.ndarray]

_SCALAR_PLUGINS = frozenset({"scalars"})
_FLOAT_DTYPES = {
    pb.DT_FLOAT: "<f4",
    pb.DT_DOUBLE: "<f8",
    pb.DT_HALF: "<f2",
    pb.DT_INT32: "<i4",
    pb.DT_INT64: "<i8",
}


def list_event_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Event files directly in ``run_dir`` (names with ``tfevents``), in writing order.

    Files are ordered by the numbers in their names (timestamp, host, pid, counter), not as
    strings, so ``.10`` comes after ``.9``. Temp files, lineage files and others are ignored.
    """
    try:
        entries = list(os.scandir(run_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    files = [Path(e.path) for e in entries if is_event_file_name(e.name) and e.is_file()]
    return sorted(files, key=lambda p: event_file_order(p.name))


def _tensor_scalar(tensor: pb.TensorProto) -> float | None:
    """The single number held by a scalar tensor (TensorFlow 2 writes scalars this way)."""
    if tensor.float_val:
        return float(tensor.float_val[0])
    if tensor.double_val:
        return float(tensor.double_val[0])
    dtype = _FLOAT_DTYPES.get(tensor.dtype)
    if dtype is not None and tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=dtype)
        return float(arr[0]) if arr.size == 1 else None
    if tensor.int_val:
        return float(tensor.int_val[0])
    if tensor.int64_val:
        return float(tensor.int64_val[0])
    return None


class RunReader:
    """Incremental reader of the event files of one run directory.

    Each ``read_events()`` / ``read_scalars()`` call returns only data written since the
    previous call (new files are picked up; a file that shrank is read again from the start).
    Use one method per reader: both consume the same bytes.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self._readers: dict[Path, RecordReader] = {}
        self._scalar_tags: set[str] = set()  # tags whose metadata named the scalars plugin
        self._undecodable = 0

    @property
    def corrupt(self) -> int:
        """Records skipped so far: checksum failures plus payloads that are not Events."""
        return sum(r.corrupt for r in self._readers.values()) + self._undecodable

    @property
    def files(self) -> list[Path]:
        return list(self._readers)

    def _new_payloads(self) -> Iterator[bytes]:
        for path in list_event_files(self.run_dir):
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = RecordReader(path)
            try:
                payloads = reader.read()
            except OSError:  # unreadable (permissions, vanished dir): try again next call
                continue
            yield from payloads

    def read_events(self) -> list[pb.Event]:
        """Every new event (including each file's ``file_version`` event), in file order."""
        out: list[pb.Event] = []
        from_string = pb.Event.FromString
        for payload in self._new_payloads():
            try:
                out.append(from_string(payload))
            except DecodeError:
                self._undecodable += 1
        return out

    def read_scalars(self) -> dict[str, ScalarSeries]:
        """New scalar points per tag: ``{tag: (steps, wall_times, values)}`` as numpy arrays.

        Scalars are ``simple_value`` values, and scalar tensors tagged with TensorBoard's
        ``scalars`` plugin (as TensorFlow 2 writes them).
        """
        steps: dict[str, list[int]] = {}
        times: dict[str, list[float]] = {}
        values: dict[str, list[float]] = {}
        scalar_tags = self._scalar_tags
        from_string = pb.Event.FromString
        for payload in self._new_payloads():
            try:
                event = from_string(payload)
            except DecodeError:
                self._undecodable += 1
                continue
            summary_values = event.summary.value  # empty unless the event is a summary
            if not summary_values:
                continue
            step = event.step
            wall_time = event.wall_time
            for value in summary_values:
                tag = value.tag
                if value.HasField("simple_value"):
                    number = value.simple_value
                elif value.HasField("tensor"):
                    if value.HasField("metadata") and (
                        value.metadata.plugin_data.plugin_name in _SCALAR_PLUGINS
                    ):
                        scalar_tags.add(tag)
                    if tag not in scalar_tags:
                        continue
                    got = _tensor_scalar(value.tensor)
                    if got is None:
                        continue
                    number = got
                else:
                    continue
                series = steps.get(tag)
                if series is None:
                    steps[tag], times[tag], values[tag] = [step], [wall_time], [number]
                else:
                    series.append(step)
                    times[tag].append(wall_time)
                    values[tag].append(number)
        return {
            tag: (
                np.asarray(steps[tag], dtype=np.int64),
                np.asarray(times[tag], dtype=np.float64),
                np.asarray(values[tag], dtype=np.float64),
            )
            for tag in steps
        }


def iter_events(run_dir: str | os.PathLike[str]) -> Iterator[pb.Event]:
    """Every intact event of every event file in ``run_dir``, file by file (one file in memory
    at a time, so a large run streams)."""
    for path in list_event_files(run_dir):
        try:
            payloads = RecordReader(path).read()
        except OSError:
            continue
        for payload in payloads:
            try:
                yield pb.Event.FromString(payload)
            except DecodeError:
                continue


def read_scalars(run_dir: str | os.PathLike[str]) -> dict[str, ScalarSeries]:
    """All scalars of a run: ``{tag: (steps, wall_times, values)}`` (numpy arrays)."""
    return RunReader(run_dir).read_scalars()
