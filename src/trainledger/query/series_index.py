"""A run's series statistics for the index, read once and then from where the last read
stopped.

Why incremental: a live run's event file grows every few steps and every query refreshes
the index, so re-reading a run's whole history each time would cost a query the size of the
run. The state kept per run (``SeriesState``: each summary file's read offset, the
TensorBoard tags known to be scalars, and each tag's statistics plus its largest step) lets
the next read decode only the appended records.

Why a full read is sometimes needed: the series rule (``summary.resolve_series``) may drop
points already counted. Appended points are merged only when no rule can reach back into
what was read: no new ``SessionLog.START`` (TensorBoard's restart) and every new MindSpore
point's step beyond the tag's largest step so far (MindInsight's rule drops or replaces only
points at or after a repeated or restarted step), and no file earlier in writing order than
one already read has grown (its points come first). Otherwise, and when a file shrank or
vanished, the run is read again from the start. A damaged tail is left unread until it is
complete, as the reader does everywhere.

Why long series also get an overview (``SeriesOverview``, ``series_overviews.py``): the UI's
first chart of a long run then reads it from the index, not every point. An overview is
extended by the same appended points as the statistics, and built again by a read from the
start; a series that reaches ``MIN_POINTS`` without one (it grew past it, or the overview was
stale) is read from the start once.

Why a first read may read nothing: trainledger's ``SummaryRecord`` keeps each tag's
statistics as it writes and leaves them in a series sidecar (``summary/series_sidecar.py``);
where a folder's sidecars qualify they are the state of a read up to the sizes they name,
and only what was written after is read. Unless a series there is long: a sidecar holds no
overview, so that run's files are read once, at its first index (a chart's first request
must not read a million points; ``bench/series_overview.py`` measures both costs).
Sidecars that cover every byte of the run's files are taken over an earlier read too, so
nothing is read: the index's copy of object storage leaves such files in the store, as
stand-ins without bytes (``object_copy.py``), and they must never be read.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainledger.query import series_overviews
from trainledger.storage import event_file_order, is_summary_file_name, run_files
from trainledger.summary import TagStats

if TYPE_CHECKING:  # pragma: no cover - the annotations' types
    import numpy as np

    from trainledger.summary import RunReader, SeriesOverview

__all__ = ["SeriesState", "TagStats", "read_series_state"]


@dataclass
class SeriesState:
    """What the index keeps of a run's series: statistics per tag, and where reading stopped."""

    tags: dict[str, TagStats] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)  # file name -> bytes read
    scalar_tags: list[str] = field(default_factory=list)  # (``RunReader.scalar_tags``)
    #: tag -> overview, for each tag of at least ``series_overviews.MIN_POINTS`` points
    overviews: dict[str, SeriesOverview] = field(default_factory=dict)


def read_series_state(
    run_dir: str,
    previous: SeriesState | None = None,
    parts: tuple[str, ...] = (),
    sidecars: bool = True,
) -> SeriesState:
    """The series statistics of ``run_dir``, going on from ``previous`` when the rule allows
    (see the module's docstring), else read from the start. ``parts``: sub-folders whose
    scalars join the run's series under ``<part>/<tag>`` (a Keras run's ``train`` and
    ``validation``: ``tb_runs.py``); a tag two folders share has their points in folder
    order. Saved positions naming anything but a summary file of ``run_dir`` itself or of
    one of ``parts`` (a tampered shared index) start the read over: no file outside the run
    is opened. The writers' series sidecars stand for ``previous`` where they qualify
    (``summary/series_sidecar.py``; ``sidecars=False``: never) and there is none, or they
    cover every byte of the run's summary files and no series needs an overview (then
    nothing is read: a copy of object storage leaves such files in the store,
    ``object_copy.py``)."""
    # (heavy: only reading summaries needs the readers, not a query of the index)
    from trainledger.summary import RunReader, resolve_series, tag_stats

    folders = [("", run_dir)] + [(f"{p}/", os.path.join(run_dir, p)) for p in parts]
    if previous is not None and not all(_own_file(n, parts) for n in previous.positions):
        previous = None
    if sidecars:
        fresh = _from_sidecars(folders)
        if fresh is not None and (previous is None or _covers_all(folders, fresh)):
            previous = fresh
    if (
        previous is not None
        and previous.positions
        and not _lacks_overview(previous)
        and _unshrunk(run_dir, previous.positions)
    ):
        state = _extend(folders, previous)
        if state is not None:
            return state
    out = SeriesState()
    pieces: dict[str, list[tuple[np.ndarray, ...]]] = {}
    for prefix, folder in folders:
        reader = RunReader(folder)
        raw = reader.read_scalar_sessions()
        for tag, points in raw.items():
            series = resolve_series(*points, reader.session_formats, reader.session_starts)
            if len(series[0]):
                _add(out.tags, prefix + tag, tag_stats(series[0], series[2]))
                pieces.setdefault(prefix + tag, []).append(series)
        _add_positions(out, prefix, reader)
    _build_overviews(out, pieces)
    return out


