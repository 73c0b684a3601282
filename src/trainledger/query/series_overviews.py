"""The index's overviews of long series (``series_overviews``: schema 11), so the UI's first
chart of many long runs reads a few hundred kilobytes per run, not every point.

What a row is: ``summary.SeriesOverview`` of one (run, tag) whose series (after the series
rule) holds at least ``MIN_POINTS`` points, as bytes (a fixed little-endian layout, never a
pickle), with the signature of the summary files it was read from (``RunFiles.
series_signature``). The signature is why version 10 code may keep using the index: it
stores series without overviews, so an overview it leaves behind names files that changed
since; the indexer extends an overview only when its signature is the one of the statistics
it extends (``load_overviews``), and the server serves one only when it still matches the
files on disk (``overview_fresh``). The rows are written and read by ``series_tables.py``,
with the statistics they go with.
"""

from __future__ import annotations

import os

from trainledger.storage import is_event_file_name, is_summary_file_name, run_files

__all__ = ["MIN_POINTS", "V11", "overview_fresh"]

#: a series of fewer points is cheap to read raw: the index keeps no overview of it
MIN_POINTS = 20_000

#: the table (version 11, ``schema.py``); rows of a few hundred kilobytes: no ``WITHOUT ROWID``
V11 = """
CREATE TABLE IF NOT EXISTS series_overviews (
    summary_dir {txt} NOT NULL,
    tag {txt} NOT NULL,
    signature TEXT NOT NULL,
    overview {blob} NOT NULL,
    PRIMARY KEY (summary_dir, tag)
)
"""


def overview_fresh(run_dir: str, signature: str, parts: tuple[str, ...] = ()) -> bool:
    """Whether the summary files of ``run_dir`` (and of its series ``parts``, a TensorBoard
    run's, ``tb_runs.series_parts_of``) are still those ``signature`` names, at the same size
    and mtime. Entries of other folders (a TensorBoard run's HParams folders) hold no series
    and are not compared."""
    named: dict[str, tuple[int, int]] = {}
    for entry in signature.split(";") if signature else ():
        name, size, mtime = (entry.rsplit(":", 2) + ["", ""])[:3]
        folder, _, file = name.rpartition("/")
        if (not folder or folder in parts) and is_summary_file_name(file):  # (no hparams.yaml)
            try:
                named[name] = (int(size), int(mtime))
            except ValueError:  # (a damaged row: read the points)
                return False
    return bool(named) and named == _summary_files(run_dir, parts)


def _summary_files(run_dir: str, parts: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of the summary files the scan tracks for the run (``discovery``)."""
    out = {}
    folders = [("", is_summary_file_name), *((f"{p}/", is_event_file_name) for p in parts)]
    for prefix, is_name in folders:
        for entry in run_files(os.path.join(run_dir, prefix), is_name):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:  # vanished since the listing: not fresh
                return {}
            out[prefix + entry.name] = (st.st_size, st.st_mtime_ns)
    return out
