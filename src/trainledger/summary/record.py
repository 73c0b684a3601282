"""``SummaryRecord``: MindSpore's summary writer API, writing TensorBoard event files.

Values are added by plugin and name (``add_value``) and written for a step by ``record``, as in
MindSpore; ``add_scalar``-style methods write one value at once, as in TensorBoard writers.
Differences from MindSpore, on purpose:

* several SummaryRecords may be open in one process (each has its own file and thread);
* ``max_file_size`` rolls over to a new file instead of dropping data;
* a disk-space guard refuses to write when less than ``min_free_bytes`` would stay free
  (``DiskSpaceError``), instead of filling the disk;
* ``graph`` is a serialised TensorBoard ``GraphDef`` (``summary.graph_def``), not a MindSpore one.

Lineage plugins (``train_lineage``, ``eval_lineage``, ``dataset_graph``,
``custom_lineage_data``) are not TensorBoard data: ``add_value`` keeps the latest value per
plugin and name in ``record.lineage_values`` (``{plugin: {name: value}}``) and, when a
``lineage_handler`` is attached, calls it with ``(plugin, name, value)``. Event files never
contain lineage. (``SummaryCollector`` does not go through here: it drives ``TrainLineage`` /
``EvalLineage``, which accept a SummaryRecord and write next to its files.)

Writes are batched to the writer thread (256 events or 0.2 s) and handed to the OS after each
batch; ``flush()`` waits for them (and fsyncs). A record that is never closed still writes its
last events when it is garbage-collected or at interpreter exit.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainledger.errors import SummaryError
from trainledger.storage import flush_mirrors, is_object_url, writable_dir
from trainledger.summary import encoders, graph_def
from trainledger.summary.checks import check_rows as _check_rows
from trainledger.summary.checks import check_step as _check_step
from trainledger.summary.checks import check_tag as _check_tag
from trainledger.summary.entries import VALUE_CHECKS, Entry, close_forgotten, submit_entries
from trainledger.summary.scalar_bytes import scalar_rows_records
from trainledger.summary.tensor_export import process_export_options
from trainledger.summary.writer import (
    DEFAULT_MIN_FREE_BYTES,
    AsyncEventWriter,
    EventFileWriter,
)
from trainledger.values import check_positive_int

__all__ = ["SummaryRecord", "PLUGINS", "LINEAGE_PLUGINS", "MODES"]

logger = logging.getLogger(__name__)

LINEAGE_PLUGINS = frozenset(
    {"train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data"}
)
SUMMARY_PLUGINS = ("scalar", "image", "histogram", "tensor", "text", "graph", "landscape")
PLUGINS = SUMMARY_PLUGINS + tuple(sorted(LINEAGE_PLUGINS))
MODES = ("train", "eval")
GRAPH_TAG = "graph/network"

# Events (from record() and add_scalar & co.) are handed to the thread in batches: one queue
# hand-off per event would cost more than encoding it. A batch leaves after this many events
# or when its first event is this old (checked at the next write); flush()/close() send it.
_BATCH_EVENTS = 256
_BATCH_SECONDS = 0.2

_record_ids = itertools.count()

LineageHandler = Callable[[str, str, Any], None]


class SummaryRecord:
    """Writes summaries of a run to TensorBoard event files in ``log_dir``.

    Args:
        log_dir: directory of the event files (created if missing).
        file_prefix, file_suffix: file names are
            ``<file_prefix>.out.tfevents.<unix_ts>.<host>.<pid>.<n><file_suffix>``.
        network: a module whose structure is written (as text) with the first ``record``.
        max_file_size: bytes per file; the writer rolls over to a new file before passing it.
        raise_exception: raise write errors on the next ``flush``/``close``/``record``
            (True) or log them and go on (False, the default, as in MindSpore).
        export_options: ``{"tensor_format": "npy"}`` also writes each tensor as .npy under
            ``log_dir/export_<ts>/tensor/``.
        min_free_bytes: the disk-space guard's margin.
        histogram_bins: buckets per histogram.

    One record is used from one thread (the training loop's); its own writer thread does the
    encoding and I/O. Open one record per thread, or per run, when several write at once.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        file_prefix: str = "events",
        file_suffix: str = "",
        network: Any = None,
        max_file_size: int | None = None,
        raise_exception: bool = False,
        export_options: dict[str, Any] | None = None,
        *,
        min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
        histogram_bins: int = encoders.DEFAULT_BINS,
    ) -> None:
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir expected a str or path, received: {type(log_dir).__name__}")
        for pname, pval in (("file_prefix", file_prefix), ("file_suffix", file_suffix)):
            if not isinstance(pval, str):
                raise TypeError(f"{pname} expected a str, received: {type(pval).__name__}")
            if "/" in pval or os.sep in pval:
                raise ValueError(f"{pname} must not contain a path separator, received: {pval!r}")
        check_positive_int("max_file_size", max_file_size, allow_none=True)
        if not isinstance(raise_exception, bool):
            raise TypeError(
                f"raise_exception expected a bool, received: {type(raise_exception).__name__}"
            )
        if (
            isinstance(min_free_bytes, bool)
            or not isinstance(min_free_bytes, int)
            or min_free_bytes < 0
        ):
            raise ValueError(f"min_free_bytes expected an int >= 0, received: {min_free_bytes!r}")
        check_positive_int("histogram_bins", histogram_bins)
        self._export_options = process_export_options(export_options)
        self._log_dir = Path(writable_dir(log_dir, "log_dir"))
        self._staged = is_object_url(log_dir)
        self._bins = histogram_bins
        self._raise = raise_exception
        file_writer = EventFileWriter(
            self._log_dir, file_prefix, file_suffix, max_file_size, min_free_bytes, True
        )
        self._writer = AsyncEventWriter(
            file_writer,
            raise_errors=raise_exception,
            name=f"trainledger-summary-{next(_record_ids)}",
        )
        self._export_dir: Path | None = None
        if self._export_options:
            self._export_dir = self._log_dir / f"export_{int(time.time())}"
        self._pending: dict[tuple[str, str], Any] = {}
        self._batch: list[Entry] = []
        self._batch_started = 0.0
        self._network = network
        self._graph_written = False
        self._mode = "train"
        self._closed = False
        self.lineage_values: dict[str, dict[str, Any]] = {}
        self.lineage_handler: LineageHandler | None = None
        # A record the user forgets to close still gets its last events written, at garbage
        # collection or at interpreter exit (weakref.finalize runs atexit too).
        self._finalizer = weakref.finalize(
            self, close_forgotten, self._writer, self._batch, self._bins, self._export_dir
        )

    # --- properties ---------------------------------------------------------------------
    @property
    def log_dir(self) -> Path:
        return self._log_dir

    @property
    def file_path(self) -> Path:
        """The event file being written now (changes on rollover)."""
        return self._writer.file_writer.path

    @property
    def file_paths(self) -> list[Path]:
        """Every event file this record has created, oldest first."""
        return list(self._writer.file_writer.paths)

    @property
    def export_dir(self) -> Path | None:
        return self._export_dir

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def histogram_bins(self) -> int:
        """Buckets per histogram (for values bucketed before they are added)."""
        return self._bins

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def staged(self) -> int:
        """How many values wait for the next ``record``."""
        return len(self._pending)

    def mark_resumed(self) -> None:
        """This record resumes a run that an earlier process wrote (``initial_epoch > 0``):
        its first values are preceded by ``SessionLog.START`` at their step, so TensorBoard and
        ``read_scalars`` drop the earlier points at and after it (``summary.series``). Call
        it before the first ``record``; ``SummaryCollector`` does so for a resumed training."""
        self._writer.file_writer.resumes = True

    def set_mode(self, mode: str) -> None:
        """``"train"`` or ``"eval"``; kept for the callbacks (e.g. which lineage to write)."""
        if mode not in MODES:
            raise ValueError(f"mode expected one of {list(MODES)}, received: {mode!r}")
        self._mode = mode

    # --- MindSpore API --------------------------------------------------------------------
    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Stage ``value`` under ``plugin``/``name`` for the next ``record``.

        The value is checked and copied now (a tensor changed later does not change what is
        written); the expensive encoding (PNG, histogram) happens on the writer thread. A later
        value for the same plugin and name replaces an unrecorded earlier one.
        """
        if plugin == "scalar" and type(value) is float and type(name) is str and name:
            self._pending[("scalar", name)] = value  # the per-step hot path: nothing to check
            return
        if plugin not in PLUGINS:
            raise ValueError(f"plugin expected one of {list(PLUGINS)}, received: {plugin!r}")
        _check_tag(name)
        if plugin in LINEAGE_PLUGINS:
            self.lineage_values.setdefault(plugin, {})[name] = value
            if self.lineage_handler is not None:
                self.lineage_handler(plugin, name, value)
            return
        self._pending[(plugin, name)] = self._prepare(plugin, name, value)

    def _prepare(self, plugin: str, name: str, value: Any) -> Any:
        """Validate and snapshot ``value`` in the caller's thread (so errors surface here)."""
        if plugin == "scalar":
            if type(value) is float:
                return value
            return encoders.scalar(name, value).simple_value
        if plugin == "image":
            return encoders.to_hwc_uint8(value)
        if plugin == "histogram" and isinstance(value, encoders.BucketCounts):
            return value  # bucketed where the values live (callbacks/tensor_buckets.py)
        if plugin in ("histogram", "tensor"):
            arr = encoders.to_numpy(value)
            if plugin == "histogram" and arr.dtype.kind not in "biuf":
                raise TypeError(
                    f"histogram {name!r} expected real numbers, received dtype {arr.dtype}"
                )
            return arr
        if plugin in VALUE_CHECKS:  # graph (GraphDef bytes), landscape (a dict)
            return VALUE_CHECKS[plugin](name, value)
        if not isinstance(value, str):  # text
            raise TypeError(f"{plugin} {name!r} expected a str, received: {type(value).__name__}")
        return value

    def record(
        self,
        step: int,
        train_network: Any = None,
        plugin_filter: Callable[[str], bool] | None = None,
    ) -> bool:
        """Write the values added since the last ``record`` as one event for ``step``.

        The event is queued for the writer thread (in batches, see ``_BATCH_EVENTS``);
        ``flush()`` waits until it is on disk.

        ``plugin_filter(plugin) -> bool`` selects which staged plugins are written; the others
        are discarded with the step (as in MindSpore). The network (``train_network`` or the
        constructor's ``network``) is written once, as a module-structure GraphDef, first.
        """
        if type(step) is not int:
            step = _check_step(step)
        if self._closed or self._raise:
            self._check_open()
        if not self._graph_written:
            network = train_network if train_network is not None else self._network
            if network is not None:
                self._pending.setdefault(("graph", GRAPH_TAG), graph_def.module_graph_def(network))
                self._graph_written = True
        pending = self._pending
        if plugin_filter is None:
            values = [(plugin, name, value) for (plugin, name), value in pending.items()]
        else:
            values = [
                (plugin, name, value)
                for (plugin, name), value in pending.items()
                if plugin_filter(plugin)
            ]
        pending.clear()
        if values:
            self._queue_entry((step, time.time(), values))
        return True

    def record_scalars(self, step: int, scalars: list[tuple[str, Any]]) -> None:
        """Write ``(tag, value)`` scalars as one event for ``step`` now, leaving staged values
        alone: SummaryCollector's per-step path (fewer calls than add_value + record)."""
        if type(step) is not int:
            step = _check_step(step)
        if self._closed or self._raise:
            self._check_open()
        values = []
        for tag, value in scalars:
            if type(value) is not float or type(tag) is not str or not tag:
                value = encoders.scalar(_check_tag(tag), value).simple_value
            values.append(("scalar", tag, value))
        if values:
            self._queue_entry((step, time.time(), values))

    def record_scalar_rows(self, tags: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        """Write many steps of the same scalars: each row ``(step, wall_time, *values)``
        (ints, floats; one value per tag) becomes one event. Staged values are left alone.

        The cheapest way to log a few scalars at every step (SummaryCollector buffers rows
        and hands them over in batches); rows keep their order relative to other writes.
        """
        if self._closed or self._raise:
            self._check_open()
        for tag in tags:
            _check_tag(tag)
        if not rows:
            return
        tags, rows = tuple(tags), list(rows)
        _check_rows(tags, rows)
        self.hand_over_scalar_rows(tags, rows)

    def hand_over_scalar_rows(self, tags: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        """``record_scalar_rows`` without its checks, for rows the caller built itself and
        guarantees: non-empty str tags, rows ``(int step, float wall_time, float values...)``
        (SummaryCollector's per-step rows). The rows are handed over: the caller must not
        touch them again. Why: checking them again costs per row, in the training loop."""
        if self._closed or self._raise:
            self._check_open()
        self._submit_batch()  # keep file order: earlier events first
        self._writer.submit_framed(
            lambda: scalar_rows_records(tags, rows), lambda tally: tally.add_rows(tags, rows)
        )

    def flush(self, fsync: bool = True, wait: bool = True) -> None:
        """Return when everything recorded so far is written and fsynced.

        ``fsync=False`` waits only until the bytes are handed to the OS: readers (TensorBoard,
        a live view) see them, but they would not survive a power loss. That costs
        microseconds instead of an fsync's milliseconds, for callers that flush often.
        ``wait=False`` returns at once: the writer thread writes (and fsyncs) what was
        recorded before this call as soon as it gets to it, and a failure is raised by the
        next ``flush`` or ``close``. For a training loop, which must not wait for the disk.
        """
        self._check_open()
        self._submit_batch()
        self._writer.flush(fsync, wait)

    def close(self) -> None:
        """Write what is left, fsync, close the file and stop the thread. Idempotent.

        A record opened on an ``s3://`` URL then uploads what it wrote, and raises
        ``ObjectStoreError`` when that fails (the file stays in staging, ``trainledger sync``)."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        try:
            self._submit_batch()
        finally:
            self._writer.close()
        if self._staged:
            flush_mirrors()

    def __enter__(self) -> SummaryRecord:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- direct writes (TensorBoard-writer style) ------------------------------------------
    def add_scalar(self, tag: str, value: Any, step: int, wall_time: float | None = None) -> None:
        """Write one scalar for ``step`` now (batched to the writer thread)."""
        if type(value) is not float:
            value = encoders.scalar(_check_tag(tag), value).simple_value
        self._direct(tag, "scalar", value, step, wall_time)

    def add_histogram(
        self, tag: str, values: Any, step: int, wall_time: float | None = None
    ) -> None:
        """Write one histogram of ``values`` for ``step``."""
        self._direct(tag, "histogram", self._prepare("histogram", tag, values), step, wall_time)

    def add_image(
        self,
        tag: str,
        img: Any,
        step: int,
        dataformats: str | None = None,
        wall_time: float | None = None,
    ) -> None:
        """Write one image (HW, CHW, HWC; a NCHW/NHWC batch becomes a grid) for ``step``."""
        self._direct(tag, "image", encoders.to_hwc_uint8(img, dataformats), step, wall_time)

    def add_text(self, tag: str, text: str, step: int, wall_time: float | None = None) -> None:
        """Write one text summary (TensorBoard's text plugin) for ``step``."""
        self._direct(tag, "text", self._prepare("text", tag, text), step, wall_time)

    def add_tensor(self, tag: str, value: Any, step: int, wall_time: float | None = None) -> None:
        """Write one raw tensor for ``step`` (and export it when ``tensor_format`` is set)."""
        self._direct(tag, "tensor", self._prepare("tensor", tag, value), step, wall_time)

    def _direct(
        self, tag: str, plugin: str, value: Any, step: int, wall_time: float | None
    ) -> None:
        if type(step) is not int:
            step = _check_step(step)
        if type(tag) is not str or not tag:
            _check_tag(tag)
        if self._closed:
            self._check_open()
        now = time.time()
        self._queue_entry(
            (step, now if wall_time is None else float(wall_time), [(plugin, tag, value)]), now
        )

    def _queue_entry(self, entry: Entry, now: float | None = None) -> None:
        """Add an event to the current batch; hand the batch over when full or old."""
        if now is None:
            now = time.time()
        batch = self._batch
        if not batch:
            self._batch_started = now
        batch.append(entry)
        if len(batch) >= _BATCH_EVENTS or now - self._batch_started >= _BATCH_SECONDS:
            self._submit_batch()

    # --- internals --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise SummaryError(f"SummaryRecord for {self._log_dir} is closed")
        if self._raise and self._writer.pending_error() is not None:
            self._writer.flush()  # raises the writer thread's error once

    def _submit_batch(self) -> None:
        submit_entries(self._writer, self._batch, self._bins, self._export_dir)
