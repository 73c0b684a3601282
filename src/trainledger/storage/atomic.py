"""Atomic file writes: the one place in trainledger that commits a whole file to disk.

Why: a reader (or a restarted run) must only ever see a file that is complete. We write to a
temp name in the same directory, fsync the file, rename it over the final name (atomic on
POSIX), then fsync the directory so the rename itself survives a power loss. A crash leaves at
most a temp file, which readers ignore (``is_temp_name``) and ``sweep_temp_files`` removes at
the next start.

Whether the writer of a temp file is still writing is decided by a lock, not by its pid: the
writer holds an flock on the temp file until it is renamed, and the kernel drops the lock
when the writer dies, zombie or not. A pid alone misleads twice: a killed writer not yet
reaped is a zombie that "exists", and after a restart its pid may belong to another program.

A process that must end before its writes do (a second Ctrl-C at exit) calls
``abandon_writes``: every write under way loses its temp file and can no longer be renamed,
so nothing half-written is left and nothing appears after the process said it was not written.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from trainledger.storage.naming import temp_name, temp_writer_pid

__all__ = [
    "abandon_writes",
    "atomic_write",
    "atomic_write_bytes",
    "exclusive_lock",
    "fsync_dir",
    "pid_alive",
    "scan_dir",
    "process_start_time",
    "sweep_temp_files",
    "writer_alive",
]

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - not POSIX
    _fcntl = None  # type: ignore[assignment]


# The atomic writes under way in this process (temp -> final), and whether they were abandoned;
# a rename happens under the lock, so it is either before ``abandon_writes`` or never.
_WRITES_LOCK = threading.Lock()
_WRITING: dict[Path, Path] = {}
_ABANDONED: list[int] = []  # the pid that abandoned its writes


def abandon_writes() -> list[Path]:
    """Remove the temp file of every atomic write under way in this process and make every
    rename after this call fail; the final paths that will therefore not be written."""
    with _WRITES_LOCK:
        _ABANDONED[:] = [os.getpid()]
        pending = dict(_WRITING)
    for tmp in pending:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return list(pending.values())


def _commit(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` over ``final`` unless this process abandoned its writes."""
    with _WRITES_LOCK:
        if _ABANDONED == [os.getpid()]:
            raise InterruptedError(f"the write of {final} was abandoned (the process is ending)")
        os.replace(tmp, final)
        _WRITING.pop(tmp, None)


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
def atomic_write(path: str | os.PathLike[str], durable: bool = True) -> Iterator[BinaryIO]:
    """Yield a binary file that becomes ``path`` only if the block completes.

    On an exception the temp file is removed and ``path`` is untouched. The temp file is
    flock-ed until it has been renamed (``writer_alive``). ``durable=False`` skips the two
    fsyncs, for a cache file that can be made again (a download's stand-in): still never
    seen half-written, but a power cut may lose it.
    """
    final = Path(path)
    tmp = final.with_name(temp_name(final.name, os.getpid(), os.urandom(4).hex()))
    with _WRITES_LOCK:
        if _ABANDONED == [os.getpid()]:
            raise InterruptedError(f"the write of {final} was abandoned (the process is ending)")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        _WRITING[tmp] = final
    try:
        with os.fdopen(fd, "wb") as fh:
            if _fcntl is not None:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)  # new file: never contended
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            if _fcntl is not None:
                _commit(tmp, final)  # still locked: a sweeper never takes a file mid-rename
        if _fcntl is None:  # pragma: no cover - Windows cannot rename an open file
            _commit(tmp, final)
    except BaseException:
        with _WRITES_LOCK:
            _WRITING.pop(tmp, None)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
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
    path: str | os.PathLike[str],
    data: bytes | Callable[[BinaryIO], None],
    durable: bool = True,
) -> None:
    """Atomically write ``data`` (bytes, or a function that writes into the file) to ``path``
    (``durable``: as ``atomic_write``)."""
    with atomic_write(path, durable) as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data)


def sweep_temp_files(directory: str | os.PathLike[str], prefix: str = "") -> list[Path]:
    """Remove temp files left by a crash in ``directory`` (only names starting with ``prefix``).

    Returns the removed paths. A file whose writer is still writing (``writer_alive``) is left.
    """
    removed: list[Path] = []
    for entry in scan_dir(directory):
        name = entry.name
        pid = temp_writer_pid(name) if name.startswith(prefix) else None
        if pid is None or writer_alive(entry.path, pid):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except FileNotFoundError:
            pass
    if removed:
        fsync_dir(directory)
    return removed


def writer_alive(path: str | os.PathLike[str], pid: int) -> bool:
    """Whether the temp file ``path``, written by process ``pid``, may still be being written.

    Our writers hold an flock on it: held means alive, whatever the pid says. Not held: a
    writer of this version is gone (the kernel released the lock when it died), but one of an
    older version (which did not lock) may still be running, so then the pid decides; a
    zombie, or a process that started after the file was last written (the pid was reused),
    is not the writer. This process's own files are written under the lock.
    """
    held = _lock_held(path)
    if held is not None:
        if held or pid == os.getpid():
            return held
    elif pid == os.getpid():
        return False
    if not pid_alive(pid):
        return False
    started = process_start_time(pid)
    if started is None:
        return True
    try:
        written = os.stat(path, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return False
    return started <= written


def _lock_held(path: str | os.PathLike[str]) -> bool | None:
    """Whether another open file holds an flock on ``path`` (None: cannot tell)."""
    if _fcntl is None:  # pragma: no cover - not POSIX
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # also releases the lock if we took it
    return False


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie (one we may not signal
    counts as alive). A killed process stays a zombie until its parent reaps it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _proc_stat(pid)
    return stat is None or stat[0] not in ("Z", "X", "x")


def process_start_time(pid: int) -> float | None:
    """When process ``pid`` started (Unix time, rounded down to the second; None where
    ``/proc`` cannot tell)."""
    stat = _proc_stat(pid)
    boot = _boot_time()
    if stat is None or boot is None:
        return None
    return boot + stat[1] / os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) from ``/proc/<pid>/stat``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()  # the command name may hold spaces and ")"
    try:
        return fields[0].decode(), int(fields[19])
    except (IndexError, ValueError):
        return None


_BOOT: list[float] = []


def _boot_time() -> float | None:
    """The boot time from ``/proc/stat`` (whole seconds, rounded down: a start time computed
    from it is never later than the true one)."""
    if not _BOOT:
        try:
            with open("/proc/stat", "rb") as fh:
                for line in fh:
                    if line.startswith(b"btime "):
                        _BOOT.append(float(line.split()[1]))
                        break
        except OSError:
            return None
    return _BOOT[0] if _BOOT else None
