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


class EventFileWriter:
    """Appends framed payloads to the current event file, rolling over by size.

    Not thread-safe: after construction only one thread (the background worker) uses it.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        file_prefix: str = "events",
        file_suffix: str = "",
        max_file_size: int | None = None,
        min_free_bytes: int = DEFAULT_MIN_FREE_BYTES,
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
        if self.resumes:
            step = _first_summary_step(chunks)
            if step is not None:  # before the resumed session's first values
                self.resumes = False
                record = frame(session_start_event(step, time.time()).SerializeToString())
                chunks = [(record, len(record)), *chunks]
        self._check_space(sum(len(blob) for blob, _ in chunks))
        limit = self.max_file_size
        fh = self._fh
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

    def flush(self, fsync: bool = True) -> None:
        """Push buffered bytes to the OS and (by default) fsync them."""
        if self._fh is not None:
            self._fh.flush()
            if fsync:
                os.fsync(self._fh.fileno())

    def _sync_and_close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fh.close()

    def close(self) -> None:
        """Flush, fsync and close the current file. Idempotent."""
        self._sync_and_close()


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

    def submit(self, produce: Callable[[], Sequence[bytes]]) -> None:
        """Queue ``produce``; its payloads are framed and written on the worker thread."""
        writer = self.file_writer
        self._worker.submit(self._guarded(lambda: writer.write(produce())))

    def submit_framed(self, produce: Callable[[], Sequence[tuple[bytes, int]]]) -> None:
        """Queue ``produce``; it returns framed chunks (see ``EventFileWriter.write_framed``)."""
        writer = self.file_writer
        self._worker.submit(self._guarded(lambda: writer.write_framed(produce())))

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
