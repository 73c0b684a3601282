"""Reading a run's summaries incrementally: TensorBoard event files and MindSpore ``_MS`` files.

A run directory may hold both kinds: ``read_scalars`` / ``read_images`` / ``read_histograms``
/ ``read_tensors`` return the points of both under the tags their writers used (MindSpore's
``loss/auto``, not MindInsight's ``loss/auto/scalar``), every point as written (MindSpore
writes an epoch's last step twice; MindInsight shows only the last value of a repeated step).
Files are read TensorBoard files first, then ``_MS`` files, each kind in writing order;
symlinked files are ignored.

Built for live views and for damaged files: a ``RunReader`` keeps one ``RecordReader`` per
file, so each call reads only bytes appended since the previous call; a truncated tail is
left for later, a corrupt record is skipped and counted (``corrupt``). No exception escapes
for damaged data. Parsing uses the generated protobuf classes (upb, in C) and does no
per-record work beyond decoding, which makes it several times faster than TensorBoard's
``EventAccumulator`` (see ``bench/summary_write.py``). torch is not needed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
from google.protobuf.message import DecodeError

from trainledger.storage import (
    RecordReader,
    event_file_order,
    event_files_in_writing_order,
    is_event_file_name,
    readable_run,
    run_files,
)
from trainledger.summary import mindspore as msr
from trainledger.summary.media import (
    HistogramEvent,
    ImageEvent,
    TensorEvent,
    tb_histogram,
    tb_tensor,
)
from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.scalar_scan import MINDSPORE_EVENTS, SeriesBuilder, scan_scalars
from trainledger.summary.series import MINDSPORE, TENSORBOARD, resolve_series

__all__ = [
    "RunReader",
    "ScalarSeries",
    "SessionSeries",
    "iter_events",
    "list_event_files",
    "read_histograms",
    "read_images",
    "read_scalar_sessions",
    "writer_last_steps",
    "read_scalars",
    "read_tensors",
]

_T = TypeVar("_T")

# (steps int64, wall_times float64, values float64)
ScalarSeries = tuple[np.ndarray, np.ndarray, np.ndarray]
#: a series with each point's session (``summary.series``)
SessionSeries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

# TensorBoard tensors without a plugin (or the generic "tensor" one) are raw tensors.
_RAW_TENSOR_PLUGINS = frozenset({"", "tensor", "tensors"})


def list_event_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Event files directly in ``run_dir`` (names with ``tfevents``), in writing order.

    Files are ordered by the numbers in their names (timestamp, host, pid, counter), not as
    strings, so ``.10`` comes after ``.9``; writers whose names give the same second, by
    their first event's time. Temp files, lineage files, symlinks and others are
    ignored.
    """
    names = [e.name for e in run_files(run_dir, is_event_file_name)]
    return [Path(run_dir, n) for n in event_files_in_writing_order(os.fspath(run_dir), names)]


