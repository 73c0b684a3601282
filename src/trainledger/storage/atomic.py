"""Atomic file writes: the one place in trainledger that commits a whole file to disk.

Why: a reader (or a restarted run) must only ever see a file that is complete. We write to a
temp name in the same directory, fsync the file, rename it over the final name (atomic on
POSIX), then fsync the directory so the rename itself survives a power loss. A crash leaves at
most a temp file, which readers ignore (``is_temp_name``) and ``sweep_temp_files`` removes at
the next start.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from trainledger.storage.naming import temp_name, temp_writer_pid

__all__ = [
    "atomic_write",
    "atomic_write_bytes",
    "exclusive_lock",
    "fsync_dir",
    "pid_alive",
    "scan_dir",
    "sweep_temp_files",
]


def scan_dir(directory: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    """The entries of ``directory``; none when it does not exist (yet), as before a first write.

    Any other error (not a directory, no permission) is raised.
    """
    try:
        with os.scandir(directory) as it:
            return list(it)
    except FileNotFoundError:
        return []


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Flush a directory entry change (create/rename/unlink) to disk."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a binary file that becomes ``path`` only if the block completes.

    On an exception the temp file is removed and ``path`` is untouched.
    """
    final = Path(path)
    tmp = final.with_name(temp_name(final.name, os.getpid(), os.urandom(4).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(final.parent)


@contextmanager
def exclusive_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock) on ``path`` for the block.

    Why: writers in several processes (lineage files in one run directory, the index, the
    annotations file) must not interleave their check-then-create steps. A directory is
    locked itself, leaving nothing behind; any other path is a lock file, created if missing.
    Where flock does not exist (Windows) the block runs unlocked: O_EXCL creation still
    prevents clobbering.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    flags = os.O_RDONLY if os.path.isdir(path) else os.O_RDWR | os.O_CREAT
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes | Callable[[BinaryIO], None]
) -> None:
    """Atomically write ``data`` (bytes, or a function that writes into the file) to ``path``."""
    with atomic_write(path) as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data)


def sweep_temp_files(directory: str | os.PathLike[str], prefix: str = "") -> list[Path]:
    """Remove temp files left by a crash in ``directory`` (only names starting with ``prefix``).

    Returns the removed paths. Files of a live writer in another process are left alone when
    that process still exists.
    """
    removed: list[Path] = []
    for entry in scan_dir(directory):
        name = entry.name
        pid = temp_writer_pid(name) if name.startswith(prefix) else None
        if pid is None:
            continue
        if pid != os.getpid() and pid_alive(pid):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except FileNotFoundError:
            pass
    if removed:
        fsync_dir(directory)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
