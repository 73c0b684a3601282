"""The lineage file writer: append-only, one event per record, fsynced at each phase end.

One process writes one lineage file per run directory, shared by every writer of that
directory in the process (TrainLineage, EvalLineage, SummaryCollector's lineage switches), so
a training and an evaluation started in the same second land in one file instead of one
truncating the other. ``get_writer(log_dir)`` returns that shared writer from a process-level
registry keyed by the directory's real path (a forked child gets its own).

The file is created lazily, on the first write, so building a callback costs nothing on disk.
Each ``write`` opens the file in append mode, writes the framed records, flushes and fsyncs,
then closes it: writes happen a handful of times per run, and holding no descriptor means a
process that trains thousands of runs never runs out of them. A file that disappeared (someone
cleaned the directory) is replaced by a new file rather than recreated under its old name.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from trainledger.checkpoint.atomic import fsync_dir
from trainledger.errors import LineageWriteError
from trainledger.lineage.naming import create_lineage_file
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.summary.framing import frame

__all__ = ["LineageWriter", "get_writer", "clear_registry"]

_REGISTRY: dict[tuple[int, str], LineageWriter] = {}
_REGISTRY_LOCK = threading.Lock()


class LineageWriter:
    """Appends ``LineageEvent`` records to this process's lineage file in ``log_dir``."""

    def __init__(self, log_dir: str | os.PathLike[str], rank: int = 0) -> None:
        self.log_dir = os.path.realpath(os.fspath(log_dir))
        self.rank = int(rank)
        self.path: str | None = None
        self._lock = threading.Lock()

    def write(self, events: Iterable[pb.LineageEvent]) -> str:
        """Append ``events`` (in order), flush and fsync; return the file's path.

        Raises ``LineageWriteError`` when the directory or the file cannot be written.
        """
        data = b"".join(frame(event.SerializeToString()) for event in events)
        with self._lock:
            try:
                return self._append(data)
            except OSError as exc:
                raise LineageWriteError(
                    f"could not write lineage in {self.log_dir!r}: {exc}"
                ) from exc

    def _append(self, data: bytes) -> str:
        created = False
        if self.path is None or not os.path.exists(self.path):
            os.makedirs(self.log_dir, exist_ok=True)
            self.path = create_lineage_file(self.log_dir, rank=self.rank)
            created = True
        # O_APPEND without O_CREAT/O_TRUNC: never truncates, never recreates a vanished file
        # under a name that may now sort before newer files.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.log_dir)
        return self.path


def get_writer(log_dir: str | os.PathLike[str], rank: int = 0) -> LineageWriter:
    """This process's shared writer for ``log_dir`` (created on first use)."""
    key = (os.getpid(), os.path.realpath(os.fspath(log_dir)))
    with _REGISTRY_LOCK:
        writer = _REGISTRY.get(key)
        if writer is None:
            writer = _REGISTRY[key] = LineageWriter(key[1], rank=rank)
        return writer


def clear_registry() -> None:
    """Forget every shared writer (tests; a new writer then starts a new file)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