class RunReader:
    """Incremental reader of the summary files (TensorBoard and MindSpore) of one run directory.

    Each ``read_*()`` call returns only data written since the previous call (new files are
    picked up; a file that shrank is read again from the start). Use one method per reader:
    all consume the same bytes. Damage never raises: records with a bad checksum and payloads
    that do not decode are skipped and counted in ``corrupt``.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self._readers: dict[Path, RecordReader] = {}
        self._scalar_tags: set[str] = set()  # tags whose metadata named the scalars plugin
        self._tag_plugins: dict[str, str] = {}  # TensorBoard tag -> plugin of its metadata
        self._undecodable = 0
        self._session_ids: dict[tuple[str, str], int] = {}
        #: each session of ``read_scalar_sessions`` -> ``"tensorboard"`` or ``"mindspore"``
        self.session_formats: dict[int, str] = {}
        #: a TensorBoard session -> the step of its ``SessionLog.START`` (``summary.series``)
        self.session_starts: dict[int, int] = {}

    @property
    def corrupt(self) -> int:
        """Records skipped so far: checksum failures plus payloads that are not Events."""
        return sum(r.corrupt for r in self._readers.values()) + self._undecodable

    @property
    def files(self) -> list[Path]:
        return list(self._readers)

    def positions(self) -> dict[str, int]:
        """Each file's name and the byte offset read up to (after its last complete record):
        with ``scalar_tags``, what ``resume`` needs to go on in another process."""
        return {path.name: reader.offset for path, reader in self._readers.items()}

    @property
    def scalar_tags(self) -> list[str]:
        """TensorBoard tags whose metadata named the scalars plugin (sent only with a tag's
        first point, so a resumed reader must be told them)."""
        return sorted(self._scalar_tags)

    def resume(self, positions: dict[str, int], scalar_tags: list[str]) -> None:
        """Go on from ``positions`` (``positions()`` of an earlier reader of this run): only
        what was appended after them is read. Call before the first ``read_*``."""
        for name, offset in positions.items():
            path = self.run_dir / name
            self._readers[path] = RecordReader(path, offset=offset)
        self._scalar_tags.update(scalar_tags)

    def _file_payloads(self, paths: list[Path]) -> Iterator[bytes]:
        for path in paths:
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = RecordReader(path)
            try:
                payloads = reader.read()
            except OSError:  # unreadable (permissions, vanished dir): try again next call
                continue
            yield from payloads

    def _new_payloads(self) -> Iterator[bytes]:
        """New TensorBoard payloads."""
        return self._file_payloads(list_event_files(self.run_dir))

    def _tb_events(self) -> Iterator[pb.Event]:
        from_string = pb.Event.FromString
        for payload in self._new_payloads():
            try:
                yield from_string(payload)
            except DecodeError:
                self._undecodable += 1

    def _ms_events(self, paths: list[Path] | None = None) -> Iterator[ms.Event]:
        from_string = ms.Event.FromString
        files = msr.list_mindspore_files(self.run_dir) if paths is None else paths
        for payload in self._file_payloads(files):
            try:
                yield from_string(payload)
            except DecodeError:
                self._undecodable += 1

    def read_events(self) -> list[pb.Event]:
        """Every new TensorBoard event (including each file's ``file_version`` event), in file
        order. MindSpore files are not read here (their events have another schema)."""
        return list(self._tb_events())

    def read_mindspore_events_of(self, path: Path) -> list[ms.Event]:
        """The new MindSpore events of one ``_MS`` file of the run (one session)."""
        return list(self._ms_events([path]))

    def read_mindspore_events(self) -> list[ms.Event]:
        """Every new MindSpore event (``mindspore_summary_pb2.Event``: scalars, images,
        histograms, tensors, the graph), in file order; TensorBoard files are not read here."""
        return list(self._ms_events())

    def read_scalars(self) -> dict[str, ScalarSeries]:
        """New raw scalar points per tag: ``{tag: (steps, wall_times, values)}`` as numpy
        arrays, every point in writing order (``read_scalar_sessions`` adds each point's
        session; the module's ``read_scalars`` applies the series rule of ``summary.series``).

        Scalars are ``simple_value`` values, scalar tensors tagged with TensorBoard's
        ``scalars`` plugin (as TensorFlow 2 writes them), and MindSpore's ``scalar_value``s.
        """
        return {tag: series[:3] for tag, series in self.read_scalar_sessions().items()}

    def read_scalar_sessions(self) -> dict[str, SessionSeries]:
        """New raw scalar points per tag with their sessions: ``{tag: (steps, wall_times,
        values, sessions)}``; ``session_formats`` maps each session to its file format."""
        out = SeriesBuilder()
        for path in list_event_files(self.run_dir):
            out.session = self._session(path, TENSORBOARD)
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = RecordReader(path)
            try:
                self._undecodable += scan_scalars(reader, out, self._scalar_tags)
            except OSError:  # unreadable (permissions, vanished dir): try again next call
                continue
        for path in msr.list_mindspore_files(self.run_dir):
            out.session = self._session(path, MINDSPORE)
            reader = self._readers.get(path)
            if reader is None:
                reader = self._readers[path] = RecordReader(path)
            try:  # (the same bulk path as event files: scalar_layout.py)
                self._undecodable += scan_scalars(reader, out, set(), MINDSPORE_EVENTS)
            except OSError:
                continue
        for session, step in out.starts.items():
            self.session_starts.setdefault(session, step)
        return out.result_sessions()

    def _session(self, path: Path, file_format: str) -> int:
        """The session of a file: one per ``_MS`` file, one per TensorBoard writer (host and
        pid of the name), numbered in writing order."""
        if file_format == MINDSPORE:
            key = path.name
        else:
            ts, host, pid, _, name = event_file_order(path.name)
            key = f"{host}.{pid}" if ts else name
        found = self._session_ids.get((file_format, key))
        if found is None:
            found = self._session_ids[(file_format, key)] = len(self._session_ids)
            self.session_formats[found] = file_format
        return found

    def _collect(self, tb_item: Callable[..., _T | None], ms_item: Callable[..., _T | None]
                 ) -> dict[str, list[_T]]:  # fmt: skip
        """``{tag: [item, ...]}`` of both formats; each function gets ``(event, value)`` and
        returns the value's item, or None when the value is of another kind."""
        out: dict[str, list[_T]] = {}
        for event in self._tb_events():
            for value in event.summary.value:
                if (item := tb_item(event, value)) is not None:
                    out.setdefault(value.tag, []).append(item)
        for ms_event in self._ms_events():
            for ms_value in ms_event.summary.value:
                if (item := ms_item(ms_event, ms_value)) is not None:
                    out.setdefault(ms_value.tag, []).append(item)
        return out

    def read_images(self) -> dict[str, list[ImageEvent]]:
        """New images per tag (``ImageEvent``: step, wall time, size, encoded bytes; its
        ``array()`` decodes a PNG to ``H x W x C`` uint8)."""

        def tb_item(event: pb.Event, value: pb.Summary.Value) -> ImageEvent | None:
            if not value.HasField("image"):
                return None
            img = value.image
            return ImageEvent(event.step, event.wall_time, img.height, img.width,
                              img.colorspace, img.encoded_image_string)  # fmt: skip

        def ms_item(event: ms.Event, value: ms.Summary.Value) -> ImageEvent | None:
            if not value.HasField("image"):
                return None
            return msr.ms_image(event.step, event.wall_time, value.image)

        return self._collect(tb_item, ms_item)

    def read_histograms(self) -> dict[str, list[HistogramEvent]]:
        """New histograms per tag (``HistogramEvent``: step, wall time, bucket edges and
        counts as float64 arrays, min/max/count/sum)."""

        def tb_item(event: pb.Event, value: pb.Summary.Value) -> HistogramEvent | None:
            if not value.HasField("histo"):
                return None
            return tb_histogram(event.step, event.wall_time, value.histo)

        def ms_item(event: ms.Event, value: ms.Summary.Value) -> HistogramEvent | None:
            if not value.HasField("histogram"):
                return None
            return msr.ms_histogram(event.step, event.wall_time, value.histogram)

        return self._collect(tb_item, ms_item)

    def read_tensors(self) -> dict[str, list[TensorEvent]]:
        """New raw tensors per tag (``TensorEvent``: step, wall time, numpy array). TensorBoard
        tensors that another plugin owns (scalars, histograms, images, text...) are left out;
        a tensor whose dtype we cannot decode is skipped and counted in ``corrupt``."""
        plugins = self._tag_plugins

        def tb_item(event: pb.Event, value: pb.Summary.Value) -> TensorEvent | None:
            if not value.HasField("tensor"):
                return None
            if value.HasField("metadata"):
                plugins[value.tag] = value.metadata.plugin_data.plugin_name
            if plugins.get(value.tag, "") not in _RAW_TENSOR_PLUGINS:
                return None
            arr = tb_tensor(value.tensor)
            if arr is None:
                self._undecodable += 1
                return None
            return TensorEvent(event.step, event.wall_time, arr)

        def ms_item(event: ms.Event, value: ms.Summary.Value) -> TensorEvent | None:
            if not value.HasField("tensor"):
                return None
            item = msr.ms_tensor(event.step, event.wall_time, value.tensor)
            if item is None:
                self._undecodable += 1
            return item

        return self._collect(tb_item, ms_item)


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
    """All scalars of a run, TensorBoard and MindSpore files alike: ``{tag: (steps, wall_times,
    values)}`` (int64, float64, float64 numpy arrays, in writing order), each series as its
    format's own reader has it (``summary.series``: MindInsight's rule for ``_MS`` files,
    TensorBoard's for event files: a resumed run's repeated steps are served once).

    ``run_dir`` may be an ``s3://`` URL, read through the download cache (``storage.cache``).
    A run that does not exist is a ``PathNotFoundError`` naming it (for a URL with no object
    under it, an ``ObjectNotFoundError``), never ``{}``; so are ``read_images``,
    ``read_histograms``, ``read_tensors`` and ``read_scalar_sessions``. A ``RunReader`` of a
    live view may watch a directory not made yet, and reads nothing from it until it is."""
    return {tag: s[:3] for tag, s in read_scalar_sessions(run_dir).items()}


def read_scalar_sessions(
    run_dir: str | os.PathLike[str], *, raw: bool = False
) -> dict[str, SessionSeries]:
    """``read_scalars`` with each point's session: ``{tag: (steps, wall_times, values,
    sessions)}``; ``raw=True`` keeps every point (sessions apart, no rule applied)."""
    reader = RunReader(readable_run(run_dir))
    points = reader.read_scalar_sessions()
    if raw:
        return points
    formats, starts = reader.session_formats, reader.session_starts
    return {tag: resolve_series(*s, formats, starts) for tag, s in points.items()}


def writer_last_steps(run_dir: str | os.PathLike[str]) -> dict[tuple[str, int], int]:
    """The last (largest) step of the scalar points each writer process wrote in ``run_dir``:
    ``{(host, pid): step}``, host and pid as its TensorBoard event files' names give them
    (``storage.event_writer``). Why: a run's lineage counts a session's steps apart from its
    summaries, and where the count cannot be exact (a process killed between two snapshots,
    or failing inside a step it had counted) the points it wrote say where it ended
    (``callbacks/run_sessions.py``). MindSpore's ``_MS`` files name no process: not here."""
    reader = RunReader(readable_run(run_dir))
    points = reader.read_scalar_sessions()
    writers: dict[int, tuple[str, int]] = {}
    for (file_format, key), session in reader._session_ids.items():
        host, _, pid = key.rpartition(".")
        if file_format == TENSORBOARD and host and pid.isdigit():
            writers[session] = (host, int(pid))
    out: dict[tuple[str, int], int] = {}
    for steps, _, _, sessions in points.values():
        for session, writer in writers.items():
            mine = steps[sessions == session]
            if len(mine):
                out[writer] = max(out.get(writer, int(mine.max())), int(mine.max()))
    return out


def read_images(run_dir: str | os.PathLike[str]) -> dict[str, list[ImageEvent]]:
    """All images of a run (both formats): ``{tag: [ImageEvent, ...]}`` in writing order."""
    return RunReader(readable_run(run_dir)).read_images()


def read_histograms(run_dir: str | os.PathLike[str]) -> dict[str, list[HistogramEvent]]:
    """All histograms of a run (both formats): ``{tag: [HistogramEvent, ...]}``."""
    return RunReader(readable_run(run_dir)).read_histograms()


def read_tensors(run_dir: str | os.PathLike[str]) -> dict[str, list[TensorEvent]]:
    """All raw tensors of a run (both formats): ``{tag: [TensorEvent, ...]}``."""
    return RunReader(readable_run(run_dir)).read_tensors()
