"""The series route answers a long merged series from its overview in the index: the same
shape as from the points, the same spikes, first and last points, and the points read instead
whenever the overview cannot say (stale, sessions apart, a narrow zoom, a series that went
non-finite: its NaN and infinities are reported from the full data, never a downsample)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runs import write_run
from tests.server.conftest import client_for
from trainledger.lineage.records import RunValues
from trainledger.query import series_overviews
from trainledger.server.downsample import keep_indices
from trainledger.server.run_store import IndexedRunStore
from trainledger.summary import SeriesOverview, SummaryRecord

N = series_overviews.MIN_POINTS * 3
SPIKE, DIP = N // 3 + 1, 2 * N // 3 + 5


def long_run(base: Path, name: str = "long", *, finite: bool = True) -> np.ndarray:
    values = 1.0 + np.random.default_rng(3).random(N)
    values[SPIKE] = 50.0  # one step
    values[DIP] = -20.0 if finite else -np.inf
    if not finite:
        values[N // 2 : N // 2 + 4_000] = np.nan  # a gap of several buckets
    run_dir = write_run(base, name, run=RunValues(status="finished", duration=1.0))
    with SummaryRecord(run_dir) as record:
        rows = [(2 * i, 1.7e9 + i, float(v)) for i, v in enumerate(values.tolist())]
        record.record_scalar_rows(("loss",), rows)
    return values


def ask(client: Any, **body: Any) -> dict[str, Any]:
    r = client.post("/api/v1/scalars/series", json={"runs": ["long"], "tags": ["loss"], **body})
    assert r.status_code == 200, r.text
    [series] = r.json()["series"]
    return series  # type: ignore[no-any-return]


@pytest.fixture
def no_points(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every read of a run's points (none may happen when the overview answers)."""
    reads: list[str] = []
    real = IndexedRunStore.scalar_series

    def spy(self: IndexedRunStore, run_id: str, tag: str, view: str = "merged") -> Any:
        reads.append(view)
        return real(self, run_id, tag, view)

    monkeypatch.setattr(IndexedRunStore, "scalar_series", spy)
    return reads


def test_an_unzoomed_chart_is_answered_from_the_overview(
    tmp_path: Path, no_points: list[str]
) -> None:
    values = long_run(tmp_path)
    with client_for(tmp_path) as c:
        fast = ask(c, max_points=1000)
        assert no_points == []
        raw = ask(c, max_points=1000, view="sessions")  # (points read: the raw downsample)
    assert no_points == ["sessions"]
    assert set(fast) == set(raw) and (fast["total"], fast["in_range"]) == (N, N)
    assert 4 * 250 >= len(fast["points"]) > 900 and len(fast["sessions"]) == len(fast["points"])
    steps = [p[0] for p in fast["points"]]
    assert steps == sorted(steps) and fast["points"][0] == raw["points"][0]
    assert fast["points"][-1] == raw["points"][-1]
    kept = dict((p[0], p[2]) for p in fast["points"])
    assert kept[2 * SPIKE] == 50.0 and kept[2 * DIP] == -20.0
    assert all(isinstance(s, int) for s in fast["sessions"])
    # every point served is a real point of the run
    for step, wall, value in fast["points"]:
        i = step // 2
        assert wall == 1.7e9 + i
        assert (value is None and not np.isfinite(values[i])) or value == np.float32(values[i])
    expected = keep_indices(values, 1000)
    assert {2 * int(i) for i in expected if values[i] > 5 or values[i] < 0} <= set(kept)


def test_a_wide_zoom_is_answered_from_it_a_narrow_one_from_the_points(
    tmp_path: Path, no_points: list[str]
) -> None:
    values = long_run(tmp_path)
    low, high = 2 * 1_000, 2 * (N - 1_000)
    with client_for(tmp_path) as c:
        wide = ask(c, max_points=400, step_min=low, step_max=high)
        assert no_points == []
        narrow = ask(c, max_points=400, step_min=2 * SPIKE - 600, step_max=2 * SPIKE + 600)
        assert no_points == ["merged"]
    steps = [p[0] for p in wide["points"]]
    assert low <= steps[0] < low + 2 * 64 and high - 2 * 64 < steps[-1] <= high
    assert 2 * SPIKE in steps and len(steps) <= 400
    assert abs(wide["in_range"] - (N - 2_000 + 1)) <= 64  # (exact to a bucket at each edge)
    assert narrow["in_range"] == 601 and 2 * SPIKE in [p[0] for p in narrow["points"]]
    assert narrow["total"] == wide["total"] == len(values)


def test_a_series_that_went_nonfinite_is_read_from_its_points(
    tmp_path: Path, no_points: list[str]
) -> None:
    long_run(tmp_path, finite=False)
    with client_for(tmp_path) as c:
        answer = ask(c, max_points=1000)
    assert no_points == ["merged"]
    assert answer["nonfinite"] == [
        {"step": 2 * (N // 2), "value": "nan"},
        {"step": 2 * DIP, "value": "-inf"},
    ]
    # the gap shows as nulls
    assert None in [p[2] for p in answer["points"] if N // 2 <= p[0] // 2 < N // 2 + 4_000]


def test_a_stale_overview_is_not_served(tmp_path: Path, no_points: list[str]) -> None:
    """Points appended after the index's last re-scan: the overview no longer matches the
    file, so the points are read (and the answer has them)."""
    long_run(tmp_path)
    store = IndexedRunStore(
        tmp_path,
        rescan_interval=3600,
        stale_after=3600,
        background_rescan=False,
        scalar_interval=0.0,
    )
    assert store.scalar_overview("long", "loss") is not None
    with SummaryRecord(tmp_path / "long") as record:
        record.record_scalar_rows(("loss",), [(2 * N, 1.7e9 + N, 3.0)])
    try:
        assert store.scalar_overview("long", "loss") is None
        steps, _, _, _ = store.scalar_series("long", "loss")
        assert len(steps) == N + 1 and no_points == ["merged"]
    finally:
        store.close()


def test_select_keeps_what_the_raw_downsample_keeps() -> None:
    """The overview's downsample against the points' one, on a series with spikes at random
    places: the same first and last points, and every spike of one step."""
    rng = np.random.default_rng(5)
    n = 300_001
    values = rng.normal(size=n)
    spikes = rng.choice(n, 20, replace=False)
    values[spikes] = 100.0 + np.arange(20)
    steps = np.arange(n, dtype=np.int64)
    overview = SeriesOverview.of(steps, steps * 0.5, values, np.zeros(n, dtype=np.int32))
    found = overview.select(1000)
    assert found is not None
    kept, in_range = found
    raw = keep_indices(values, 1000)
    assert in_range == n and len(kept) <= 1000
    assert kept["pos"][0] == raw[0] and kept["pos"][-1] == raw[-1] == n - 1
    assert set(spikes.tolist()) <= set(kept["pos"].tolist())
    assert set(spikes.tolist()) <= set(raw.tolist())
    assert overview.select(5000) is None  # (fewer buckets than points asked: read them)
