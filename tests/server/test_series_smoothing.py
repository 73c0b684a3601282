"""The series API's ``smoothing`` (issue 51 item 8): TensorBoard's debiased EMA over the full
series, then the range and the downsampling: a step has the same smoothed value whatever the
zoom or the number of points asked for; NaN and inf are skipped by the average; a session
drawn apart is smoothed on its own. ``server/smoothing.py`` against a plain loop."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.server.conftest import client_for
from tests.server.test_series_overview import N, ask, long_run
from tests.server.test_series_sessions import _resumed_run
from trainledger.server.smoothing import smooth, smooth_sessions


def tensorboard(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing, as its dashboard writes it."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite or all(v == finite[0] for v in finite):
        return list(values)
    last, n, out = 0.0, 0, []
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight**n))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([math.nan, math.inf])),
        max_size=400,
    ),
    st.sampled_from([0.0, 0.05, 0.6, 0.9, 0.99, 0.999]),
)
def test_smooth_is_tensorboards_rule(values: list[float], weight: float) -> None:
    got = smooth(np.array(values, dtype=np.float64), weight)
    want = np.array(tensorboard(values, weight), dtype=np.float64)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-6, equal_nan=True)


def test_a_long_series_and_extreme_values_stay_exact() -> None:
    values = np.random.default_rng(1).normal(size=50_000) * 1e20
    for weight in (0.01, 0.6, 0.999):
        want = np.array(tensorboard(values.tolist(), weight))
        assert np.allclose(smooth(values, weight), want, rtol=1e-9, atol=1e10)


def test_bad_weight_and_sessions_apart() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        smooth(np.ones(3), 1.0)
    values = np.array([1.0, 3.0, 5.0, 10.0, 20.0])
    apart = smooth_sessions(values, np.array([0, 0, 0, 1, 1]), 0.5)
    assert apart[3] == 10.0  # a session's average starts afresh
    assert apart[:3].tolist() == smooth(values[:3], 0.5).tolist()


def _by_step(series: dict[str, Any]) -> dict[int, float | None]:
    return {p[0]: s for p, s in zip(series["points"], series["smoothed"], strict=True)}


def test_a_step_has_one_smoothed_value_at_every_zoom_and_downsampling(tmp_path: Path) -> None:
    values = long_run(tmp_path)
    want = smooth(values.astype(np.float32).astype(np.float64), 0.9)  # (stored as float32)
    with client_for(tmp_path) as client:
        plain = ask(client)
        assert plain["smoothed"] is None  # no smoothing asked: none sent
        whole = ask(client, smoothing=0.9)
        fine = ask(client, smoothing=0.9, max_points=4000)
        zoomed = ask(client, smoothing=0.9, step_min=2 * (N // 2), step_max=2 * (N // 2) + 300)
    for series in (whole, fine, zoomed):
        for step, value in _by_step(series).items():
            assert value == pytest.approx(want[step // 2], rel=1e-12)
    # the zoom's first point is the average of everything before it, not its raw value
    first = zoomed["points"][0]
    assert first[0] == 2 * (N // 2) and zoomed["smoothed"][0] != pytest.approx(first[2])
    assert len(zoomed["points"]) == 151 and len(whole["points"]) <= 1000
    assert len(_by_step(whole).keys() & _by_step(fine).keys()) > 100


def test_smoothing_skips_nonfinite_points_and_sessions_apart_restart(tmp_path: Path) -> None:
    long_run(tmp_path, finite=False)
    _resumed_run(tmp_path)
    with client_for(tmp_path) as client:
        gone = ask(client, smoothing=0.6, max_points=5000)
        pairs = zip(gone["points"], gone["smoothed"], strict=True)
        assert all((p[2] is None) == (s is None) for p, s in pairs)
        assert gone["nonfinite"]
        bodies = {"runs": ["resumed"], "tags": ["loss"], "smoothing": 0.5}
        merged = client.post("/api/v1/scalars/series", json=bodies).json()["series"][0]
        apart = client.post("/api/v1/scalars/series", json={**bodies, "view": "sessions"}).json()[
            "series"
        ][0]
        bad = client.post("/api/v1/scalars/series", json={**bodies, "smoothing": 1})
    assert bad.status_code == 422
    # merged: one average through the resume; apart: the resumed session's starts afresh
    assert merged["smoothed"][5] != pytest.approx(0.5 / 6)
    assert apart["sessions"][10] == 1 and apart["smoothed"][10] == pytest.approx(0.5 / 6)
