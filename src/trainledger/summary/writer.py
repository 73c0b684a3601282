"""Event files on disk: opening them, size rollover, the disk-space guard, fsync.

``EventFileWriter`` is synchronous and owns the open file; ``AsyncEventWriter`` runs it on the
one background-writer pattern of the package (``trainledger.storage.BackgroundWorker``),
so encoding and writing happen off the training thread. Payloads arrive already serialised:
this module never builds messages (docs/development.md, convention 6); file names and record
framing are ``trainledger.storage``'s.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from trainledger.errors import DiskSpaceError, SummaryError, SummaryWriteError
from trainledger.storage import (
    HEADER_SIZE,
    BackgroundWorker,
    event_file_name,
    event_file_order,
    frame,
    is_event_file_name,
    run_files,
)
from trainledger.summary.encoders import file_version_event, session_start_event
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.series_sidecar import SeriesTally, remove_sidecar

__all__ = [
    "DEFAULT_MIN_FREE_BYTES",
    "EventFileWriter",
    "AsyncEventWriter",
]

logger = logging.getLogger(__name__)

# The guard refuses a write that would leave less than this much free space, so the disk never
# fills (which would also break the checkpoints and logs of the run).
DEFAULT_MIN_FREE_BYTES = 64 * 1024 * 1024
# Free space is re-checked after this many bytes (statvfs on every small record is wasteful);
# it is far below the margin, so the guard still fires before the disk is full.
_CHECK_EVERY_BYTES = 1024 * 1024


def _last_stamp(log_dir: Path) -> int:
    """The latest ``<unix_ts>`` in the names of the event files in ``log_dir`` (0: none)."""
    stamps = [event_file_order(e.name)[0] for e in run_files(log_dir, is_event_file_name)]
    return max(stamps, default=0)


def _first_summary_step(chunks: Sequence[tuple[bytes, int]]) -> int | None:
    """The step of the first event with summary values among framed records, or None."""
    for blob, size in chunks:
        for start in range(0, len(blob), size):
            length = int.from_bytes(blob[start : start + 8], "little")
            payload = blob[start + HEADER_SIZE : start + HEADER_SIZE + length]
            try:
                event = pb.Event.FromString(payload)
            except Exception:  # noqa: BLE001 - not an event: look further
                continue
            if event.summary.value:
                return int(event.step)
    return None


#: what adds a batch's scalars to a writer's tally (``SeriesTally.add_points``/``add_rows``)
Tallying = Callable[[SeriesTally], None]


class EventFileWriter:
    """Appends framed payloads to the current event file, rolling over by size.

    ``series_sidecar``: keep the statistics of the scalars written (``count``) and write them
    next to the files at each flush and at close (``summary/series_sidecar.py``); only for a
    caller that tells it every scalar it writes (``SummaryRecord``).

    Not thread-safe: after construction only one thread (the background worker) uses it.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        file_prefix: str = "events",
        file_suffix: str = "",
        max_file_size: int | None = None,
        min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
        series_sidecar: bool = False,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.file_prefix = file_prefix
        self.file_suffix = file_suffix
        self.max_file_size = max_file_size
        self.min_free_bytes = min_free_bytes
        self.paths: list[Path] = []
        self._fh: BinaryIO | None = None
        self._size = 0
        self._header_size = 0
        self._unchecked = 0
        self._sizes: dict[str, int] = {}  # each file's name -> its bytes (the open one's: _size)
        self.tally: SeriesTally | None = SeriesTally() if series_sidecar else None
        self._unsaved = False  # bytes written since the sidecar was last written
        #: write ``SessionLog.START`` before the first values (``SummaryRecord.mark_resumed``)
        self.resumes = False
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._check_space(0, force=True)
            self._open_new_file(after_existing=True)
        except DiskSpaceError:
            raise
        except OSError as exc:
            raise SummaryWriteError(
                f"cannot create an event file in {self.log_dir}: {type(exc).__name__}: {exc}"
            ) from exc

    @property
    def path(self) -> Path:
        """The file being written now."""
        return self.paths[-1]

    def _check_space(self, nbytes: int, force: bool = False) -> None:
        self._unchecked += nbytes
        if not force and self._unchecked < _CHECK_EVERY_BYTES and nbytes < _CHECK_EVERY_BYTES:
            return
        self._unchecked = 0
        free = shutil.disk_usage(self.log_dir).free
        if free - nbytes < self.min_free_bytes:
            raise DiskSpaceError(
                f"not writing summary data to {self.log_dir}: {free} bytes free, writing "
                f"{nbytes} more bytes would leave less than the {self.min_free_bytes}-byte "
                f"margin; free some space (or lower min_free_bytes)"
            )

    def _open_new_file(self, after_existing: bool = False) -> BinaryIO:
        """A new event file; ``after_existing``: named after every event file already in the
        directory (a later second if need be), so readers (ours and TensorBoard's, which
        order files by name) read a new writer's file after the files before it."""
        if self._fh is not None:
            self._sync_and_close()
            self._sizes[self.path.name] = self._size
        now = time.time()
        stamp = max(now, _last_stamp(self.log_dir) + 1) if after_existing else now
        header = frame(file_version_event(now).SerializeToString())
        while True:
            name = event_file_name(self.file_prefix, self.file_suffix, wall_time=stamp)
            path = self.log_dir / name
            try:
                fh = open(path, "xb")  # noqa: SIM115 - kept open across calls
            except FileExistsError:
                continue
            break
        fh.write(header)
        fh.flush()
        self._fh = fh
        self.paths.append(path)
        self._size = self._header_size = len(header)
        return fh

    def write(self, payloads: Sequence[bytes]) -> None:
        """Frame and append ``payloads``; starts a new file before one would pass the limit."""
        self.write_framed([(rec, len(rec)) for rec in map(frame, payloads)])

    def write_framed(self, chunks: Sequence[tuple[bytes, int]]) -> None:
        """Append already framed records, given as chunks ``(records, record_size)`` of
        equal-size records (``scalar_rows_records`` makes them); rolls over between records."""
        if self._fh is None:
            raise SummaryWriteError(f"event file writer for {self.log_dir} is closed")
        try:
            self._write_framed(chunks)
        except BaseException:
            self._stop_tally()  # some bytes may be in the file that it does not know of
            raise

    def _write_framed(self, chunks: Sequence[tuple[bytes, int]]) -> None:
        fh = self._fh
        assert fh is not None  # (checked by write_framed)
        if self.resumes:
            step = _first_summary_step(chunks)
            if step is not None:  # before the resumed session's first values
                self.resumes = False
                if self.tally is not None:
                    self.tally.start_step = step
                record = frame(session_start_event(step, time.time()).SerializeToString())
                chunks = [(record, len(record)), *chunks]
        self._check_space(sum(len(blob) for blob, _ in chunks))
        limit = self.max_file_size
        for blob, size in chunks:
            if limit is None or self._size + len(blob) <= limit:
                fh.write(blob)
                self._size += len(blob)
                continue
            for start in range(0, len(blob), size):
                # A record larger than the limit still gets written, alone in a fresh file:
                # splitting it would make it unreadable, dropping it would lose data silently.
                if self._size + size > limit and self._size > self._header_size:
                    fh = self._open_new_file()
                fh.write(blob[start : start + size])
                self._size += size
        # Hand the bytes to the OS (no fsync) so live readers see whole records promptly.
        fh.flush()
        self._unsaved = True

    def count(self, tallying: Tallying | None) -> None:
        """Add what was just written to the tally (a failure stops it: see ``_stop_tally``)."""
        if tallying is not None and self.tally is not None:
            try:
                tallying(self.tally)
            except (OverflowError, TypeError, ValueError):  # (a step beyond int64)
                self._stop_tally()

    def _stop_tally(self) -> None:
        """Keep no statistics from now on, and remove the sidecar: an index reads the files."""
        if self.tally is not None:
            self.tally = None
            remove_sidecar(self.log_dir, self.paths[0].name)

    def _write_sidecar(self) -> None:
        if self.tally is None or not self._unsaved:
            return
        self._unsaved = False
        files = [*self._sizes.items()]
        if self._fh is not None:
            files.append((self.path.name, self._size))
        try:
            self.tally.write(self.log_dir, files)
        except OSError as exc:  # an older sidecar, or none, costs an index a read, not data
            logger.debug("series sidecar in %s not written: %s", self.log_dir, exc)

    def flush(self, fsync: bool = True) -> None:
        """Push buffered bytes to the OS and (by default) fsync them; then the sidecar."""
        if self._fh is not None:
            self._fh.flush()
            if fsync:
                os.fsync(self._fh.fileno())
        self._write_sidecar()

    def _sync_and_close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fh.close()

    def close(self) -> None:
        """Flush, fsync and close the current file, then write the sidecar. Idempotent."""
        if self._fh is not None:
            self._sync_and_close()
            self._sizes[self.path.name] = self._size
            self._write_sidecar()


