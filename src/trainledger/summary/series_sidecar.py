"""The series sidecar: the statistics of every scalar a writer wrote, in a small JSON file
next to its event files, so an index learns a run's ``max(loss)`` without reading the run.

Why: reading a run's event files costs their size (seconds for a long run, a download on
object storage); the writer already has each value in hand. ``SeriesTally`` keeps the
statistics (``series_stats.TagStats``, the definition the index uses) on the writer thread;
``EventFileWriter`` writes them at each flush and at close (``storage.series_sidecar_name``:
the name of the writer's first event file with ``tlseries`` for ``tfevents``, so no
TensorBoard reader takes it for an event file).

What a sidecar says: the files of one writer (one session, ``series.py``) with the size each
had when the statistics were taken, the step of the writer's ``SessionLog.START`` if it wrote
one, and per tag the statistics of the points in those bytes. It is a cache, never the
truth: ``sidecar_state`` uses sidecars only when they cover a folder's event files from the
first one on, in order, and chain without the series rule dropping a point; the reader then
goes on from the sizes they name (``query/series_index.py``), and reads everything when they
do not qualify. A write failure stops the tally and removes the sidecar, so it never claims
points that are not in the file. Written in place with a CRC line, and not fsynced: a torn
or half-written sidecar fails its CRC and is ignored, and an older one only costs a read of
what came after it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import Any

from trainledger.storage import (
    event_files_in_writing_order,
    is_event_file_name,
    is_series_sidecar_name,
    is_summary_file_name,
    run_files,
    series_sidecar_name,
)
from trainledger.summary.series_stats import TagStats, tag_stats

__all__ = ["SeriesTally", "sidecar_state"]

_FORMAT = "trainledger.series/2"  # (2: with the kind of the first NaN/inf; 1 is read again)


class SeriesTally:
    """The statistics of the scalars one writer has written so far (its writer thread only)."""

    def __init__(self) -> None:
        self.tags: dict[str, TagStats] = {}
        self.start_step: int | None = None

    def add_entries(self, entries: Sequence[tuple[int, float, list[Any]]]) -> None:
        """The scalars of ``SummaryRecord``'s entries (``summary.entries.Entry``: step,
        wall_time, [(plugin, tag, value)]), in writing order, as the file stores them."""
        import numpy as np  # (heavy: loaded by the writer anyway)

        steps: list[int] = []
        tags: list[str] = []
        values: list[float] = []
        for step, _, items in entries:
            for plugin, tag, value in items:
                if plugin == "scalar":
                    steps.append(step)
                    tags.append(tag)
                    values.append(value)
        if not steps:
            return
        with np.errstate(over="ignore"):  # beyond float32 is +-inf, as the file holds it
            stored = np.array(values, dtype=np.float32).astype(np.float64)
        at = np.array(steps, dtype=np.int64)
        names = set(tags)
        if len(names) == 1:
            self._add(tags[0], tag_stats(at, stored))
            return
        labels = np.array(tags, dtype=object)
        for tag in sorted(names):
            mine = labels == tag
            self._add(tag, tag_stats(at[mine], stored[mine]))

    def add_rows(self, tags: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
        """Rows ``(step, wall_time, value per tag)`` (``SummaryRecord.record_scalar_rows``)."""
        import numpy as np

        if not rows:
            return
        columns = list(zip(*rows, strict=True))
        steps = np.array(columns[0], dtype=np.int64)
        with np.errstate(over="ignore"):
            stored = np.array(columns[2:], dtype=np.float32).astype(np.float64)
        for tag, values in zip(tags, stored.reshape(len(tags), len(rows)), strict=True):
            self._add(tag, tag_stats(steps, values))

    def _add(self, tag: str, stats: TagStats) -> None:
        old = self.tags.get(tag)
        self.tags[tag] = stats if old is None else old.then(stats)

    def write(self, directory: Path, files: Sequence[tuple[str, int]]) -> None:
        """Replace the sidecar of the writer whose event files are ``files`` (name, size)."""
        data = {
            "format": _FORMAT,
            "files": [list(f) for f in files],
            "start_step": self.start_step,
            "tags": {tag: list(astuple(s)) for tag, s in self.tags.items()},
        }
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        # in place, not by rename (a tenth of the cost): the CRC line makes a sidecar caught
        # half written (or torn by a crash) one that ``_load`` ignores
        with open(directory / series_sidecar_name(files[0][0]), "wb") as fh:
            fh.write(text + b"\n%08x" % zlib.crc32(text))


def remove_sidecar(directory: Path, first_file: str) -> None:
    """Remove a writer's sidecar (its tally stopped: it would claim points not written)."""
    from trainledger.storage import remove_written  # (staging's modules: a reader needs none)

    remove_written(directory / series_sidecar_name(first_file))  # (its object too, if staged)


