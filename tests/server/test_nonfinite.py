"""NaN and inf are flagged, never lost: the series API reports the first step of each kind
of non-finite value from the full data (a NaN that downsampling or an overview leaves out
included), and a run whose loss or metric went non-finite is flagged in the table's rows and
on its run page (a gradient norm's inf flags nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.diverging_runs import INF_STEP, NAN_STEP, write_diverging_base
from tests.server.conftest import client_for


def series(client: Any, runs: list[str], tags: list[str], **extra: Any) -> list[dict[str, Any]]:
    body = {"runs": runs, "tags": tags, **extra}
    answer = client.post("/api/v1/scalars/series", json=body)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["series"])


def test_the_series_api_reports_each_kind_of_nonfinite_value(tmp_path: Path) -> None:
    base = write_diverging_base(tmp_path / "runs")
    with client_for(base) as client:
        got = {
            (s["run_id"], s["tag"]): s["nonfinite"]
            for s in series(client, ["healthy", "diverged"], ["loss", "eval/loss", "grad_norm"])
        }
        # (the same with a zoomed range past both: the steps are the whole series')
        zoomed = series(client, ["diverged"], ["loss"], step_min=100, max_points=8)
    assert got[("diverged", "loss")] == [
        {"step": INF_STEP, "value": "inf"},
        {"step": NAN_STEP, "value": "nan"},
    ]
    assert got[("diverged", "eval/loss")] == [{"step": NAN_STEP, "value": "nan"}]
    assert got[("healthy", "loss")] == [] and got[("healthy", "eval/loss")] == []
    assert got[("healthy", "grad_norm")] == [{"step": 30, "value": "inf"}]
    assert zoomed[0]["nonfinite"] == got[("diverged", "loss")]


def test_a_nan_downsampling_drops_is_still_reported(tmp_path: Path) -> None:
    """A 30,000-point loss (an overview in the index) with one NaN inside a bucket: none of
    the points sent is null, yet the NaN's step is reported; the healthy case is unchanged."""
    base = write_diverging_base(tmp_path / "runs", long_nan_at=12_345)
    with client_for(base) as client:
        [loss] = series(client, ["healthy"], ["loss"], max_points=100)
        [eval_loss] = series(client, ["healthy"], ["eval/loss"], max_points=100)
    assert loss["total"] == 30_000 and len(loss["points"]) <= 100
    assert all(value is not None for _, _, value in loss["points"])  # (dropped by sampling)
    assert loss["nonfinite"] == [{"step": 12_345, "value": "nan"}]
    assert eval_loss["nonfinite"] == []


def test_a_run_whose_loss_went_nonfinite_is_flagged_in_rows_and_on_its_page(
    tmp_path: Path,
) -> None:
    base = write_diverging_base(tmp_path / "runs")
    with client_for(base) as client:
        rows = client.post("/api/v1/runs", json={"limit": 10}).json()["object"]
        pages = {r: client.get(f"/api/v1/runs/{r}").json() for r in ("healthy", "diverged")}
    flags = {row["run_id"]: row["nonfinite"] for row in rows}
    diverged = [
        {"tag": "loss", "step": INF_STEP, "value": "inf"},
        {"tag": "eval/loss", "step": NAN_STEP, "value": "nan"},
    ]
    assert flags == {"healthy": [], "diverged": diverged, "outlier": []}  # (grad_norm: no)
    assert pages["diverged"]["nonfinite"] == diverged
    assert pages["healthy"]["nonfinite"] == []


def test_which_tags_flag_a_run() -> None:
    from trainledger.server.divergence import watched

    for tag in ("loss", "eval/loss", "loss/auto", "val_loss", "metric/accuracy", "test/acc"):
        assert watched(tag), tag
    for tag in ("grad_norm", "loss_scale", "learning_rate/auto", "device/memory", "lr"):
        assert not watched(tag), tag


def test_a_nan_metric_reads_nan_in_rows_and_points_yet_matches_no_condition(
    tmp_path: Path,
) -> None:
    """The index stores a NaN as NULL (SQL has no NaN); the rows and the chart's points say
    "NaN" (not missing) while conditions and sorting treat it as before: no comparison
    matches it, it sorts last, and MindInsight's own answer keeps None (issue 51 item 1)."""
    from tests.ui_sweep import write_sweep_base
    from trainledger.query import filter_summary_lineage

    base = write_sweep_base(tmp_path / "runs")
    with client_for(base) as client:
        rows = client.post("/api/v1/runs", json={"limit": 20}).json()["object"]
        points = client.post(
            "/api/v1/runs/points", json={"columns": ["metric/eval_loss", "metric/accuracy"]}
        ).json()
        above = client.post("/api/v1/runs", json={"metric/eval_loss": {"gt": 0.0}}).json()
        below = client.post("/api/v1/runs", json={"metric/eval_loss": {"lt": 100.0}}).json()
        orders = [
            [
                row["run_id"]
                for row in client.post(
                    "/api/v1/runs", json={"sorted_name": "metric/eval_loss", "sorted_type": way}
                ).json()["object"]
            ]
            for way in ("ascending", "descending")
        ]
    metrics = {row["run_id"]: row["model_lineage"]["metric"] for row in rows}
    assert metrics["diverged"] == {"eval_loss": "NaN", "accuracy": "Infinity"}
    assert metrics["run-00"] == {"eval_loss": 0.3, "accuracy": 0.5}
    at = points["run_ids"].index("diverged")
    assert points["columns"]["metric/eval_loss"][at] == "NaN"
    assert points["columns"]["metric/accuracy"][at] == "Infinity"
    assert None not in points["columns"]["metric/eval_loss"]
    assert above["count"] == below["count"] == 12  # every run but the NaN one
    assert "diverged" not in [r["run_id"] for r in above["object"] + below["object"]]
    # sorted as a missing value is (MindInsight's order: the least of all)
    assert [orders[0][0], orders[1][-1]] == ["diverged", "diverged"]
    mindinsight = filter_summary_lineage(str(base), {"summary_dir": {"in": ["./diverged"]}})
    assert mindinsight["object"][0]["model_lineage"]["metric"]["eval_loss"] is None
