"""What the last complete scan saw, kept in the index, so a new process trusts the index
after a cheap freshness check instead of a scan of every run.

Why: every ``trainledger lineage BASE`` is a new process. Without this it loaded the saved
listing of every run directory and its file signatures (seconds at 100,000 runs) just to
learn that nothing changed. A scan that found the index in step with the runs saves here (in
the ``scan_state`` table, schema 9):

- the mtime of every directory it walked (the base, group directories, run directories),
  saved only when every listing was *trusted* (taken more than 2 s after its directory's
  last change, the Scanner's "racy" rule, so an unchanged mtime means an unchanged listing);
- the size and mtime of every tracked file (lineage and summary files) that is not final,
  i.e. whose writer may still be alive or is unknown (other hosts, MindSpore's files): a file
  whose trainledger writer has exited on this host is never appended to again;
- the index generation at which the index held exactly those runs.

A new process (``IndexRefresh``'s refreshes while no listing is loaded) then reads the
generation and this state in one read, ``stat``s the saved directories and files and, when
all match, answers from the index without loading a listing or reading a run. Any difference
falls back to the full scan.

Detected (the full scan then runs): a run added, removed or renamed (its parent's mtime), a
file added to, removed from or renamed in a run directory (the run directory's mtime, e.g.
a resumed run's new lineage file, or a file replaced by an atomic rename), any change of a
file that is not final (an append by a live writer, a MindSpore file rewritten in place), a
write to the index by any process (the generation), a different ``max_depth``.

Not detected: a final file (its trainledger writer on this host has exited) rewritten in
place under the same name, with the same directory entries (the Scanner does not detect it
either), and changes made within the same mtime tick as a listing that was still trusted
(a file system whose mtimes do not advance).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trainledger.query.dir_listing import LISTING_FORMAT
from trainledger.query.schema import STATUS_BACKFILL, Connection, read_meta, set_meta

__all__ = [
    "ScanState",
    "is_built",
    "mark_built",
    "new_tag",
    "relative",
    "save_state",
    "trusted_runs",
]


@dataclass(frozen=True)
class ScanState:
    """One complete scan's evidence: directory mtimes and the files that are not final."""

    max_depth: int
    dirs: tuple[tuple[str, int], ...]  # (path relative to the base, "" the base; mtime_ns)
    files: tuple[tuple[str, int, int], ...]  # (path relative to the base, size, mtime_ns)
    runs: int  # run directories found


def relative(base: str, path: str) -> str:
    """``path`` below ``base`` as saved ("" for the base itself)."""
    return "" if path == base else path[len(base) + 1 :]


def _keys(max_depth: int) -> tuple[str, str]:
    # (the listings' format: a state saved by a scan of another format is not trusted)
    return f"dirs/{max_depth}/{LISTING_FORMAT}", f"state/{max_depth}/{LISTING_FORMAT}"


def new_tag() -> int:
    """A number naming one saved directory part (the small part names the one it goes with)."""
    return int.from_bytes(os.urandom(8), "big") >> 2


_UPSERT = (
    "INSERT INTO scan_state (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def save_state(conn: Connection, state: ScanState, generation: int, tag: int, dirs: bool) -> bool:
    """Save ``state`` as what the index holds at ``generation``, only if the index is still at
    that generation (a compare-and-set inside the caller's write transaction: another process
    may have written meanwhile). ``dirs``: write the directory part too, as ``tag``; else only
    the small part, and only if the saved directory part is still ``tag`` (this process's).
    Returns whether it was saved."""
    if read_meta(conn, "generation") != generation:
        return False
    dirs_key, state_key = _keys(state.max_depth)
    if dirs:
        names = "\x00".join(p for p, _ in state.dirs)  # (no name holds NUL)
        value = json.dumps([tag, names, [m for _, m in state.dirs]])
        conn.execute(_UPSERT, (dirs_key, value))
    else:  # (the tag leads the value: read its first characters only)
        row = conn.execute(
            "SELECT substr(value, 1, 40) FROM scan_state WHERE key = ?", (dirs_key,)
        ).fetchone()
        if row is None or row[0][1 : row[0].find(",")] != str(tag):
            return False
    value = json.dumps(
        {"generation": generation, "dirs": tag, "files": state.files, "runs": state.runs}
    )
    conn.execute(_UPSERT, (state_key, value))
    return True


def trusted_runs(conn: Connection, base: str, max_depth: int) -> int | None:
    """How many runs the index holds, when the saved state proves it in step with the base
    (see the module's docstring); None when a full scan is needed."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (STATUS_BACKFILL,)).fetchone():
        return None  # (the status fill needs the scan's runs)
    generation = read_meta(conn, "generation")
    rows = dict(
        conn.execute("SELECT key, value FROM scan_state WHERE key IN (?, ?)", _keys(max_depth))
    )
    dirs_key, state_key = _keys(max_depth)
    if dirs_key not in rows or state_key not in rows:
        return None
    try:
        state: dict[str, Any] = json.loads(rows[state_key])
        tag, names, mtimes = json.loads(rows[dirs_key])
        if state["generation"] != generation or state["dirs"] != tag:
            return None
        files = [(str(p), int(s), int(m)) for p, s, m in state["files"]]
        runs = int(state["runs"])
    except (ValueError, TypeError, KeyError):
        return None  # damaged: scan
    names = names.split("\x00") if names else []
    if len(names) != len(mtimes) or not _same_dirs(base, names, mtimes):
        return None
    return runs if _same_files(base, files) else None


def _same_dirs(base: str, names: list[str], mtimes: list[int]) -> bool:
    """Whether every directory still has its saved mtime (one ``stat`` each: the loop every
    new process pays, so it calls nothing else)."""
    os_stat, prefix = os.stat, base + "/"
    try:
        for name, mtime_ns in zip(names, mtimes, strict=True):
            if os_stat(prefix + name if name else base).st_mtime_ns != mtime_ns:
                return False
    except OSError:
        return False
    return True


def _same_files(base: str, files: Iterable[tuple[str, int, int]]) -> bool:
    """Whether every file that was not final still has its saved size and mtime."""
    try:
        for name, size, mtime_ns in files:
            st = os.stat(os.path.join(base, name), follow_symlinks=False)
            if st.st_size != size or st.st_mtime_ns != mtime_ns:
                return False
    except OSError:
        return False
    return True


def _base_tag(base: str) -> int:
    """A number naming the base a scan filled the index from (crc32 of its real path)."""
    return zlib.crc32(base.encode("utf-8", "surrogateescape"))


def mark_built(conn: Connection, base: str) -> None:
    """Note that a full scan of ``base`` filled this index (``is_built``)."""
    if read_meta(conn, "built") != _base_tag(base):
        set_meta(conn, "built", _base_tag(base))


def is_built(conn: Connection, base: str) -> bool:
    """Whether a full scan of ``base`` completed into this index: a new file is not, nor a
    copy of another base's index put in its place, until a scan of this base completed."""
    return read_meta(conn, "built") == _base_tag(base)