def _load(path: str) -> tuple[list[tuple[str, int]], int | None, dict[str, TagStats]] | None:
    """(files with sizes, START step, statistics) of a sidecar; None when it is damaged."""
    try:
        with open(path, "rb") as fh:
            text, _, crc = fh.read(1 << 24).rpartition(b"\n")
        if crc != b"%08x" % zlib.crc32(text):
            return None
        data = json.loads(text)
        if data.get("format") != _FORMAT:
            return None
        files = [(str(name), int(size)) for name, size in data["files"]]
        start = data["start_step"]
        tags = {str(t): TagStats(*values) for t, values in data["tags"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not files or not (start is None or type(start) is int):
        return None
    return files, start, tags


def sidecar_state(
    folder: str, summaries: Collection[str] | None = None
) -> tuple[dict[str, TagStats], dict[str, int]] | None:
    """(statistics per tag, bytes of each file they cover) from ``folder``'s sidecars, or
    None when they do not qualify: every event file up to the last one a sidecar names must
    be named by one, each writer's files in one block of the folder's file order, no
    ``_MS`` file, and no writer's ``SessionLog.START`` may drop an earlier writer's point.
    ``summaries``: the folder's summary file names when they are not (all) on this disk (a
    copy of object storage deciding which event files it need not download)."""
    if summaries is None:
        found = run_files(folder, lambda n: is_summary_file_name(n) or is_series_sidecar_name(n))
        summaries = [e.name for e in found if is_summary_file_name(e.name)]
    else:
        found = run_files(folder, is_series_sidecar_name)
    if not any(is_series_sidecar_name(e.name) for e in found):
        return None  # (most runs of other writers: one listing, no more)
    if not all(is_event_file_name(n) for n in summaries):
        return None  # a MindSpore file: MindInsight's rule needs the steps themselves
    order = event_files_in_writing_order(folder, summaries)
    sidecars = []
    for entry in found:
        if is_series_sidecar_name(entry.name) and (loaded := _load(entry.path)) is not None:
            sidecars.append(loaded)
    owner = {name: i for i, (files, _, _) in enumerate(sidecars) for name, _ in files}
    covered = [owner.get(name) for name in order]
    if not covered or covered[0] is None:
        return None
    last = max(i for i, o in enumerate(covered) if o is not None)
    if None in covered[:last]:
        return None
    blocks = [
        o
        for i, o in enumerate(covered[: last + 1])
        if o is not None and (i == 0 or o != covered[i - 1])
    ]
    if len(blocks) != len(set(blocks)):
        return None  # two writers' files interleave: their points cannot be ordered
    tags: dict[str, TagStats] = {}
    positions: dict[str, int] = {}
    for i in blocks:
        files, start, stats = sidecars[i]
        if start is not None and any(s.top_step >= start for s in tags.values()):
            return None  # TensorBoard's rule drops earlier points: read them
        for tag, s in stats.items():
            tags[tag] = s if tag not in tags else tags[tag].then(s)
        positions.update(files)
    if set(positions) - set(order):
        return None  # a file the sidecar names is gone
    return tags, positions
