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

Offsets: with ``offsets_path``, the byte offset reached in each file is written there
atomically (``trainledger.storage``) every ``commit_interval`` seconds, at the end
of the stream and on ``close()``, so a restarted trainer resumes where the last one stopped.
The recorded offsets cover every batch already handed out (a batch handed out but not yet
trained on before a crash is skipped on resume; records of an unfinished batch are re-read).
Files must only grow: a file shorter than its recorded offset raises ``StreamError``.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trainledger.data.batcher import BatchedSource, RecordBatcher
from trainledger.errors import StreamError
from trainledger.storage import atomic_write_bytes, is_temp_name

__all__ = ["FileTailSource"]

OFFSETS_VERSION = 1
_CHUNK = 1 << 20


class FileTailSource(BatchedSource):
    """A one-shot iterator of batches read from the new lines of files in ``directory``.

    Args:
        directory: the directory the producer writes into (may not exist yet).
        pattern: glob of the files to read (``*.jsonl`` or ``*.csv``).
        fmt: ``"jsonl"`` (one JSON value per line) or ``"csv"`` (first line of each file is
            the header, unless ``csv_fieldnames`` is given); inferred from ``pattern``.
        batch_size, collate_fn, parse: as in ``QueueStream``.
        offsets_path: where to persist read offsets (JSON); None keeps them in memory only.
        commit_interval: seconds between offset commits while batches are handed out.
        poll_interval: seconds between directory scans when no new line is there.
        idle_timeout: end the stream after this many seconds without a new record.
        end_marker: file name whose presence means "the producer is done".
        csv_fieldnames: field names of headerless CSV files.

    Bad lines (invalid JSON, a CSV row with the wrong number of fields, a record ``parse`` or
    ``collate_fn`` rejects) are counted in ``bad_records`` and skipped with a
    ``BadRecordWarning``. CSV values that look like numbers become ints or floats; a CSV row
    must fit on one line.
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
        self._batcher = RecordBatcher(batch_size, collate_fn, parse, f"FileTailSource({directory})")
        self._closed = threading.Event()
        self._commit_lock = threading.Lock()
        self._in_next = False
        self._read: dict[str, int] = {}  # offset after the last line parsed, per file
        self._delivered: dict[str, int] = {}  # offset covered by batches handed out
        self._dirty: set[str] = set()
        self._headers: dict[str, list[str]] = {}
        self._known_files: list[str] = []
        self._last_commit = time.monotonic()
        self._uncommitted = False  # batches handed out since the last commit
        self._finished = False
        self.records_read = 0
        self.resumed_from: dict[str, int] = {}
        if self.offsets_path is not None and self.offsets_path.exists():
            self._read = self._load_offsets(self.offsets_path)
            self._delivered = dict(self._read)
            self.resumed_from = dict(self._read)
        self._records = self._iter_records()

    # --- public --------------------------------------------------------------------------
    @property
    def root(self) -> str:
        """The tailed directory (lineage records it as the dataset path)."""
        return str(self.directory)

    @property
    def offsets(self) -> dict[str, int]:
        """Byte offset per file name covered by the batches handed out so far."""
        return dict(self._delivered)

    def commit(self) -> None:
        """Write the delivered offsets to ``offsets_path`` now (atomically)."""
        with self._commit_lock:
            self._commit()

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        self._uncommitted = False
        if self.offsets_path is None:
            return
        known = set(self._known_files)
        delivered = dict(self._delivered)  # a snapshot: close() may run in another thread
        offsets = {n: o for n, o in sorted(delivered.items()) if n in known or not known}
        doc = {
            "version": OFFSETS_VERSION,
            "directory": str(self.directory),
            "pattern": self.pattern,
            "offsets": offsets,
            "bad_records": self.bad_records,
        }
        self.offsets_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.offsets_path, json.dumps(doc, indent=1).encode())

    def close(self) -> None:
        """End the stream and commit the offsets (thread- and signal-safe).

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
            return self._next_batch()
        finally:
            self._in_next = False

    def _next_batch(self) -> Any:
        if not self._finished:
            for record, where in self._records:
                batch = self._batcher.add(record, where)
                if batch is not None:
                    self._mark_delivered()
                    return batch
            self._finished = True
            batch = self._batcher.flush()
            self._mark_delivered()
            self.commit()
            if batch is not None:
                return batch
        raise StopIteration

    # --- internals -----------------------------------------------------------------------
    def _mark_delivered(self) -> None:
        for name in self._dirty:
            self._delivered[name] = self._read[name]
            self._uncommitted = True
        self._dirty.clear()
        if time.monotonic() - self._last_commit >= self.commit_interval:
            self.commit()

    @staticmethod
    def _load_offsets(path: Path) -> dict[str, int]:
        try:
            doc = json.loads(path.read_text())
            offsets = doc["offsets"]
            if doc.get("version") != OFFSETS_VERSION or not isinstance(offsets, dict):
                raise ValueError(f"unknown offsets document version {doc.get('version')!r}")
            result = {str(k): int(v) for k, v in offsets.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StreamError(
                f"offsets file {path} expected a trainledger offsets document, "
                f"received unreadable content ({exc})"
            ) from exc
        if any(v < 0 for v in result.values()):
            raise StreamError(f"offsets file {path} holds a negative offset: {result}")
        return result

    def _list_files(self) -> list[str]:
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
            return []
        names.sort()
        self._known_files = names
        return names

    def _iter_records(self) -> Iterator[tuple[Any, str]]:
        last_record = time.monotonic()
        while not self._closed.is_set():
            ending = self.end_marker is not None and (self.directory / self.end_marker).exists()
            found = False
            for name in self._list_files():
                for item in self._read_file(name, final=ending):
                    found = True
                    yield item
                    if self._closed.is_set():
                        return
            if found:
                last_record = time.monotonic()
                continue
            if ending:
                return  # the marker was there before this scan, so the scan saw everything
            idle = time.monotonic() - last_record
            if self.idle_timeout is not None and idle >= self.idle_timeout:
                return
            if self._uncommitted:
                # Waiting for data: publish what was delivered, so a producer that paces
                # itself on the offsets file (back-pressure) sees the progress and goes on.
                self.commit()
            self._closed.wait(self.poll_interval)

    def _read_file(self, name: str, final: bool) -> Iterator[tuple[Any, str]]:
        path = self.directory / name
        offset = self._read.get(name, 0)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if size < offset:
            raise StreamError(
                f"{path} is {size} bytes but {offset} bytes were already read: files the "
                "source tails must only grow (was it truncated or replaced?)"
            )
        if size == offset:
            return
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(min(size - offset, _CHUNK))
                while b"\n" not in data and offset + len(data) < size:
                    data += fh.read(_CHUNK)
        except FileNotFoundError:
            return  # removed by the producer's retention between the listing and now
        end = data.rfind(b"\n") + 1
        final = final and offset + len(data) >= size  # only a real end of file is final
        if end == 0 and not final:
            return  # only a partial line so far
        # (line, bytes it occupies in the file): complete lines end with their newline
        lines = [(raw, len(raw) + 1) for raw in data[:end].split(b"\n")[:-1]]
        if final and end < len(data):
            tail = data[end:]  # the producer is done: an unterminated last line counts
            lines.append((tail, len(tail)))
        for raw, used in lines:
            start = offset
            offset += used
            self._read[name] = offset
            self._dirty.add(name)
            if not raw.strip():
                continue
            where = f"{name}:{start}"
            record = self._decode(name, raw, where, is_first=start == 0)
            if record is not _SKIP:
                self.records_read += 1
                yield record, where

    def _decode(self, name: str, raw: bytes, where: str, is_first: bool) -> Any:
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            self._batcher.bad(where, f"not UTF-8 ({exc})")
            return _SKIP
        if self.fmt == "jsonl":
            try:
                return json.loads(text)
            except ValueError as exc:
                self._batcher.bad(where, f"invalid JSON ({exc})")
                return _SKIP
        fields = self._csv_header(name, text if is_first else None)
        if fields is None:
            return _SKIP  # this line was the header
        try:
            values = next(csv.reader([text]))
        except (csv.Error, StopIteration) as exc:
            self._batcher.bad(where, f"invalid CSV ({exc})")
            return _SKIP
        if len(values) != len(fields):
            self._batcher.bad(where, f"expected {len(fields)} CSV fields, received {len(values)}")
            return _SKIP
        return {k: _number(v) for k, v in zip(fields, values, strict=True)}

    def _csv_header(self, name: str, first_line: str | None) -> list[str] | None:
        if self.csv_fieldnames is not None:
            return self.csv_fieldnames
        if first_line is not None:
            self._headers[name] = next(csv.reader([first_line]))
            return None
        header = self._headers.get(name)
        if header is None:  # resumed past the header: read it again from the file's start
            with open(self.directory / name, "rb") as fh:
                line = fh.readline().decode("utf-8", errors="replace").rstrip("\r\n")
            header = self._headers[name] = next(csv.reader([line]))
        return header


_SKIP = object()


def _number(value: str) -> Any:
    """CSV text -> int or float when it is one, else the text."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value