def _build_overviews(state: SeriesState, pieces: dict[str, list[tuple[np.ndarray, ...]]]) -> None:
    """The overview of each long series of a read from the start (its folders' pieces)."""
    from trainledger.summary import SeriesOverview

    for tag, parts in pieces.items():
        if state.tags[tag].count >= series_overviews.MIN_POINTS:
            found = state.overviews[tag] = SeriesOverview.empty()
            for piece in parts:
                found.append(*piece)


def _lacks_overview(state: SeriesState) -> bool:
    """Whether a long series has no overview to extend (a read from the start builds it)."""
    least = series_overviews.MIN_POINTS
    return any(s.count >= least and t not in state.overviews for t, s in state.tags.items())


def _from_sidecars(folders: list[tuple[str, str]]) -> SeriesState | None:
    """The state the folders' sidecars give (None unless every folder's qualify)."""
    from trainledger.summary import sidecar_state

    out = SeriesState()
    for prefix, folder in folders:
        found = sidecar_state(folder)
        if found is None:
            return None
        tags, positions = found
        for tag, stats in tags.items():
            _add(out.tags, prefix + tag, stats)
        out.positions.update((prefix + name, size) for name, size in positions.items())
    return out


def _add(tags: dict[str, TagStats], tag: str, stats: TagStats) -> None:
    old = tags.get(tag)
    tags[tag] = stats if old is None else old.then(stats)


def _add_positions(state: SeriesState, prefix: str, reader: RunReader) -> None:
    """A folder's read positions and scalar tags into ``state``, named from the run."""
    state.positions.update((prefix + n, offset) for n, offset in reader.positions().items())
    known = set(state.scalar_tags)
    state.scalar_tags = sorted(known | {prefix + t for t in reader.scalar_tags})


def _own_file(name: str, parts: tuple[str, ...] = ()) -> bool:
    part, _, rest = name.rpartition("/")
    return (not part or part in parts) and bool(rest) and is_summary_file_name(rest)


def _covers_all(folders: list[tuple[str, str]], state: SeriesState) -> bool:
    """Whether the sidecars' ``state`` reaches the end of every summary file of the folders
    and needs no overview: taken over any earlier read, it reads nothing."""
    if _lacks_overview(state):
        return False  # (an earlier read's overviews are kept by extending it)
    positions = state.positions
    for prefix, folder in folders:
        for entry in run_files(folder, is_summary_file_name):
            try:
                if positions.get(prefix + entry.name) != entry.stat().st_size:
                    return False
            except OSError:
                return False
    return True


def _unshrunk(run_dir: str, positions: dict[str, int]) -> bool:
    """Whether every file read before is still there, at least as long as what was read."""
    for name, offset in positions.items():
        try:
            if os.stat(os.path.join(run_dir, name)).st_size < offset:
                return False
        except OSError:
            return False
    return True


def _extend(folders: list[tuple[str, str]], previous: SeriesState) -> SeriesState | None:
    """``previous`` plus what was appended, or None when the rule may reach back."""
    import numpy as np  # (heavy: only reading summaries needs them, not a query of the index)

    from trainledger.summary import MINDSPORE, RunReader, resolve_series, tag_stats

    out = SeriesState(dict(previous.tags))
    out.overviews = {t: dataclasses.replace(o) for t, o in previous.overviews.items()}
    for prefix, folder in folders:
        reader = RunReader(folder)
        mine = {n[len(prefix) :]: o for n, o in previous.positions.items() if _in(n, prefix)}
        tags = [t[len(prefix) :] for t in previous.scalar_tags if t.startswith(prefix)]
        reader.resume(mine, tags)
        raw = reader.read_scalar_sessions()
        if reader.session_starts:
            return None  # a writer restarted (TensorBoard's rule drops earlier points)
        if _earlier_grew(mine, reader.positions()):
            return None  # its new points come before points already counted
        ms = [s for s, f in reader.session_formats.items() if f == MINDSPORE]
        for tag, points in raw.items():
            steps, _, _, sessions = points
            old = out.tags.get(prefix + tag)
            if old is not None and ms:
                ms_steps = steps[np.isin(sessions, ms)]
                if len(ms_steps) and int(ms_steps.min()) <= old.top_step:
                    return None  # a repeated or restarted MindSpore step
            series = resolve_series(*points, reader.session_formats)
            if len(series[0]):
                _add(out.tags, prefix + tag, tag_stats(series[0], series[2]))
                if prefix + tag in out.overviews:
                    out.overviews[prefix + tag].append(*series)
        _add_positions(out, prefix, reader)
    return None if _lacks_overview(out) else out


def _earlier_grew(before: dict[str, int], after: dict[str, int]) -> bool:
    """Whether a file that comes before one already read (in writing order) has new bytes:
    two writers at once, or files that reached the folder out of order (a copy, a sync)."""
    read = [name for name, offset in before.items() if offset > 0]
    if not read:
        return False
    last = event_file_order(max(read, key=event_file_order))
    return any(
        offset > before.get(name, 0) and event_file_order(name) < last
        for name, offset in after.items()
    )


def _in(name: str, prefix: str) -> bool:
    """Whether saved position ``name`` is of the folder ``prefix`` names ("": the run's)."""
    return name.startswith(prefix) and "/" not in name[len(prefix) :]
