"""The first chart of many long runs (issue 32): ``POST /api/v1/scalars/series`` for ``--runs``
runs of ``--points`` points of one tag, answered from the index's overviews
(``summary/series_overview.py``) against reading every point (the raw path), and what the
overviews cost the indexer.

- ``index``: the base indexed from scratch (no index on disk) with overviews, against without
  them (``series_overviews.MIN_POINTS`` out of reach: the index then takes the writer's series
  sidecars and reads no point), in alternating, paired rounds.
- ``first request``: a fresh ``IndexedRunStore`` and app each round (FastAPI's TestClient, no
  socket), the index already built, then one request for all the runs, ``max_points`` 1000;
  the raw path is the same store with ``scalar_overview`` answering None. Alternating, paired
  rounds; medians with their ranges, and the per-round ratio.

The base (runs without lineage files: TensorBoard runs, each one event file written by
``SummaryRecord.record_scalar_rows``) is cached under ``/tmp``. Target: the first request
<= 2 s for 20 runs x 1,000,000 points once the runs are indexed.

    .venv/bin/python bench/series_overview.py [--runs 20] [--points 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainledger.query import LineageIndex, series_overviews
from trainledger.server.app import create_app
from trainledger.server.run_store import IndexedRunStore
from trainledger.storage import INDEX_DIRNAME
from trainledger.summary import SummaryRecord

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient


def make_base(runs: int, points: int) -> Path:
    base = Path(f"/tmp/tl-bench-overview-{runs}x{points}")
    done = base / ".complete"
    if done.exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for r in range(runs):
        values = np.exp(-np.arange(points) / points * 5) + 0.05 * rng.random(points)
        values[rng.integers(0, points)] = 10.0  # a one-step spike
        walls = (1.7e9 + np.arange(points)).tolist()
        rows = list(zip(range(points), walls, values.tolist(), strict=True))
        with SummaryRecord(base / f"run{r:03d}") as record:
            for lo in range(0, points, 100_000):
                record.record_scalar_rows(("loss",), rows[lo : lo + 100_000])
    done.touch()
    return base


def _index(base: Path, overviews: bool) -> float:
    shutil.rmtree(base / INDEX_DIRNAME, ignore_errors=True)
    kept = series_overviews.MIN_POINTS
    series_overviews.MIN_POINTS = kept if overviews else 2**62
    try:
        start = time.perf_counter()
        with LineageIndex(base) as index:
            index.refresh()
        return time.perf_counter() - start
    finally:
        series_overviews.MIN_POINTS = kept


def _first_request(base: Path, runs: list[str], raw: bool) -> tuple[float, int]:
    store = IndexedRunStore(base, background_rescan=False)
    if raw:
        store.scalar_overview = lambda run_id, tag: None  # type: ignore[method-assign]
    with TestClient(create_app(base, store=store)) as client:
        start = time.perf_counter()
        r = client.post(
            "/api/v1/scalars/series", json={"runs": runs, "tags": ["loss"], "max_points": 1000}
        )
        took = time.perf_counter() - start
    r.raise_for_status()
    series = r.json()["series"]
    assert len(series) == len(runs) and all(s["total"] > 0 for s in series)
    return took, sum(len(s["points"]) for s in series)


def _paired(rounds: int, a: Callable[[], Any], b: Callable[[], Any]) -> tuple[list[Any], list[Any]]:
    out_a: list[Any] = []
    out_b: list[Any] = []
    for i in range(rounds):
        for first in (a, b) if i % 2 == 0 else (b, a):
            (out_a if first is a else out_b).append(first())
    return out_a, out_b


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    base = make_base(args.runs, args.points)
    print(f"base: {args.runs} runs x {args.points:,} points ({time.perf_counter() - start:.1f} s)")
    with_ov, without = _paired(args.rounds, lambda: _index(base, True), lambda: _index(base, False))
    ratios = [a / b for a, b in zip(with_ov, without, strict=True)]
    print(f"index from scratch, with overviews:    {_spread(with_ov)}")
    print(f"index from scratch, without (sidecar): {_spread(without)}")
    print(
        f"  overviews add {statistics.median(with_ov) - statistics.median(without):.2f} s "
        f"(per-round ratio {min(ratios):.1f}-{max(ratios):.1f}x)"
    )
    _index(base, True)
    runs = [f"run{r:03d}" for r in range(args.runs)]
    fast, raw = _paired(
        args.rounds,
        lambda: _first_request(base, runs, raw=False),
        lambda: _first_request(base, runs, raw=True),
    )
    ratios = [b[0] / a[0] for a, b in zip(fast, raw, strict=True)]
    print(
        f"first request, from overviews: {_spread([t for t, _ in fast])}, "
        f"{fast[0][1]:,} points served"
    )
    print(
        f"first request, raw points:     {_spread([t for t, _ in raw])}, "
        f"{raw[0][1]:,} points served"
    )
    print(
        f"  raw / overviews per round: {min(ratios):.1f}-{max(ratios):.1f}x "
        f"(median {statistics.median(ratios):.1f}x); target <= 2 s"
    )


if __name__ == "__main__":
    main()
