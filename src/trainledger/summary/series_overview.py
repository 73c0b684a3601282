"""A long scalar series reduced to a bounded number of buckets (``SeriesOverview``), each
keeping its first, last, minimum and maximum point, so a chart's first request over many long
runs reads a few kilobytes per run instead of every point.

Why these four: the UI's downsample (``server/downsample.py``) keeps exactly them per bucket,
so a downsample of an overview, grouping whole overview buckets, keeps every point that is
the extreme of its group: a one-step spike, the global extremes, the first and last points.
NaN is ignored by the minimum and maximum as there (an all-NaN bucket keeps only its first and
last point, which may be NaN), and an infinity is an ordinary extreme.

Why buckets of a power-of-two width: appending points fills the last bucket and adds new
ones; when the count would pass ``MAX_BUCKETS`` neighbours are merged in pairs and the width
doubles. The buckets are then always ``[k * width, (k + 1) * width)`` of the series, with
``width`` the smallest power of two that fits the count in ``MAX_BUCKETS``, and the merge
keeps the first occurrence of an extreme: an overview grown by appends is bit for bit the one
built from all the points at once (which the index relies on: ``query/series_index.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SeriesOverview"]

#: one point of a bucket: its position in the series, then what the series holds of it
POINT = np.dtype(
    [("pos", "<i8"), ("step", "<i8"), ("wall", "<f8"), ("value", "<f8"), ("session", "<i4")]
)
FIRST, LOW, HIGH, LAST = range(4)  # a bucket's slots
_HEADER = np.dtype("<i8")
_FORMAT = 1  # the layout of ``to_bytes``; another is not read (the index rebuilds it)


@dataclass
class SeriesOverview:
    """``buckets``: (n, 4) ``POINT`` rows (first, min, max, last) of consecutive ``width``
    points each (the last bucket may hold fewer); ``count``: the points of the series;
    ``ordered``: whether its steps never decrease (a step range is then a run of buckets)."""

    buckets: np.ndarray
    width: int
    count: int
    ordered: bool

    MAX_BUCKETS = 4096

    @classmethod
    def empty(cls) -> SeriesOverview:
        return cls(np.zeros((0, 4), dtype=POINT), 1, 0, True)

    @classmethod
    def of(
        cls, steps: np.ndarray, walls: np.ndarray, values: np.ndarray, sessions: np.ndarray
    ) -> SeriesOverview:
        """The overview of a series (its points in order, after the series rule)."""
        found = cls.empty()
        found.append(steps, walls, values, sessions)
        return found

    def append(
        self, steps: np.ndarray, walls: np.ndarray, values: np.ndarray, sessions: np.ndarray
    ) -> None:
        """Points written after those the overview holds (none of them dropped by the rule)."""
        n = len(steps)
        if n == 0:
            return
        if self.ordered:
            first_ok = self.count == 0 or int(steps[0]) >= int(self.buckets[-1, LAST]["step"])
            self.ordered = first_ok and bool(np.all(np.diff(steps) >= 0))
        points = np.empty(n, dtype=POINT)
        points["pos"] = np.arange(self.count, self.count + n)
        points["step"], points["wall"] = steps, walls
        points["value"], points["session"] = values, sessions
        width = self.width
        total = self.count + n
        while -(-total // width) > self.MAX_BUCKETS:
            width *= 2
        while self.width < width:
            self.buckets = _pairs(self.buckets)
            self.width *= 2
        rows = [self.buckets]
        room = (-self.count) % width  # free places in the last bucket
        if room:
            head, points = points[:room], points[room:]
            last = merge(self.buckets[-1:], _rows(head, len(head)))
            rows = [self.buckets[:-1], last]
        if len(points):
            rows.append(_rows(points, width))
        self.buckets = np.concatenate(rows)
        self.count = total

    def points(self) -> np.ndarray:
        """Every point the buckets keep, once each, in series order (``POINT`` rows)."""
        return unique_points(self.buckets)

    def select(
        self, max_points: int, step_min: int | None = None, step_max: int | None = None
    ) -> tuple[np.ndarray, int] | None:
        """The points (``POINT`` rows, in order) a downsample to ``max_points`` keeps, and
        how many points lie in the step range; None when the overview cannot say (fewer than
        ``max_points`` buckets in the range, or a range over steps that go back).

        As the raw downsample (``server/downsample.py``): ``max_points // 4`` groups, each
        keeping its first, last, min and max point, but each group is whole overview buckets
        (at least four), so its extremes are exact. With a range, the two buckets it cuts
        through add only their kept points that lie inside it (so does the count): the edges
        are exact to one bucket, less than a quarter of a group.
        """
        found = self._in_range(step_min, step_max)
        if found is None or len(found[0]) < max_points:
            return None
        rows, inside = found
        groups = max_points // 4
        group = np.arange(len(rows)) * groups // len(rows)
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ends = np.r_[starts[1:], len(rows)] - 1
        values = rows[:, LOW]["value"]
        low = _group_first(rows[:, LOW], group, np.where(np.isnan(values), np.inf, values))
        values = rows[:, HIGH]["value"]
        high = _group_first(rows[:, HIGH], group, np.where(np.isnan(values), np.inf, -values))
        chosen = np.concatenate([rows[starts, FIRST], low, high, rows[ends, LAST]])
        _, once = np.unique(chosen["pos"], return_index=True)
        return chosen[once], inside

    def _in_range(self, low: int | None, high: int | None) -> tuple[np.ndarray, int] | None:
        """The buckets of the steps ``low..high`` (None: no bound) and the points in them."""
        if low is None and high is None:
            return self.buckets, self.count
        if not self.ordered:
            return None
        low = -(2**63) if low is None else low
        high = 2**63 - 1 if high is None else high
        start = int(np.searchsorted(self.buckets[:, FIRST]["step"], low, "left"))
        stop = int(np.searchsorted(self.buckets[:, LAST]["step"], high, "right"))
        if stop <= start:
            return None
        inside = (stop - start) * self.width - (
            len(self.buckets) * self.width - self.count if stop == len(self.buckets) else 0
        )
        rows = [self.buckets[start:stop]]
        for at, where in ((start - 1, 0), (stop, 2)):
            if 0 <= at < len(self.buckets):
                kept = unique_points(self.buckets[at : at + 1])
                kept = kept[(kept["step"] >= low) & (kept["step"] <= high)]
                if len(kept):
                    rows.insert(where, _rows(kept, len(kept)))
                    inside += len(kept)
        return np.concatenate(rows), inside

    def to_bytes(self) -> bytes:
        """A fixed little-endian layout (a header of int64, then the ``POINT`` rows)."""
        head = np.array([_FORMAT, self.width, self.count, int(self.ordered)], dtype=_HEADER)
        return head.tobytes() + np.ascontiguousarray(self.buckets).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> SeriesOverview | None:
        """What ``to_bytes`` wrote (None: another format, or damaged)."""
        size = 4 * _HEADER.itemsize
        if len(data) < size or (len(data) - size) % (4 * POINT.itemsize):
            return None
        fmt, width, count, ordered = np.frombuffer(data, dtype=_HEADER, count=4).tolist()
        if fmt != _FORMAT or width < 1:
            return None
        buckets = np.frombuffer(data, dtype=POINT, offset=size).reshape(-1, 4)
        if len(buckets) != -(-count // width):
            return None
        return cls(buckets, width, count, bool(ordered))


def unique_points(rows: np.ndarray) -> np.ndarray:
    """The points of bucket rows, once each, by position."""
    flat = rows.reshape(-1)
    _, first = np.unique(flat["pos"], return_index=True)
    return flat[first]


def _group_first(slots: np.ndarray, group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per group, the slot of the smallest ``key`` (NaN values last, then the earliest)."""
    order = np.lexsort((slots["pos"], np.isnan(slots["value"]), key, group))
    firsts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    return slots[order[firsts]]


