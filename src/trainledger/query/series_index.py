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
points at or after a repeated or restarted step). Otherwise, and when a file shrank or
vanished, the run is read again from the start. A damaged tail is left unread until it is
complete, as the reader does everywhere.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainledger.storage import is_summary_file_name

if TYPE_CHECKING:  # pragma: no cover - the annotations' types
    import numpy as np

    from trainledger.summary import RunReader

__all__ = ["SeriesState", "TagStats", "read_series_state", "tag_stats"]


@dataclass(frozen=True)
class TagStats:
    """The statistics of one tag's series (``series_fields.STATS``) and its largest step."""

    last: float | None
    last_step: int
    min: float | None
    min_step: int | None
    max: float | None
    max_step: int | None
    count: int
    nonfinite_step: int | None
    top_step: int

    def as_dict(self) -> dict[str, Any]:
        """The statistics by their query names (``top_step`` is the index's own)."""
        return {
            "last": self.last,
            "min": self.min,
            "max": self.max,
            "count": self.count,
            "last_step": self.last_step,
            "min_step": self.min_step,
            "max_step": self.max_step,
            "nonfinite_step": self.nonfinite_step,
        }

    def then(self, later: TagStats) -> TagStats:
        """These statistics followed by those of points written after them (none dropped)."""
        low = self.min is None or (later.min is not None and later.min < self.min)
        high = self.max is None or (later.max is not None and later.max > self.max)
        return TagStats(
            later.last,
            later.last_step,
            later.min if low else self.min,
            later.min_step if low else self.min_step,
            later.max if high else self.max,
            later.max_step if high else self.max_step,
            self.count + later.count,
            self.nonfinite_step if self.nonfinite_step is not None else later.nonfinite_step,
            max(self.top_step, later.top_step),
        )


def tag_stats(steps: np.ndarray, values: np.ndarray) -> TagStats:
    """Statistics of a non-empty series (its points in writing order, after the rule)."""
    import numpy as np  # (heavy: only reading summaries needs it, not a query of the index)

    finite = np.isfinite(values)
    last = float(values[-1])
    low = high = low_step = high_step = None
    if finite.all():
        low_at, high_at = int(np.argmin(values)), int(np.argmax(values))
    elif finite.any():
        where = np.flatnonzero(finite)
        low_at = int(where[np.argmin(values[where])])
        high_at = int(where[np.argmax(values[where])])
    else:
        low_at = high_at = -1
    if low_at >= 0:
        low, low_step = float(values[low_at]), int(steps[low_at])
        high, high_step = float(values[high_at]), int(steps[high_at])
    bad = np.flatnonzero(~finite)
    return TagStats(
        last if math.isfinite(last) else None,
        int(steps[-1]),
        low,
        low_step,
        high,
        high_step,
        len(values),
        int(steps[bad[0]]) if len(bad) else None,
        int(steps.max()),
    )


@dataclass
class SeriesState:
    """What the index keeps of a run's series: statistics per tag, and where reading stopped."""

    tags: dict[str, TagStats] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)  # file name -> bytes read
    scalar_tags: list[str] = field(default_factory=list)  # (``RunReader.scalar_tags``)


def read_series_state(
    run_dir: str, previous: SeriesState | None = None, parts: tuple[str, ...] = ()
) -> SeriesState:
    """The series statistics of ``run_dir``, going on from ``previous`` when the rule allows
    (see the module's docstring), else read from the start. ``parts``: sub-folders whose
    scalars join the run's series under ``<part>/<tag>`` (a Keras run's ``train`` and
    ``validation``: ``tb_runs.py``); a tag two folders share has their points in folder
    order. Saved positions naming anything but a summary file of ``run_dir`` itself or of
    one of ``parts`` (a tampered shared index) start the read over: no file outside the run
    is opened."""
    # (heavy: only reading summaries needs the readers, not a query of the index)
    from trainledger.summary import RunReader, resolve_series

    folders = [("", run_dir)] + [(f"{p}/", os.path.join(run_dir, p)) for p in parts]
    if previous is not None and not all(_own_file(n, parts) for n in previous.positions):
        previous = None
    if previous is not None and previous.positions and _unshrunk(run_dir, previous.positions):
        state = _extend(folders, previous)
        if state is not None:
            return state
    out = SeriesState()
    for prefix, folder in folders:
        reader = RunReader(folder)
        raw = reader.read_scalar_sessions()
        for tag, points in raw.items():
            steps, _, values, _ = resolve_series(
                *points, reader.session_formats, reader.session_starts
            )
            if len(steps):
                _add(out.tags, prefix + tag, tag_stats(steps, values))
        _add_positions(out, prefix, reader)
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

    from trainledger.summary import MINDSPORE, RunReader, resolve_series

    out = SeriesState(dict(previous.tags))
    for prefix, folder in folders:
        reader = RunReader(folder)
        mine = {n[len(prefix) :]: o for n, o in previous.positions.items() if _in(n, prefix)}
        tags = [t[len(prefix) :] for t in previous.scalar_tags if t.startswith(prefix)]
        reader.resume(mine, tags)
        raw = reader.read_scalar_sessions()
        if reader.session_starts:
            return None  # a writer restarted (TensorBoard's rule drops earlier points)
        ms = [s for s, f in reader.session_formats.items() if f == MINDSPORE]
        for tag, points in raw.items():
            steps, _, _, sessions = points
            old = out.tags.get(prefix + tag)
            if old is not None and ms:
                ms_steps = steps[np.isin(sessions, ms)]
                if len(ms_steps) and int(ms_steps.min()) <= old.top_step:
                    return None  # a repeated or restarted MindSpore step
            steps, _, values, _ = resolve_series(*points, reader.session_formats)
            if len(steps):
                _add(out.tags, prefix + tag, tag_stats(steps, values))
        _add_positions(out, prefix, reader)
    return out


def _in(name: str, prefix: str) -> bool:
    """Whether saved position ``name`` is of the folder ``prefix`` names ("": the run's)."""
    return name.startswith(prefix) and "/" not in name[len(prefix) :]
