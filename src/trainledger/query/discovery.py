"""Find run directories under a base directory, safely and cheaply.

Why its own module: this is the per-query "cheap scan" (a directory listing plus a stat of
each lineage file), so it must do nothing else, and it is where path safety lives: the base
must be an existing directory, NUL bytes and ``..`` are rejected, and a symlink leading outside
the base is never followed.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainledger.errors import LineageParamSummaryPathError
from trainledger.query.watch import WatchedScans
from trainledger.storage import (
    ARCHIVE_DIRNAME,
    INDEX_DIRNAME,
    LINEAGE_SUFFIX,
    event_writer,
    is_lineage_file_name,
    is_summary_file_name,
    lineage_writer,
    machine_name,
    pid_alive,
    safe_host,
)

#: directories below a base that never hold runs: the index and the archive
_NOT_RUNS = (INDEX_DIRNAME, ARCHIVE_DIRNAME)

_PATH_ERROR = "The parameter summary path error: {}"
# MindInsight's sentences, which callers match on; trainledger's detail follows them.
INVALID_PATH = "The summary path is invalid."
MISSING_DIR = "The summary path does not exist or is not a dir."


@dataclass(frozen=True)
class RunFiles:
    """One run directory and the (name, size, mtime_ns) of its lineage and summary files."""

    summary_dir: str  # relative to the base: "./run1", "./group/run2", or "./" for the base
    path: str  # absolute real path
    files: tuple[tuple[str, int, int], ...]

    @functools.cached_property
    def signature(self) -> str:
        """Changes whenever a lineage file is added, removed, grown or rewritten."""
        return ";".join(f"{n}:{s}:{m}" for n, s, m in self.files if n.endswith(LINEAGE_SUFFIX))

    @functools.cached_property
    def series_signature(self) -> str:
        """The same for the summary files (event files, ``_MS`` files): their series
        statistics are read again only when it changes (``query.series_index``)."""
        return ";".join(f"{n}:{s}:{m}" for n, s, m in self.files if not n.endswith(LINEAGE_SUFFIX))

    @property
    def update_time(self) -> float:
        """Newest lineage-file modification time, in seconds."""
        return max(m for n, _, m in self.files if n.endswith(LINEAGE_SUFFIX)) / 1e9


def path_error(detail: str) -> LineageParamSummaryPathError:
    return LineageParamSummaryPathError(_PATH_ERROR.format(detail))


def check_path_text(path: object, name: str = "summary path") -> str:
    """Reject non-strings, empty strings, NUL bytes and ``..`` components."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise path_error(
            f"{INVALID_PATH} The {name} should be a non-empty str, received: {path!r}."
        )
    if "\x00" in path:
        raise path_error(f"{INVALID_PATH} The {name} contains a NUL byte.")
    if ".." in Path(path).parts:
        raise path_error(f"{INVALID_PATH} The {name} must not contain '..', received: {path!r}.")
    return path


def validate_base(base: object) -> str:
    """The real path of an existing base directory, or LineageParamSummaryPathError."""
    return _existing_dir(base, "summary_base_dir")


def validate_run_dir(summary_dir: object) -> str:
    """The real path of an existing run directory, or LineageParamSummaryPathError."""
    return _existing_dir(summary_dir, "summary_dir")


def _existing_dir(value: object, name: str) -> str:
    text = check_path_text(value, name)
    real = os.path.realpath(text)
    if not os.path.exists(real):
        raise path_error(f"{MISSING_DIR} The {name} does not exist: {text!r}.")
    if not os.path.isdir(real):
        raise path_error(f"{MISSING_DIR} The {name} is not a directory: {text!r}.")
    return real


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


_OWN_HOST: str | None = None  # as lineage file names spell it
_OWN_MACHINE: str | None = None  # as event file names spell it


