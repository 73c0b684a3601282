"""The local copy of an ``s3://`` base or run that the query index reads: everything the
download cache copies, except the event files the writers' series sidecars already describe.

Why: an index needs a run's lineage files and its series statistics, and trainledger's
``SummaryRecord`` leaves the statistics in a sidecar next to its event files
(``summary/series_sidecar.py``). Downloading the event files themselves, often the largest
objects of a run, would only confirm what the sidecar says. So where a folder's sidecars
qualify and cover every byte of every summary file the listing shows, its event files
become *stand-ins*: sparse local files of the object's size, holding no bytes
(``storage.cache.sync_down``). The index then takes the sidecars' statistics and reads
nothing (``series_index.read_series_state`` takes sidecars that cover everything over any
earlier read), and the scan's sizes and the sidecars' checks see the real sizes.

Only a lineage run's own folder (one holding a lineage file) is left so: a TensorBoard run's
HParams are read from its event files (``tb_runs.py``), a MindSpore ``_MS`` file or another
writer's event file needs its points, and a series of ``MIN_POINTS`` or more needs its
overview read once. Each sync decides again: a stand-in whose folder no longer qualifies
is downloaded. The copy lives apart from the download cache (``storage.index_copy_dir``),
and what reads the points reads that cache (the UI syncs a run into it when its page asks,
``server.IndexedRunStore``), so it never meets a stand-in; and a lock (per bucket) holds
other syncs of these copies off while a query, or a scan of the UI's index, reads one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from trainledger.query.series_overviews import MIN_POINTS
from trainledger.storage import (
    ObjectInfo,
    held_index_copy,
    is_summary_file_name,
    list_lineage_files,
)
from trainledger.summary import sidecar_state

__all__ = ["held_copy", "index_copy", "stand_ins"]


@contextmanager
def held_copy(path: Any, what: str = "directory", max_age: float | None = None) -> Iterator[Any]:
    """The directory to index for ``path``: ``path`` itself, or for an ``s3://`` URL its
    index copy, synced now (refreshed when older than ``max_age``, default
    ``TRAINLEDGER_OBJECT_MAX_AGE``) and held against other processes' syncs of its bucket's
    index copies until the block ends. Anything but a str or path is yielded as it is, for
    the caller's own type check."""
    with held_index_copy(path, what, stand_ins, max_age) as local:
        yield local


def index_copy(path: Any, what: str = "directory", max_age: float | None = None) -> Any:
    """``held_copy``'s directory, synced, for a reader of lineage files only (never of a
    stand-in) or an index of its own (the UI's, which reads a run's points from the
    download cache: ``server.IndexedRunStore``)."""
    with held_copy(path, what, max_age) as local:
        return local


def stand_ins(local: str, listing: Mapping[str, ObjectInfo]) -> set[str]:
    """The event files of ``listing`` (relative paths under ``local``) the index need not
    download: those of a lineage run's folder whose sidecars cover every byte of every
    summary file there, with no series long enough to need an overview."""
    folders: dict[str, dict[str, int]] = {}
    for rel, info in listing.items():
        folder, _, name = rel.rpartition("/")
        if is_summary_file_name(name):
            folders.setdefault(folder, {})[name] = info.size
    out: set[str] = set()
    for folder, sizes in folders.items():
        path = os.path.join(local, *folder.split("/")) if folder else local
        if not list_lineage_files(path):
            continue  # a TensorBoard run: its HParams are in its event files
        found = sidecar_state(path, summaries=sizes)
        if found is None or found[1] != sizes:
            continue
        if any(s.count >= MIN_POINTS for s in found[0].values()):
            continue  # the index reads a long series once, for its overview
        out.update(f"{folder}/{name}" if folder else name for name in sizes)
    return out
