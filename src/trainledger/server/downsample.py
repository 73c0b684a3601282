"""Downsampling of scalar series for the browser.

A chart a few hundred pixels wide cannot show 100,000 points, and sending them costs more
than drawing them. Averaging would hide exactly what people look for in a loss curve (the
spike, the best value), so each bucket keeps its first, last, minimum and maximum point:
the drawn envelope is the same as with every point, and the global extremes always survive.
Pure functions over arrays and sequences; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Point = tuple[int, float, float]  # (step, wall_time, value)

DEFAULT_MAX_POINTS = 1000
_PER_BUCKET = 4  # first, last, min, max


def _check(max_points: int) -> None:
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < _PER_BUCKET:
        raise ValueError(f"max_points expected an int >= {_PER_BUCKET}, received: {max_points!r}")


def keep_indices(values: np.ndarray, max_points: int = DEFAULT_MAX_POINTS) -> np.ndarray:
    """Indices (ascending) of the points to keep out of ``values``: at most ``max_points``.

    Every bucket of consecutive points contributes its first, last, min and max (NaN
    ignored), so the overall first, last, minimum and maximum are always kept.
    """
    _check(max_points)
    n = len(values)
    if n <= max_points:
        return np.arange(n)
    values = np.asarray(values, dtype=np.float64)
    n_buckets = max_points // _PER_BUCKET
    bounds = np.linspace(0, n, n_buckets + 1).astype(np.int64)
    keep: list[int] = []
    for b in range(n_buckets):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if hi <= lo:
            continue
        chosen = {lo, hi - 1}
        chunk = values[lo:hi]
        if not np.all(np.isnan(chunk)):
            chosen.add(lo + int(np.nanargmin(chunk)))
            chosen.add(lo + int(np.nanargmax(chunk)))
        keep.extend(sorted(chosen))
    return np.asarray(keep, dtype=np.int64)


def downsample(points: Sequence[Point], max_points: int = DEFAULT_MAX_POINTS) -> list[Point]:
    """``points`` ((step, wall_time, value) in order) reduced by :func:`keep_indices`."""
    _check(max_points)
    if len(points) <= max_points:
        return list(points)
    kept = keep_indices(np.array([p[2] for p in points], dtype=np.float64), max_points)
    return [points[int(i)] for i in kept]


def nonfinite_marks(steps: np.ndarray, values: np.ndarray) -> list[dict[str, int | str]]:
    """The first step of each kind of non-finite value (``"nan"``, ``"inf"``, ``"-inf"``)
    among ``values``, by step: ``[{"step": 72, "value": "inf"}, ...]``.

    Why from the full data: JSON sends NaN and inf as null, and downsampling keeps only a
    bucket's first, last, min and max (NaN ignored), so a NaN inside a bucket would never
    reach the chart; the chart marks these steps instead."""
    values = np.asarray(values, dtype=np.float64)
    marks: list[dict[str, int | str]] = []
    for kind, found in (
        ("nan", np.isnan(values)),
        ("inf", np.isposinf(values)),
        ("-inf", np.isneginf(values)),
    ):
        at = np.flatnonzero(found)
        if len(at):
            marks.append({"step": int(steps[at[0]]), "value": kind})
    return sorted(marks, key=lambda m: (m["step"], str(m["value"])))


def json_number(value: float) -> float | None:
    """JSON has no NaN or infinity: send them as null so the chart shows a gap."""
    return value if math.isfinite(value) else None