def writer_gone(name: str) -> bool:
    """Whether the process that wrote file ``name`` has exited (this host only).

    trainledger names lineage files ``events.out.events.summary.<ts>.<rank>.<host>.<pid>.<seq>
    _lineage`` and event files (as torch's and TensorFlow's writers do) ``...tfevents.<ts>.
    <host>.<pid>.<n>``; only the creating process appends. Unknown layouts (MindSpore's) and
    other hosts: False.
    """
    global _OWN_HOST, _OWN_MACHINE
    lineage = name.endswith(LINEAGE_SUFFIX)
    writer = lineage_writer(name) if lineage else event_writer(name)
    if writer is None:
        return False
    if _OWN_HOST is None or _OWN_MACHINE is None:
        _OWN_HOST, _OWN_MACHINE = safe_host(), machine_name()
    host, pid = writer
    if host != (_OWN_HOST if lineage else _OWN_MACHINE) or pid == os.getpid() or pid <= 0:
        return False
    return not pid_alive(pid)


@dataclass(frozen=True)
class DirListing:
    """What one directory listing found (cached while the directory's mtime is unchanged)."""

    mtime_ns: int
    # (name, full path) of the files a scan stats: lineage files, then summary files
    tracked: tuple[tuple[str, str], ...]
    children: tuple[tuple[str, str], ...]  # (name, path) of sub-directories safe to visit
    listed_at_ns: int = 0  # when the listing was taken
    # taken well after the last change, so an unchanged mtime means unchanged content
    trusted: bool = False
    # files whose writer has exited: name -> (size, mtime_ns), never stat'ed again
    final: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    # the files tuple once every tracked file is final (then nothing is stat'ed but the dir)
    settled: list[tuple[tuple[str, int, int], ...]] = field(default_factory=list, compare=False)
    # [summary_dir, ((child path, child summary_dir), ...)]: reused while the parent is unchanged
    below: list[Any] = field(default_factory=list, compare=False)

    def to_json(self) -> list[Any]:
        settled = [list(f) for f in self.settled[0]] if self.settled else None
        return [
            self.mtime_ns,
            [n for n, _ in self.tracked],
            [list(c) for c in self.children],
            self.listed_at_ns,
            settled,
        ]

    @classmethod
    def from_json(cls, path: str, data: list[Any]) -> DirListing:
        mtime_ns, names, children, listed_at, settled = data
        listing = cls(
            int(mtime_ns),
            tuple((n, f"{path}/{n}") for n in names),
            tuple((str(a), str(b)) for a, b in children),
            int(listed_at),
            int(listed_at) - int(mtime_ns) > Scanner.RACY_NS,
        )
        if settled is not None:
            files = tuple((str(n), int(s), int(m)) for n, s, m in settled)
            if [n for n, _, _ in files] == list(names):
                listing.settled.append(files)
                listing.final.update({n: (s, m) for n, s, m in files})
        return listing


