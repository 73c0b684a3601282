"""The web UI's API over a TensorBoard logdir mixed with lineage runs: the runs list, a run's
page and its charts (``query/tb_runs.py``), with nothing converted."""

from __future__ import annotations

from pathlib import Path

from tests.query.conftest import copy_golden
from tests.server.conftest import client_for
from tests.tb_logdirs import keras_run, torch_run


def test_runs_api_lists_tensorboard_runs_beside_lineage_runs(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    torch_run(base / "tb_torch", {"lr": 0.25, "opt": "adam"}, {"hparam/acc": 0.5}, [2.0, 1.0])
    keras_run(base / "tb_keras", [1.0, 0.5], [1.5, 0.75], {"units": 16})
    with client_for(base) as client:
        r = client.post("/api/v1/runs", json={"sorted_name": "summary_dir"})
        assert r.status_code == 200, r.text
        runs = {o["run_id"]: o for o in r.json()["object"]}
        assert sorted(runs) == [
            "adam_lr001", "momentum_lr01", "momentum_twice", "sgd_noeval", "tb_keras", "tb_torch",
        ]  # fmt: skip
        assert runs["tb_torch"]["model_lineage"]["user_defined"] == {"lr": 0.25, "opt": "adam"}
        assert runs["tb_torch"]["model_lineage"]["metric"] == {"hparam/acc": 0.5}
        assert runs["sgd_noeval"]["model_lineage"]["optimizer"] == "SGD"  # lineage runs as ever
        picked = client.post("/api/v1/runs", json={"user_defined/lr": {"gt": 0.1}}).json()
        assert [o["run_id"] for o in picked["object"]] == ["tb_torch"]

        detail = client.get("/api/v1/runs/tb_keras")
        assert detail.status_code == 200, detail.text
        lineage = detail.json()["lineage"]
        assert lineage["user_defined"] == {"units": 16.0}
        assert lineage["metric"] == {"validation/epoch_loss": 0.75}
        assert lineage["hyper_parameters"] == {}

        tags = client.get("/api/v1/scalars/tags", params={"run": "tb_keras"}).json()
        assert tags["tags"] == ["train/epoch_loss", "validation/epoch_loss"]
        series = client.post(
            "/api/v1/scalars/series",
            json={"runs": ["tb_keras"], "tags": ["validation/epoch_loss"]},
        ).json()["series"]
        assert [p[2] for p in series[0]["points"]] == [1.5, 0.75]
