"""The web UI's columns of series statistics (``max(accuracy)``...): offered by the column
chooser, filled in the table's rows, the chart's points and the CSV, and sortable, with the
values the query engine computes from the runs' summaries."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from trainledger.summary import read_scalars


def _expected(base: Any) -> dict[str, float]:
    """max(accuracy) and min(loss) of each run, from its own files."""
    out = {}
    for run in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        scalars = read_scalars(run)
        out[run.name] = (float(np.max(scalars["accuracy"][2])), float(np.min(scalars["loss"][2])))
    return out


def test_the_chooser_offers_statistics_and_the_rows_carry_them(client: Any, base: Any) -> None:
    columns = client.post("/api/v1/runs/columns", json={}).json()
    assert {"max(accuracy)", "min(loss)", "last(loss)"} <= set(columns["groups"]["Series"])
    assert "max(accuracy)" in columns["sortable"]
    expected = _expected(base)

    condition = {"series": ["max(accuracy)", "min(loss)"], "sorted_name": "min(loss)"}
    page = client.post("/api/v1/runs", json=condition).json()
    got = {
        o["run_id"]: (o["series"]["max(accuracy)"], o["series"]["min(loss)"])
        for o in page["object"]
    }
    assert got.keys() == expected.keys()
    for run, (high, low) in expected.items():
        assert np.isclose(got[run][0], high) and np.isclose(got[run][1], low)
    order = [o["run_id"] for o in page["object"]]
    assert order == sorted(expected, key=lambda r: expected[r][1])  # lowest loss first

    points = client.post(
        "/api/v1/runs/points", json={"condition": {}, "columns": ["max(accuracy)"], "max_runs": 50}
    ).json()
    by_run = dict(zip(points["run_ids"], points["columns"]["max(accuracy)"], strict=True))
    assert all(np.isclose(by_run[r], expected[r][0]) for r in expected)

    exported = client.post(
        "/api/v1/runs/export.csv", json={}, params={"columns": ["run_id", "min(loss)"]}
    )
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert all(np.isclose(float(r["min(loss)"]), expected[r["run_id"]][1]) for r in rows)


def test_a_bad_statistic_is_a_400_naming_it(client: Any) -> None:
    answer = client.post("/api/v1/runs", json={"series": ["median(loss)"]})
    assert answer.status_code == 400 and "median(loss)" in answer.text