class AsyncEventWriter:
    """An ``EventFileWriter`` driven by one background thread with a bounded queue.

    ``submit(produce)`` queues a function that returns payloads; it runs on the worker thread,
    so encoding (PNG, histograms) stays off the training thread. With ``raise_errors=False``
    a failed write is logged at once and the run continues (MindSpore's
    ``raise_exception=False``); otherwise it is raised on the next ``flush()``/``close()``.
    """

    def __init__(
        self,
        file_writer: EventFileWriter,
        raise_errors: bool = False,
        name: str = "trainledger-summary",
        maxsize: int = 256,
    ) -> None:
        self.file_writer = file_writer
        self.raise_errors = raise_errors
        self._worker = BackgroundWorker(name, maxsize=maxsize)
        self._closed = False

    def _guarded(self, task: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                task()
            except SummaryError as exc:
                self._fail(exc)
            except (OSError, ValueError, TypeError) as exc:
                err = SummaryWriteError(
                    f"writing summary data to {self.file_writer.log_dir} failed: "
                    f"{type(exc).__name__}: {exc}"
                )
                err.__cause__ = exc
                self._fail(err)

        return run

    def _fail(self, exc: SummaryError) -> None:
        if self.raise_errors:
            raise exc
        logger.error("%s", exc)

    def submit(
        self, produce: Callable[[], Sequence[bytes]], tallying: Tallying | None = None
    ) -> None:
        """Queue ``produce``; its payloads are framed and written on the worker thread, then
        ``tallying`` adds their scalars to the series statistics (``EventFileWriter.count``)."""
        writer = self.file_writer

        def task() -> None:
            writer.write(produce())
            writer.count(tallying)

        self._worker.submit(self._guarded(task))

    def submit_framed(
        self, produce: Callable[[], Sequence[tuple[bytes, int]]], tallying: Tallying | None = None
    ) -> None:
        """Queue ``produce``; it returns framed chunks (see ``EventFileWriter.write_framed``);
        ``tallying`` as for ``submit``."""
        writer = self.file_writer

        def task() -> None:
            writer.write_framed(produce())
            writer.count(tallying)

        self._worker.submit(self._guarded(task))

    def pending_error(self) -> BaseException | None:
        return self._worker.pending_error()

    def flush(self, fsync: bool = True, wait: bool = True) -> None:
        """Return once everything submitted is written (and fsynced, unless ``fsync=False``);
        raise a pending error. ``wait=False`` only queues the flush (and still raises an
        error kept from an earlier task)."""
        if not self._closed:
            writer = self.file_writer
            self._worker.submit(self._guarded(lambda: writer.flush(fsync)))
        if wait:
            self._worker.flush()
        else:
            self._worker.raise_pending()

    def close(self) -> None:
        """Write everything, fsync, close the file and stop the thread. Idempotent."""
        if not self._closed:
            self._closed = True
            self._worker.submit(self._guarded(self.file_writer.close))
        self._worker.close()
