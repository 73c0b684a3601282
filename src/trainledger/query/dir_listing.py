"""What one directory listing of the cheap scan found, and when a file in it is final.

Why apart from ``discovery.py``: a listing outlives the scan that took it. It is saved in the
index (``to_json``/``from_json``: ``index_tables.save_listings``) so that a new process starts
warm, and it remembers which files are final (``writer_gone``: their writer has exited, so
they are never stat'ed again while the directory is unchanged). The scan that reuses or
retakes listings is ``discovery.Scanner``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from trainledger.query.tb_runs import run_parts
from trainledger.storage import (
    LINEAGE_SUFFIX,
    event_writer,
    lineage_writer,
    machine_name,
    pid_alive,
    safe_host,
)

__all__ = ["LISTING_FORMAT", "RACY_NS", "DirListing", "writer_gone"]

#: the saved listings' format: 2 tracks Lightning's ``hparams.yaml`` too (a listing saved
#: before is taken again, so a finished run's file is found)
LISTING_FORMAT = 2
#: a listing taken less than this long after its directory's last change is not trusted: a
#: second change in the same timestamp tick would not move the mtime (git's "racy" rule)
RACY_NS = 2_000_000_000

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
    # (name, full path) of the files a scan stats: lineage files, then summary files (and
    # Lightning's hparams.yaml: a TensorBoard run's record reads it)
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
    # (name, path) of the children that may be parts of a TensorBoard run here (``tb_runs``)
    parts: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def to_json(self) -> list[Any]:
        settled = [list(f) for f in self.settled[0]] if self.settled else None
        return [
            self.mtime_ns,
            [n for n, _ in self.tracked],
            [list(c) for c in self.children],
            self.listed_at_ns,
            settled,
            LISTING_FORMAT,
        ]

    @classmethod
    def from_json(cls, path: str, data: list[Any]) -> DirListing:
        """A saved listing; a ``ValueError`` for one of another format (listed again)."""
        if len(data) != 6 or data[5] != LISTING_FORMAT:
            raise ValueError(f"a listing of format {data[5:]!r}, not {LISTING_FORMAT}")
        mtime_ns, names, children, listed_at, settled = data[:5]
        kids = tuple((str(a), str(b)) for a, b in children)
        listing = cls(
            int(mtime_ns),
            tuple((n, f"{path}/{n}") for n in names),
            kids,
            int(listed_at),
            int(listed_at) - int(mtime_ns) > RACY_NS,
            parts=run_parts(path, kids),
        )
        if settled is not None:
            files = tuple((str(n), int(s), int(m)) for n, s, m in settled)
            if [n for n, _, _ in files] == list(names):
                listing.settled.append(files)
                listing.final.update({n: (s, m) for n, s, m in files})
        return listing
