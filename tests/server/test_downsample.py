"""Downsampling keeps first, last, min and max of every bucket, and never too many points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainledger.server.downsample import downsample, json_number, keep_indices


def points(values: list[float]) -> list[tuple[int, float, float]]:
    return [(i, float(i), v) for i, v in enumerate(values)]


def test_short_series_are_untouched() -> None:
    pts = points([3.0, 1.0, 2.0])
    assert downsample(pts, 4) == pts


def test_spike_survives() -> None:
    values = [1.0] * 10_000
    values[4321] = 99.0
    values[7777] = -5.0
    kept = downsample(points(values), 1000)
    assert len(kept) <= 1000
    assert (4321, 4321.0, 99.0) in kept and (7777, 7777.0, -5.0) in kept
    assert kept[0][0] == 0 and kept[-1][0] == 9999


def test_nan_is_ignored_for_extremes_but_all_nan_buckets_keep_their_ends() -> None:
    values = [math.nan] * 100 + [1.0, 5.0, 2.0] * 100
    idx = keep_indices(np.array(values), 8)
    kept = [values[i] for i in idx]
    assert 5.0 in kept and len(idx) <= 8
    assert idx[0] == 0 and idx[-1] == len(values) - 1


@pytest.mark.parametrize("bad", [3, 0, -1, True, 10.0, "100"])
def test_bad_max_points(bad: object) -> None:
    with pytest.raises(ValueError, match="max_points"):
        downsample(points([1.0] * 10), bad)  # type: ignore[arg-type]


def test_json_number() -> None:
    assert json_number(1.5) == 1.5
    assert json_number(math.nan) is None and json_number(math.inf) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=3000),
    st.integers(4, 300),
)
def test_properties(values: list[float], max_points: int) -> None:
    pts = points(values)
    kept = downsample(pts, max_points)
    assert len(kept) <= max(max_points, 0) or len(kept) == len(pts) <= max_points
    steps = [p[0] for p in kept]
    assert steps == sorted(set(steps))  # an ordered subsequence, no duplicates
    if values:
        assert kept[0] == pts[0] and kept[-1] == pts[-1]
        kept_values = [p[2] for p in kept]
        assert min(kept_values) == min(values) and max(kept_values) == max(values)
