"""Tail a growing directory of JSONL or CSV files as a stream of batches.

The producer (another process, another machine writing to shared storage) appends lines to
files and starts new files; this source reads new lines as they appear, in file-name order.
Why file names decide the order: it is the one order every writer and reader agree on without
coordination, so producers should name files so that sorting them sorts them in time
(``part-000001.jsonl``, or a zero-padded timestamp).

Only complete lines are read: a line without its newline yet is being written and waits. The
producer signals a clean end by creating the ``end_marker`` file (``_END``); the source then
reads what is left (including a last unterminated line) and stops. Alternatively
``idle_timeout`` ends the stream after that many seconds without a new record, and ``close()``
(from any thread) ends it at once.

Delivery (at-least-once): with ``offsets_path``, the offsets written there (atomically) cover
only batches that finished training. A batch counts as trained when the consumer asks for the
next one, or calls ``acknowledge()`` (``RecModel.online_train`` does at every clean stop). A
restart after a crash re-reads, never skips: it trains again at most what was trained since
the last commit (``commit_interval`` seconds) plus the batch in flight. Files are recognised
by identity (device, inode, CRC-32 of the bytes read), not by size: a replaced, truncated or
rewritten file is read again from its start with a ``StreamWarning``, and a file renamed while
tailed keeps its position (docs/online.md).
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trainledger.data.batcher import BatchedSource, RecordBatcher, StreamWarning
from trainledger.data.line_decoding import SKIP, decode_line
from trainledger.data.offsets import (
    FileMark,
    load_offsets,
    offsets_document,
    saved_checkpoint,
)
from trainledger.data.tailed_file import TailedFile, ident_at
from trainledger.storage import atomic_write_bytes, is_temp_name

__all__ = ["FileTailSource"]


class FileTailSource(BatchedSource):
    """A one-shot iterator of batches read from the new lines of files in ``directory``.

    Args:
        directory: the directory the producer writes into (may not exist yet).
        pattern: glob of the files to read (``*.jsonl`` or ``*.csv``).
        fmt: ``"jsonl"`` (one JSON value per line) or ``"csv"`` (first line of each file is
            the header, unless ``csv_fieldnames`` is given); inferred from ``pattern``.
        batch_size, collate_fn, parse, allow_nonfinite: as in ``QueueStream``.
        offsets_path: where to persist the offsets of trained batches (JSON); None keeps them
            in memory only. A missing file starts from the beginning of every file, with a
            ``StreamWarning`` when the directory already holds files (was it deleted?).
        commit_interval: seconds between offset commits while training goes on (the bound
            on what a crash makes the next run train again).
        poll_interval: seconds between directory scans when no new line is there.
        idle_timeout: end the stream after this many seconds without a new record.
        end_marker: file name whose presence means "the producer is done".
        csv_fieldnames: field names of headerless CSV files.

    Bad lines (invalid JSON, a CSV row with the wrong number of fields, a non-finite number
    unless ``allow_nonfinite``, a record ``parse`` or ``collate_fn`` rejects) are counted in
    ``bad_records`` and skipped with a ``BadRecordWarning``. CSV values that look like numbers
    become ints or floats; a CSV row must fit on one line. Every tailed file stays open while
    its name matches ``pattern``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        pattern: str = "*.jsonl",
        fmt: str | None = None,
        batch_size: int = 1,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        parse: Callable[[Any], Any] | None = None,
        offsets_path: str | os.PathLike[str] | None = None,
        commit_interval: float = 5.0,
        poll_interval: float = 0.2,
        idle_timeout: float | None = None,
        end_marker: str | None = "_END",
        csv_fieldnames: list[str] | None = None,
        allow_nonfinite: bool = False,
    ) -> None:
        if fmt is None:
            fmt = "csv" if pattern.lower().endswith(".csv") else "jsonl"
        if fmt not in ("jsonl", "csv"):
            raise ValueError(f"fmt expected 'jsonl' or 'csv', received: {fmt!r}")
        for name, value in (("commit_interval", commit_interval), ("poll_interval", poll_interval)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} expected a positive number, received: {value!r}")
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError(
                f"idle_timeout expected a positive number or None, received: {idle_timeout!r}"
            )
        self.directory = Path(directory)
        self.pattern = pattern
        self.fmt = fmt
        self.offsets_path = Path(offsets_path) if offsets_path is not None else None
        self.commit_interval = float(commit_interval)
        self.poll_interval = float(poll_interval)
        self.idle_timeout = idle_timeout
        self.end_marker = end_marker
        self.csv_fieldnames = list(csv_fieldnames) if csv_fieldnames is not None else None
        name = f"FileTailSource({directory})"
        self._batcher = RecordBatcher(batch_size, collate_fn, parse, name, allow_nonfinite)
        self._closed = threading.Event()
        self._commit_lock = threading.Lock()
        self._in_next = False
        self._files: dict[str, TailedFile] = {}  # open files by current name
        self._resume: dict[str, FileMark] = {}  # loaded marks not yet matched to a file
        # marks covered by batches handed out / that finished training; each is replaced,
        # never changed in place, so "the same object" means "nothing new was trained"
        self._handed: dict[str, FileMark] = {}
        self._trained = self._handed
        self._dirty: set[str] = set()
        self._known_files: list[str] = []
        self._last_commit = time.monotonic()
        self._uncommitted = False  # batches trained since the last commit
        self._finished = False
        self._held = False  # hold_commits(): only acknowledge() moves the committed offsets
        self.records_read = 0
        self.resumed_from: dict[str, int] = {}
        #: the checkpoint holding exactly the records before the committed offsets: resume
        #: the model from it (``online_train`` with a ``ModelCheckpoint`` records it)
        self.committed_checkpoint: str | None = None
        if self.offsets_path is not None and self.offsets_path.exists():
            self._resume = load_offsets(self.offsets_path, self.directory, pattern)
            self.committed_checkpoint = saved_checkpoint(self.offsets_path)
            self._trained = self._handed = dict(self._resume)
            self.resumed_from = {n: m.offset for n, m in self._resume.items()}
        elif self.offsets_path is not None and self._list_names():
            warnings.warn(
                f"{name}: no offsets file at {self.offsets_path}; reading the "
                f"{len(self._known_files)} files already there from their start",
                StreamWarning,
                stacklevel=2,
            )
        self._records = self._iter_records()

    # --- public --------------------------------------------------------------------------
    @property
    def root(self) -> str:
        """The tailed directory (lineage records it as the dataset path)."""
        return str(self.directory)

    @property
    def offsets(self) -> dict[str, int]:
        """Byte offset per file name covered by the batches that finished training."""
        return {n: m.offset for n, m in self._trained.items()}

    def acknowledge(
        self, snapshot: dict[str, FileMark] | None = None, checkpoint: str | None = None
    ) -> None:
        """The batches handed out so far (or up to ``snapshot``) finished training, or are in
        ``checkpoint``, now on disk: commit their offsets (with the checkpoint's name) now."""
        self._trained = dict(self._handed if snapshot is None else snapshot)
        if checkpoint is not None:
            self.committed_checkpoint = os.path.abspath(checkpoint)
        self.commit()

    def snapshot(self) -> dict[str, FileMark]:
        """An opaque mark of what was handed out so far (for ``acknowledge`` later): the
        trainer takes one after each step, and acknowledges the one of a checkpoint's step
        once that checkpoint is on disk. Costs nothing: the marks are never changed in place."""
        return self._handed

    def hold_commits(self) -> None:
        """Commit only what ``acknowledge`` is given (checkpoints), never what a request for
        the next batch implies: ``RecModel.online_train`` calls it when a ``ModelCheckpoint``
        runs, so the offsets never run ahead of the newest checkpoint."""
        self._held = True

    def commit(self) -> None:
        """Write the offsets of trained batches to ``offsets_path`` now (atomically)."""
        with self._commit_lock:
            self._commit()

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        self._uncommitted = False
        if self.offsets_path is None:
            return
        known = set(self._known_files)
        trained = dict(self._trained)  # a snapshot: close() may run in another thread
        marks = {n: m for n, m in sorted(trained.items()) if n in known or not known}
        data = offsets_document(
            self.directory, self.pattern, marks, self.bad_records, self.committed_checkpoint
        )
        self.offsets_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.offsets_path, data)

    def close(self) -> None:
        """End the stream and commit the offsets of trained batches (thread- and signal-safe).

        While the consumer is inside ``next()`` (another thread, or a signal handler that
        interrupted it), the consumer commits on its way out instead.
        """
        self._closed.set()
        if not self._in_next and self._commit_lock.acquire(blocking=False):
            try:
                self._commit()
            finally:
                self._commit_lock.release()

    def __iter__(self) -> FileTailSource:
        return self

    def __next__(self) -> Any:
        self._in_next = True
        try:
            self._previous_trained()
            return self._next_batch()
        finally:
            self._in_next = False

    def _next_batch(self) -> Any:
        if not self._finished:
            for record, where in self._records:
                batch = self._batcher.add(record, where)
                if batch is not None:
                    self._mark_handed()
                    return batch
            self._finished = True
            batch = self._batcher.flush()
            self._mark_handed()
            if batch is not None:
                return batch
        if self._uncommitted or self._closed.is_set():
            self.commit()
        raise StopIteration

    # --- internals -----------------------------------------------------------------------
    def _previous_trained(self) -> None:
        """The consumer asks for a batch only once the one before finished training."""
        if self._held:
            return
        if self._trained is not self._handed:
            self._trained = self._handed
            self._uncommitted = True
        if self._uncommitted and time.monotonic() - self._last_commit >= self.commit_interval:
            self.commit()

    def _mark_handed(self) -> None:
        if self._dirty:
            handed = dict(self._handed)
            for name in self._dirty:
                tailed = self._files.get(name)
                if tailed is not None:
                    handed[name] = tailed.mark()
            self._handed = handed
            self._dirty.clear()

    def _list_names(self) -> list[str]:
        try:
            names = [
                e.name
                for e in os.scandir(self.directory)
                if e.is_file()
                and fnmatch.fnmatch(e.name, self.pattern)
                and not is_temp_name(e.name)
                and e.name != self.end_marker
                and (self.offsets_path is None or Path(e.path) != self.offsets_path)
            ]
        except FileNotFoundError:
            names = []
        names.sort()
        self._known_files = names
        return names

    def _scan(self) -> list[str]:
        """List the files, following renames and replacements by identity."""
        names = self._list_names()
        listed = set(names)
        gone = {n: t for n, t in self._files.items() if n not in listed}
        by_ident = {t.ident: n for n, t in gone.items()}
        for name in names:
            tailed = self._files.get(name)
            if tailed is not None:
                if ident_at(self.directory / name) in (tailed.ident, None):
                    continue
                gone[name + "\0replaced"] = self._files.pop(name)
                self._warn(name, "was replaced by another file")
                self._reset_marks(name)
            opened = TailedFile.open(self.directory / name)
            if opened is None:
                continue
            old = by_ident.pop(opened.ident, None)
            if old is not None:  # renamed within the pattern: go on where it was
                opened.close()
                self._rename(old, name)
                del gone[old]
            else:
                self._files[name] = self._start(name, opened)
        for key, tailed in gone.items():  # renamed away, removed or replaced: read what's left
            self._files.pop(key, None)
            self._drain.append((key.split("\0")[0], tailed))
        return names

    _drain: list[tuple[str, TailedFile]]

    def _rename(self, old: str, new: str) -> None:
        self._files[new] = self._files.pop(old)
        for marks in (self._handed, self._trained):
            if old in marks:
                marks[new] = marks.pop(old)
        if old in self._dirty:
            self._dirty.discard(old)
            self._dirty.add(new)

    def _start(self, name: str, tailed: TailedFile) -> TailedFile:
        """Where a newly seen file starts: its saved mark when it still describes it."""
        mark = self._resume.pop(name, None)
        if mark is None:  # renamed while no trainer ran?
            for saved, m in list(self._resume.items()):
                if m.ident == tailed.ident and tailed.resume(m):
                    del self._resume[saved]
                    return tailed
            return tailed
        if tailed.resume(mark):
            return tailed
        self._warn(name, f"is not the file its saved offset {mark.offset} belongs to (replaced?)")
        self._reset_marks(name)
        return tailed

    def _reset_marks(self, name: str) -> None:
        self._handed = {**self._handed, name: FileMark()}
        self._trained = {**self._trained, name: FileMark()}

    def _warn(self, name: str, what: str) -> None:
        warnings.warn(
            f"FileTailSource({self.directory}): {name} {what}; reading it from its start",
            StreamWarning,
            stacklevel=5,
        )

    def _iter_records(self) -> Iterator[tuple[Any, str]]:
        self._drain = []
        last_record = time.monotonic()
        try:
            while not self._closed.is_set():
                ending = self.end_marker is not None and (self.directory / self.end_marker).exists()
                found = False
                names = self._scan()
                work = [*self._drain, *((n, self._files[n]) for n in names if n in self._files)]
                for name, tailed in work:
                    for item in self._read_file(name, tailed, final=ending):
                        found = True
                        yield item
                        if self._closed.is_set():
                            return
                for _, tailed in self._drain:
                    tailed.close()
                self._drain.clear()
                if found:
                    last_record = time.monotonic()
                    continue
                if ending:
                    return  # the marker was there before this scan, so the scan saw everything
                idle = time.monotonic() - last_record
                if self.idle_timeout is not None and idle >= self.idle_timeout:
                    return
                if self._uncommitted:
                    # Waiting for data: publish what was trained, so a producer that paces
                    # itself on the offsets file (back-pressure) sees the progress and goes on.
                    self.commit()
                self._closed.wait(self.poll_interval)
        finally:
            for tailed in self._files.values():
                tailed.close()

    def _read_file(self, name: str, tailed: TailedFile, final: bool) -> Iterator[tuple[Any, str]]:
        if tailed.rewritten():
            self._warn(name, f"changed before byte {tailed.offset} (truncated or rewritten)")
            tailed.restart()
            self._reset_marks(name)
        for raw, used in tailed.lines(final):
            start = tailed.offset
            tailed.consume(raw, used)
            self._dirty.add(name)
            if not raw.strip():
                continue
            where = f"{name}:{start}"
            record = decode_line(
                tailed,
                raw,
                where,
                is_first=start == 0,
                fmt=self.fmt,
                csv_fieldnames=self.csv_fieldnames,
                bad=self._batcher.bad,
            )
            if record is not SKIP:
                self.records_read += 1
                yield record, where
