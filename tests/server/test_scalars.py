"""Scalar tags and downsampled series, read incrementally from the event files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runs import sample_run, write_scalars
from tests.server.conftest import client_for


def test_tags_of_runs(client) -> None:  # type: ignore[no-untyped-def]
    r = client.get("/api/v1/scalars/tags", params=[("run", "run00"), ("run", "run01")])
    assert r.status_code == 200
    assert r.json() == {
        "runs": {"run00": ["accuracy", "loss"], "run01": ["accuracy", "loss"]},
        "tags": ["accuracy", "loss"],
    }


def test_tags_need_a_run(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/scalars/tags").status_code == 422


def test_series_for_runs_by_tags(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        "/api/v1/scalars/series",
        json={"runs": ["run00", "run01"], "tags": ["loss", "accuracy", "missing"]},
    )
    assert r.status_code == 200
    series = r.json()["series"]
    assert [(s["run_id"], s["tag"]) for s in series] == [
        ("run00", "loss"),
        ("run00", "accuracy"),
        ("run01", "loss"),
        ("run01", "accuracy"),
    ]
    loss = series[0]
    assert loss["total"] == 30 and len(loss["points"]) == 30
    step, wall, value = loss["points"][0]
    assert (step, wall) == (0, 1_700_000_000.0) and value == pytest.approx(2.0)


def test_series_are_downsampled_keeping_extremes(tmp_path: Path) -> None:
    base = tmp_path / "base"
    run = sample_run(base, "long", 0, scalars=0)
    write_scalars(run, 0, 3000)
    with client_for(base) as c:
        body = c.post(
            "/api/v1/scalars/series", json={"runs": ["long"], "tags": ["loss"], "max_points": 100}
        ).json()
    [series] = body["series"]
    points = series["points"]
    assert series["total"] == 3000 and len(points) <= 100
    steps = [p[0] for p in points]
    assert steps == sorted(steps) and steps[0] == 0 and steps[-1] == 2999
    values = [p[2] for p in points]
    assert max(values) == pytest.approx(2.0) and min(values) == values[-1]


def test_new_points_are_read_incrementally(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    def total() -> int:
        body = client.post(
            "/api/v1/scalars/series", json={"runs": ["run02"], "tags": ["loss"]}
        ).json()
        return body["series"][0]["total"]

    assert total() == 30
    write_scalars(base / "run02", 2, 10, start=30)
    assert total() == 40


@pytest.mark.parametrize(
    "body",
    [
        {"runs": [], "tags": ["loss"]},
        {"runs": ["run00"], "tags": []},
        {"runs": ["run00"], "tags": ["loss"], "max_points": 2},
        {"runs": "run00", "tags": ["loss"]},
        {"runs": ["run00"] * 51, "tags": ["loss"]},
        {"runs": ["run00"], "tags": ["loss"], "x": 1},
    ],
)
def test_bad_series_request_is_422(client, body) -> None:  # type: ignore[no-untyped-def]
    assert client.post("/api/v1/scalars/series", json=body).status_code == 422


def test_unknown_run_is_404(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/scalars/tags", params={"run": "nope"}).status_code == 404
    r = client.post("/api/v1/scalars/series", json={"runs": ["nope"], "tags": ["loss"]})
    assert r.status_code == 404


def test_mindspore_runs_show_their_scalars(tmp_path: Path) -> None:
    """MindSpore's own runs (``_MS`` summary files, found through their lineage files) give
    their ``loss/auto`` curve to Compare scalars, every point as MindSpore wrote it."""
    import shutil

    from trainledger.summary import read_scalars

    golden = Path(__file__).parents[1] / "golden" / "mindspore-runs"
    base = tmp_path / "base"
    shutil.copytree(golden, base)
    with client_for(base) as c:
        runs = ["momentum_lr01", "sgd_noeval"]
        tags = c.get("/api/v1/scalars/tags", params=[("run", r) for r in runs]).json()
        assert tags["tags"] == ["loss/auto"]
        body = c.post("/api/v1/scalars/series", json={"runs": runs, "tags": ["loss/auto"]})
    for series in body.json()["series"]:
        steps, walls, values = read_scalars(golden / series["run_id"])["loss/auto"]
        assert series["total"] == len(steps)
        assert [p[0] for p in series["points"]] == steps.tolist()
        assert [p[2] for p in series["points"]] == pytest.approx(values.tolist())


def test_a_zoomed_range_is_downsampled_from_the_full_data(tmp_path: Path) -> None:
    """step_min/step_max: the chart's zoom re-buckets only the visible steps, so a plateau
    of a few steps inside a long run shows point by point once zoomed into."""
    from trainledger.summary import SummaryRecord

    base = tmp_path / "base"
    run = sample_run(base, "long", 0, scalars=0)
    plateau = range(12_000, 12_004)
    with SummaryRecord(run) as record:
        for step in range(20_000):
            value = 5.0 if step in plateau else 1.0 + step * 1e-5
            record.add_scalar("loss", value, step, wall_time=1_700_000_000.0 + step)
    body = {"runs": ["long"], "tags": ["loss"], "max_points": 100}
    with client_for(base) as c:
        [whole] = c.post("/api/v1/scalars/series", json=body).json()["series"]
        zoom = {**body, "step_min": 11_990, "step_max": 12_039}
        [zoomed] = c.post("/api/v1/scalars/series", json=zoom).json()["series"]
        right = c.post("/api/v1/scalars/series", json={**body, "step_min": 19_990}).json()
        bad = c.post("/api/v1/scalars/series", json={**body, "step_min": 9, "step_max": 3})
    at_five = [p[0] for p in whole["points"] if p[2] == 5.0]
    assert whole["total"] == whole["in_range"] == 20_000 and len(at_five) < len(plateau)
    assert zoomed["total"] == 20_000 and zoomed["in_range"] == 50
    assert [p[0] for p in zoomed["points"]] == list(range(11_990, 12_040))  # every step
    assert [p[0] for p in zoomed["points"] if p[2] == 5.0] == list(plateau)
    assert [p[0] for p in right["series"][0]["points"]] == list(range(19_990, 20_000))
    assert bad.status_code == 422 and "step_min expected <= step_max" in bad.text