class Scanner:
    """The cheap scan, made cheaper on repeat: one ``stat`` per directory and lineage file.

    A directory is listed again only when its mtime changed (a file or sub-directory was
    added, removed or renamed); otherwise its cached listing is reused and only its lineage
    files are stat'ed (an append changes their size and mtime, not the directory's). A listing
    taken less than two seconds after the directory's last change is not trusted, because a
    second change inside the same timestamp tick would not move the mtime (git's "racy"
    rule). The listings can be saved and loaded (``listings``/``load``) so that a new process
    starts warm.

    A lineage file written by trainledger is named after its writer (host and pid) and only
    that process ever appends to it. Once that process is gone (checked on this host, before
    the file's last stat), the file is final and is not stat'ed again while its directory is
    unchanged: finished runs cost one ``stat`` per scan. Files of other hosts, MindSpore's
    files and live writers' files are stat'ed every time. (Not covered: a tool rewriting a
    finished lineage file in place, under the same name, without touching the directory.)

    In a long-lived process (from the second scan on, unless ``watch=False``), a trusted
    ``query.watch.BaseWatcher`` says which directories changed since the last scan: only those
    are stat'ed, and when none changed a scan costs nothing. A full scan still runs every
    ``FULL_RESCAN_SECONDS`` for writers the kernel does not report (network file systems).
    """

    RACY_NS = 2_000_000_000

    def __init__(self, base_real: str, max_depth: int = 1, watch: bool = True) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth expected a non-negative int, received: {max_depth!r}")
        self.base = base_real
        self.max_depth = max_depth
        self._cache: dict[str, DirListing] = {}
        self._runs: dict[str, RunFiles] = {}  # reused while unchanged (signature computed once)
        self.changed: dict[str, DirListing | None] = {}  # listings (re)taken or dropped by scan()
        # (path, mtime_ns) of every directory when the last scan found nothing left to stat
        # but directories (all listings trusted, all lineage files final), and its result
        self._stable: list[tuple[str, int]] | None = None
        self._last: list[RunFiles] = []
        self._watch = WatchedScans(base_real, watch)

    def load(self, listings: dict[str, DirListing]) -> None:
        """Start from saved listings (each is still checked against its directory's mtime)."""
        self._cache = dict(listings)
        self._stable = None

    def _list(self, path: str, mtime_ns: int) -> DirListing:
        listed_at = time.time_ns()
        lineage: list[str] = []
        series: list[str] = []
        children: list[tuple[bool, str, str]] = []
        try:
            with os.scandir(path) as it:
                for entry in it:
                    name = entry.name
                    try:
                        if name.endswith(LINEAGE_SUFFIX):
                            if is_lineage_file_name(name) and entry.is_file(follow_symlinks=False):
                                lineage.append(name)
                            continue
                        if is_summary_file_name(name):
                            if entry.is_file(follow_symlinks=False):
                                series.append(name)
                            continue
                        if not entry.is_dir() or name in _NOT_RUNS or "\x00" in name:
                            continue
                        is_link = entry.is_symlink()
                    except OSError:
                        continue
                    child = os.path.join(path, name)
                    if is_link:
                        child = os.path.realpath(child)
                        if not _inside(child, self.base) or child == self.base:
                            continue
                    children.append((is_link, name, child))
        except OSError:
            pass
        # real directories first, so they are visited (and named) before links to them
        children.sort(key=lambda c: (c[0], c[1]))
        return DirListing(
            mtime_ns,
            tuple((n, os.path.join(path, n)) for n in [*sorted(lineage), *sorted(series)]),
            tuple((name, child) for _, name, child in children),
            listed_at,
            listed_at - mtime_ns > self.RACY_NS,
        )

    @staticmethod
    def _stat_files(listing: DirListing) -> tuple[tuple[str, int, int], ...] | None:
        if listing.settled:
            return listing.settled[0]
        out = []
        os_stat, is_reg, final = os.stat, stat.S_ISREG, listing.final
        for name, full in listing.tracked:
            known = final.get(name)
            if known is not None:
                out.append((name, known[0], known[1]))
                continue
            gone = writer_gone(name)  # checked before the stat: no append can follow it
            try:
                st = os_stat(full, follow_symlinks=False)
            except OSError:
                return None  # vanished: list the directory again
            if not is_reg(st.st_mode):
                return None
            if gone:
                final[name] = (st.st_size, st.st_mtime_ns)
            out.append((name, st.st_size, st.st_mtime_ns))
        files = tuple(out)
        if len(final) == len(listing.tracked):
            listing.settled.append(files)
        return files

    def _unchanged(self) -> bool:
        """The fast path: when every directory of the last scan was settled, one stat per
        directory (same mtimes) proves nothing changed."""
        stable = self._stable
        if stable is None:
            return False
        os_stat = os.stat
        try:
            for path, mtime_ns in stable:
                if os_stat(path).st_mtime_ns != mtime_ns:
                    return False
        except OSError:
            return False
        return True

    def scan(self) -> list[RunFiles]:
        """Run directories (directories holding lineage files) under the base.

        Depth 0 is the base itself ("./"), depth 1 its children ("./run1"), up to ``max_depth``.
        Symlinked directories are followed only if they resolve inside the base, once each.
        """
        dirty = self._watch.begin()
        if dirty is not None and not dirty:  # the watcher saw no change at all: no stat
            self.changed = {}
            self._watch.end(full=False)
            return self._last
        if dirty is None and self._unchanged():
            self.changed = {}
            self._watch.end(full=True)
            return self._last
        cache: dict[str, DirListing] = {}
        changed: dict[str, DirListing | None] = {}
        stable_now: list[tuple[str, int]] | None = []
        previous = self._runs
        current: dict[str, RunFiles] = {}
        runs: list[RunFiles] = []
        old_get, stat_files = self._cache.get, self._stat_files
        os_stat = os.stat
        level: list[tuple[str, str]] = [(self.base, "./")]
        for depth in range(self.max_depth + 1):  # breadth first, one level at a time
            below: list[tuple[str, str]] = []
            for path, summary_dir in level:
                if path in cache:  # reached twice (through a symlink)
                    continue
                listing = old_get(path)
                if dirty is not None and listing is not None and path not in dirty:
                    stable_now = None  # the watcher saw nothing here: reused with no stat
                    run = previous.get(path)
                    files = run.files if run is not None else ()
                    cache[path] = listing
                else:
                    try:
                        mtime_ns = os_stat(path).st_mtime_ns
                    except OSError:
                        continue
                    files = None
                    if listing is not None and listing.mtime_ns == mtime_ns and listing.trusted:
                        if listing.settled:  # every file final: nothing else to stat
                            files = listing.settled[0]
                        else:
                            files = stat_files(listing)
                            if listing.settled:
                                changed[path] = listing  # now final: save that too
                    if listing is None or files is None:
                        listing = self._list(path, mtime_ns)
                        files = stat_files(listing) or ()
                        changed[path] = listing
                    cache[path] = listing
                    if stable_now is not None:
                        if listing.trusted and (listing.settled or not listing.tracked):
                            stable_now.append((path, mtime_ns))
                        else:
                            stable_now = None
                if files and files[0][0].endswith(LINEAGE_SUFFIX):  # (lineage files first)
                    run = previous.get(path)
                    if (
                        run is None
                        or (run.files is not files and run.files != files)
                        or run.summary_dir != summary_dir
                    ):
                        run = RunFiles(summary_dir, path, files)
                    current[path] = run
                    runs.append(run)
                if depth < self.max_depth and listing.children:
                    below.extend(self._below(listing, depth, summary_dir))
            level = below
        for path in self._cache.keys() - cache.keys():
            changed[path] = None
        self._cache = cache
        self._runs = current
        self.changed = changed
        self._stable = stable_now
        self._last = runs
        self._watch.end(full=dirty is None)
        return runs

    def close(self) -> None:
        """Release the base watcher (each holds an inotify instance; a user has 128)."""
        self._watch.close()

    @staticmethod
    def _below(listing: DirListing, depth: int, summary_dir: str) -> tuple[tuple[str, str], ...]:
        """(path, summary_dir) of the sub-directories to visit, reused while unchanged."""
        done = listing.below
        if not done or done[0] != summary_dir:
            prefix = summary_dir if depth == 0 else summary_dir + "/"
            done[:] = [
                summary_dir,
                tuple((child, prefix + name) for name, child in listing.children),
            ]
        return done[1]  # type: ignore[no-any-return]


def discover(base_real: str, max_depth: int = 1) -> list[RunFiles]:
    """One scan of ``base_real`` (see ``Scanner.scan``)."""
    return Scanner(base_real, max_depth, watch=False).scan()


def resolve_summary_dir(base_real: str, value: str) -> str | None:
    """Map a summary_dir condition value to the "./rel" form, or None if outside the base.

    Accepts "./run1", "run1" and absolute paths under the base (MindInsight's docs used
    absolute paths in their example).
    """
    if "\x00" in value or ".." in Path(value).parts:
        return None
    if os.path.isabs(value):
        real = os.path.normpath(value)
        if not _inside(real, base_real):
            real = os.path.realpath(value)
            if not _inside(real, base_real):
                return None
        rel = os.path.relpath(real, base_real)
    else:
        rel = os.path.normpath(value)
    if rel == ".":
        return "./"
    return "./" + rel.replace(os.sep, "/")