def _rows(points: np.ndarray, width: int) -> np.ndarray:
    """Buckets of ``width`` consecutive points (the last may hold fewer)."""
    n = len(points)
    count = -(-n // width)
    flat = np.full(count * width, np.nan)
    flat[:n] = points["value"]
    values = flat.reshape(count, width)
    starts = np.arange(count) * width
    out = np.empty((count, 4), dtype=POINT)
    out[:, FIRST] = points[starts]
    out[:, LAST] = points[np.minimum(starts + width, n) - 1]
    out[:, LOW] = points[starts + _first_extreme(values, low=True)]
    out[:, HIGH] = points[starts + _first_extreme(values, low=False)]
    return out


def _first_extreme(values: np.ndarray, *, low: bool) -> np.ndarray:
    """Per row, ``np.nanargmin`` (``low``) or ``np.nanargmax``; 0 for a row of NaN only."""
    fill = np.inf if low else -np.inf
    key = np.where(np.isnan(values), fill, values)
    at = key.argmin(axis=1) if low else key.argmax(axis=1)
    rows = np.arange(len(values))
    # a NaN chosen where the row's extreme is the infinity ``fill`` (NaN first, then fill)
    wrong = np.isnan(values[rows, at]) & np.any(values == fill, axis=1)
    if wrong.any():
        at[wrong] = np.argmax(values[wrong] == fill, axis=1)
    return at


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Buckets ``a`` each followed by the bucket of ``b`` beside it, as one bucket each."""
    out = a.copy()
    out[:, LAST] = b[:, LAST]
    for slot, better in ((LOW, np.less), (HIGH, np.greater)):
        old, new = a[:, slot]["value"], b[:, slot]["value"]
        take = better(new, old) | (np.isnan(old) & ~np.isnan(new))  # (ties: the first)
        out[take, slot] = b[take, slot]
    return out


def _pairs(buckets: np.ndarray) -> np.ndarray:
    """Neighbouring buckets merged in pairs (an odd last one stays as it is)."""
    paired = len(buckets) // 2 * 2
    merged = merge(buckets[0:paired:2], buckets[1:paired:2])
    return np.concatenate([merged, buckets[paired:]])
