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

import itertools
import os
import threading
import time
from collections.abc import Iterable

from trainledger.errors import LineageWriteError
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.lineage.redaction import Redaction, redact_event
from trainledger.storage import (
    LINEAGE_SUFFIX,
    exclusive_lock,
    file_timestamp,
    frame,
    fsync_dir,
    lineage_file_name,
    note_change,
    safe_host,
    scan_dir,
)

__all__ = ["LineageWriter", "get_writer", "clear_registry", "create_lineage_file"]

_SEQ = itertools.count()

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
        policy = Redaction.from_env()  # TRAINLEDGER_REDACT: blur before it can leave
        events = [redact_event(event, policy) for event in events]
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
        note_change(self.path)  # this process's own queries see it at once (query.watch)
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
    """Forget every shared writer: the next write starts a new file, as a new process would.

    Only tests call it (to play a second process inside one); kept public for them because the
    registry is this module's private state.
    """
    with _REGISTRY_LOCK:
        _REGISTRY.clear()


def create_lineage_file(
    directory: str | os.PathLike[str],
    *,
    rank: int = 0,
    host: str | None = None,
    pid: int | None = None,
    now: float | None = None,
) -> str:
    """Create a new empty lineage file in ``directory``; return its path.

    The timestamp is ``max(now, newest timestamp in the directory + 1)`` so it is unique and
    increasing within the directory; the file is opened with ``O_EXCL`` so an existing file is
    never truncated (on the unlikely clash the next second is tried).
    """
    directory = os.fspath(directory)
    pid = os.getpid() if pid is None else pid
    with exclusive_lock(directory):
        taken = {f for f in (file_timestamp(n) for n in _lineage_names(directory)) if f is not None}
        ts = int(time.time() if now is None else now)
        if taken:
            ts = max(ts, max(taken) + 1)
        for _ in range(1000):
            path = os.path.join(
                directory, lineage_file_name(ts, rank, host or safe_host(), pid, next(_SEQ))
            )
            try:
                fd = os.open(
                    path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644
                )
            except FileExistsError:
                ts += 1
                continue
            os.close(fd)
            return path
    raise FileExistsError(
        f"could not create a new lineage file in {directory!r}"
    )  # pragma: no cover


def _lineage_names(directory: str) -> list[str]:
    return [e.name for e in scan_dir(directory) if e.name.endswith(LINEAGE_SUFFIX)]
