"""Lineage file names, and creating a new lineage file without ever clobbering one.

Names are ``events.out.events.summary.<unix_ts>.<rank>.<host>.<pid>.<seq>_lineage``.
MindInsight finds lineage files by ``summary.<digits>`` and the ``_lineage`` suffix, orders a
directory's files by that ``<unix_ts>`` and treats the number as the file's identity, so it must
be unique and increasing within a directory. MindSpore names files by the second only, which is
how an evaluation started in the same second as its training truncated the training's file
(fixture ``adam_lr001``). Here the file is created with ``O_EXCL`` (never truncated), and the
timestamp is the current second or, if that is taken, the next free one after every timestamp
already in the directory. The choice and the creation happen under an advisory lock on the
directory so two processes starting together still get distinct timestamps.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import time
from dataclasses import dataclass

from trainledger.checkpoint.atomic import exclusive_lock, is_temp_name

__all__ = [
    "LINEAGE_SUFFIX",
    "LineageFile",
    "lineage_file_name",
    "file_timestamp",
    "is_lineage_file_name",
    "list_lineage_files",
    "create_lineage_file",
    "safe_host",
]

LINEAGE_SUFFIX = "_lineage"
_PREFIX = "events.out.events.summary."
# MindInsight's own rule for the timestamp of a summary/lineage file name.
_TS_RE = re.compile(r"summary\.(\d+)")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SEQ = itertools.count()


@dataclass(frozen=True)
class LineageFile:
    """One lineage file of a run directory, as listed (cheap: a stat, no parsing)."""

    name: str
    path: str
    timestamp: int
    size: int
    mtime: float


def safe_host(host: str | None = None) -> str:
    """The host name reduced to characters that cannot break the file-name pattern."""
    host = socket.gethostname() if host is None else host
    return _UNSAFE.sub("-", host).strip("-") or "host"


def lineage_file_name(timestamp: int, rank: int, host: str, pid: int, seq: int) -> str:
    """``events.out.events.summary.<ts>.<rank>.<host>.<pid>.<seq>_lineage``."""
    parts = (int(timestamp), int(rank), safe_host(host), int(pid), int(seq))
    return _PREFIX + ".".join(str(p) for p in parts) + LINEAGE_SUFFIX


def file_timestamp(name: str) -> int | None:
    """The ``<unix_ts>`` of a summary/lineage file name (MindInsight's regex), or None."""
    match = _TS_RE.search(name)
    return int(match.group(1)) if match else None


def is_lineage_file_name(name: str) -> bool:
    """Whether MindInsight would read ``name`` as a lineage file (and it is not a temp file)."""
    return (
        name.endswith(LINEAGE_SUFFIX) and _TS_RE.search(name) is not None and not is_temp_name(name)
    )


def list_lineage_files(run_dir: str | os.PathLike[str]) -> list[LineageFile]:
    """The lineage files directly in ``run_dir``, in MindInsight's reading order.

    Oldest first by ``<unix_ts>``; equal timestamps by name, descending (MindInsight's sort).
    Symlinks are skipped, as MindInsight skips them. A missing directory lists nothing.
    """
    out: list[LineageFile] = []
    try:
        entries = list(os.scandir(run_dir))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return out
    for entry in entries:
        if not is_lineage_file_name(entry.name):
            continue
        try:
            if entry.is_symlink() or not entry.is_file():
                continue
            st = entry.stat()
        except OSError:
            continue  # vanished between listing and stat
        ts = file_timestamp(entry.name)
        if ts is None:  # pragma: no cover - excluded by is_lineage_file_name
            continue
        out.append(LineageFile(entry.name, entry.path, ts, st.st_size, st.st_mtime))
    out.sort(key=lambda f: f.name, reverse=True)
    out.sort(key=lambda f: f.timestamp)
    return out


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
    try:
        return [n for n in os.listdir(directory) if n.endswith(LINEAGE_SUFFIX)]
    except FileNotFoundError:
        return []
