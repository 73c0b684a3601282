"""The JSON API over real runs: search, one run, annotations, CSV, datasets, status, OpenAPI."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.runs import graph_for, sample_run, write_run
from tests.server.conftest import client_for


def ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [obj["run_id"] for obj in response.json()["object"]]


def test_search_returns_mindinsight_shape_with_run_ids(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json={})
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == 6
    assert set(body["customized"]) == {"metric/accuracy", "user_defined/team", "user_defined/trial"}
    obj = body["object"][0]
    assert set(obj) >= {"summary_dir", "model_lineage", "dataset_graph", "added_info", "run_id"}
    assert obj["summary_dir"] == f"./{obj['run_id']}"


def test_search_sorts_filters_and_pages(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        "/api/v1/runs",
        json={"sorted_name": "learning_rate", "sorted_type": "descending", "limit": 2, "offset": 1},
    )
    assert ids(r) == ["run03", "run02"]
    assert r.json()["count"] == 6
    r = client.post(
        "/api/v1/runs", json={"optimizer": {"eq": "Adam"}, "sorted_name": "summary_dir"}
    )
    assert ids(r) == ["run00", "run03"]
    r = client.post(
        "/api/v1/runs",
        json={
            "metric/accuracy": {"ge": 0.53},
            "summary_dir": {"not_in": ["./run05"]},
            "sorted_name": "metric/accuracy",
        },
    )
    assert ids(r) == ["run03", "run04"]


def test_no_body_means_everything(client) -> None:  # type: ignore[no-untyped-def]
    assert client.post("/api/v1/runs").json()["count"] == 6


@pytest.mark.parametrize(
    "condition, needle",
    [
        ({"limit": 0}, "limit"),
        ({"optimizer": {"gt": "Adam"}}, "optimizer"),
        ({"learning_rate": {"like": 1}}, "compare condition"),
        ({"batch_size": {"in": 16}}, "list"),
        ({"sorted_type": "descending"}, "sorted_name"),
        ({"no_such_field": {"eq": 1}}, "not supported"),
    ],
)
def test_bad_condition_is_400_with_the_engine_message(client, condition, needle) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json=condition)
    assert r.status_code == 400
    assert r.json()["error"] == "LineageSearchConditionParamError"
    assert needle.lower() in r.json()["detail"].lower()


def test_summary_dir_outside_base_is_400(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json={"summary_dir": {"eq": "/etc"}})
    assert r.status_code == 400
    assert "outside" in r.json()["detail"]


@pytest.mark.parametrize("payload", [[1, 2], "text", 3])
def test_body_that_is_not_an_object_is_422(client, payload) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json=payload)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body"]


def test_malformed_json_is_422(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        "/api/v1/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422


def test_points_are_column_oriented_over_all_matches(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        "/api/v1/runs/points",
        json={
            "condition": {"batch_size": {"le": 32}, "limit": 1, "offset": 0},
            "columns": ["batch_size", "metric/accuracy", "user_defined/team"],
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == 4 and len(body["run_ids"]) == 4  # paging ignored
    assert set(body["columns"]["batch_size"]) == {16, 32}
    index = body["run_ids"].index("run01")
    assert body["columns"]["metric/accuracy"][index] == pytest.approx(0.51)
    assert body["columns"]["user_defined/team"][index] == "b"


def test_points_rejects_unknown_fields(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs/points", json={"columns": ["loss"], "bogus": 1})
    assert r.status_code == 422


def test_columns_are_grouped_for_the_chooser(client) -> None:  # type: ignore[no-untyped-def]
    body = client.post("/api/v1/runs/columns", json={}).json()
    assert body["groups"]["Metrics"] == ["loss", "metric/accuracy"]
    assert body["groups"]["User defined"] == ["user_defined/team", "user_defined/trial"]
    assert "learning_rate" in body["groups"]["Hyperparameters"]
    assert "optimizer" in body["groups"]["Other"]
    assert "metric/accuracy" in body["sortable"]


def test_csv_export_is_the_filtered_sorted_table(client) -> None:  # type: ignore[no-untyped-def]
    client.put("/api/v1/runs/run03/annotation", json={"remark": '=HYPERLINK("x")'})
    r = client.post(
        "/api/v1/runs/export.csv?columns=run_id&columns=learning_rate&columns=remark",
        json={"optimizer": {"eq": "Adam"}, "sorted_name": "learning_rate", "limit": 1, "offset": 0},
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows == [
        ["run_id", "learning_rate", "remark"],
        ["run00", "0.01", ""],
        ["run03", "0.04", '\'=HYPERLINK("x")'],
    ]


def test_csv_export_defaults_to_every_column(client) -> None:  # type: ignore[no-untyped-def]
    rows = list(csv.DictReader(io.StringIO(client.post("/api/v1/runs/export.csv").text)))
    assert len(rows) == 6
    assert {"run_id", "metric/accuracy", "user_defined/team", "tag", "remark"} <= set(rows[0])


def test_run_detail_has_lineage_status_and_checkpoints(client) -> None:  # type: ignore[no-untyped-def]
    r = client.get("/api/v1/runs/run01")
    assert r.status_code == 200
    body = r.json()
    assert body["run_id"] == "run01" and body["summary_dir"] == "./run01"
    assert body["status"] == "finished"
    assert body["lineage"]["hyper_parameters"]["optimizer"] == "SGD"
    assert body["lineage"]["user_defined"] == {"team": "b", "trial": 1}
    assert body["lineage"]["dataset_graph"]["op_type"] == "DataLoader"
    assert "summary_dir" not in body["lineage"]  # no absolute paths to the page
    [ckpt] = body["checkpoints"]
    assert ckpt["name"] == "ckpt/mlp-2_20.ckpt"
    assert (ckpt["size"], ckpt["epoch"], ckpt["step_in_epoch"]) == (101, 2, 20)
    assert ckpt["step"] == 70  # the global step, as the lineage records it (not the name's 20)
    assert body["added_info"] == {"tag": 0, "remark": ""}


def test_unknown_run_is_404(client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/runs/nope").status_code == 404
    assert client.put("/api/v1/runs/nope/annotation", json={"tag": 1}).status_code == 404


def test_datasets_group_runs_on_the_same_data_whatever_the_batch_size(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    groups = client.get("/api/v1/datasets").json()["groups"]
    # six runs over one TensorDataset with batch sizes 16, 32, 64: one dataset, not three
    assert len(groups) == 1
    assert groups[0]["dataset_marks"] == ["1", "2", "3"] and groups[0]["dataset_mark"] == "1"
    assert groups[0]["batch_sizes"] == [16, 32, 64]
    assert sorted(groups[0]["run_ids"]) == [f"run0{i}" for i in range(6)]
    other = graph_for(16, source="ImageFolder")  # other data: its own group
    write_run(base, "other", ts=1_900_000_000, graph=other, optimizer="SGD")
    groups = client.get("/api/v1/datasets").json()["groups"]
    assert [sorted(g["run_ids"]) for g in groups][1] == ["other"]


def test_status_counts_runs_and_new_runs_change_the_stamp(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    first = client.get("/api/v1/status").json()
    assert first["count"] == 6 and first["base"] == "runs" and not first["token_required"]
    sample_run(base, "run99", 9)
    second = client.get("/api/v1/status").json()
    assert second["count"] == 7 and second["stamp"] != first["stamp"]
    assert "run99" in ids(client.post("/api/v1/runs", json={}))


def test_openapi_documents_the_versioned_api(client) -> None:  # type: ignore[no-untyped-def]
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/v1/runs",
        "/api/v1/runs/{run_id}",
        "/api/v1/runs/{run_id}/annotation",
        "/api/v1/runs/export.csv",
        "/api/v1/scalars/tags",
        "/api/v1/scalars/series",
        "/api/v1/datasets",
        "/api/v1/status",
        "/api/v1/where",
        "/api/v1/runs/points",
    ):
        assert path in paths
    assert client.get("/docs").status_code == 200


def test_page_and_static_files_are_served(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/")
    assert page.status_code == 200 and "trainledger" in page.text
    assert client.get("/static/app.js").status_code == 200
    vendor = client.get("/static/vendor/echarts-6.1.0/echarts.min.js")
    assert vendor.status_code == 200 and len(vendor.content) > 500_000
    assert client.get("/static/../app.py").status_code == 404


def test_create_app_needs_an_existing_directory(tmp_path: Path) -> None:
    from trainledger.errors import LineageParamSummaryPathError
    from trainledger.server.app import create_app

    with pytest.raises(LineageParamSummaryPathError, match="existing directory"):
        create_app(tmp_path / "missing")
    with pytest.raises(ValueError, match="token"):
        create_app(tmp_path, token="")


def test_empty_base_gives_an_empty_table(tmp_path: Path) -> None:
    with client_for(tmp_path) as c:
        body = c.post("/api/v1/runs", json={}).json()
        assert body == {"customized": {}, "object": [], "count": 0, "warnings": []}
        assert c.get("/api/v1/status").json()["count"] == 0
        assert c.get("/api/v1/datasets").json() == {"groups": []}


def test_where_expressions_filter_and_and_with_the_body(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        "/api/v1/runs",
        params=[("where", "batch_size <= 32"), ("where", "optimizer != SGD")],
        json={"sorted_name": "summary_dir"},
    )
    assert ids(r) == ["run00", "run03"]
    r = client.post(
        "/api/v1/runs",
        params={"where": "learning_rate >= 0.02"},
        json={"learning_rate": {"ge": 0.04}, "sorted_name": "summary_dir"},
    )
    assert ids(r) == ["run03", "run04", "run05"]  # the tighter bound wins
    r = client.post(
        "/api/v1/runs", params={"where": "optimizer = Adam"}, json={"optimizer": {"eq": "SGD"}}
    )
    assert r.json()["count"] == 0  # contradiction: nothing matches


def test_selection_and_summary_dir_filter_fold_into_one_operation(client) -> None:  # type: ignore[no-untyped-def]
    # the page's selection (in) ANDed with a filter on summary_dir (not_in): one operation
    r = client.post(
        "/api/v1/runs",
        params={"where": "summary_dir != ./run01"},
        json={
            "summary_dir": {"in": ["./run00", "./run01", "./run02"]},
            "sorted_name": "summary_dir",
        },
    )
    assert r.status_code == 200, r.text
    assert ids(r) == ["run00", "run02"]


def test_bad_where_is_400(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", params={"where": "learning_rate ~ 3"}, json={})
    assert r.status_code == 400 and "cannot parse" in r.json()["detail"]
    r = client.post("/api/v1/where", json={"where": ["bogus_field = 1"]})
    assert r.status_code == 400


def test_conditions_of_any_shape_are_answered_or_400_naming_the_limit(client) -> None:  # type: ignore[no-untyped-def]
    deep = "(" * 10_000 + "epoch = 1" + ")" * 10_000
    r = client.post("/api/v1/runs", params={"where": deep}, json={})
    assert r.status_code == 400 and "nest at most 32 levels" in r.json()["detail"]
    r = client.post("/api/v1/where", json={"where": ["not " * 10_000 + "epoch = 1"]})
    assert r.status_code == 400 and "nest at most 32 levels" in r.json()["detail"]
    r = client.post("/api/v1/runs", json={"or": [{"epoch": {"eq": i}} for i in range(1000)]})
    assert r.status_code == 200 and r.json()["count"] == 6
    r = client.post("/api/v1/runs", json={"epoch": {"in": list(range(10_001))}})
    assert r.status_code == 400 and "at most 10000 values" in r.json()["detail"]


def test_where_compiles_to_a_condition(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/where", json={"where": ["metric_accuracy > 0.5", "epoch in [1, 2]"]})
    assert r.json() == {"condition": {"metric/accuracy": {"gt": 0.5}, "epoch": {"in": [1, 2]}}}


def test_status_filters_and_sorts_the_runs(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    sample_run(base, "crashed", 8, status="failed")
    sample_run(base, "live", 9, status="running")
    r = client.post("/api/v1/runs", params={"where": "status != finished"}, json={})
    assert sorted(ids(r)) == ["crashed", "live"]
    assert all("status" not in obj["model_lineage"] for obj in r.json()["object"])
    r = client.post("/api/v1/runs", json={"status": {"eq": "running"}})
    assert ids(r) == ["live"] and r.json()["object"][0]["run"]["status"] == "running"
    r = client.post("/api/v1/runs", json={"sorted_name": "status", "sorted_type": "descending"})
    assert ids(r)[0] == "live" and ids(r)[-1] == "crashed"  # running > finished > failed
    assert "run/status" in client.post("/api/v1/runs/columns", json={}).json()["sortable"]
    assert "run/hostname" not in client.post("/api/v1/runs/columns", json={}).json()["sortable"]


def test_objects_carry_run_extension_fields(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    sample_run(base, "crashed", 8, status="failed")
    r = client.post("/api/v1/runs", json={"sorted_name": "summary_dir", "limit": 10, "offset": 0})
    runs = {obj["run_id"]: obj["run"] for obj in r.json()["object"]}
    assert runs["crashed"]["status"] == "failed" and runs["run00"]["status"] == "finished"
    assert runs["run00"]["hostname"] == "host" and "end_time" in runs["run00"]
    rows = {
        row["run_id"]: row
        for row in csv.DictReader(io.StringIO(client.post("/api/v1/runs/export.csv", json={}).text))
    }
    assert rows["crashed"]["run/status"] == "failed"
    assert "run/status" in client.post("/api/v1/runs/columns", json={}).json()["groups"]["Other"]


def test_optimizer_settings_are_columns_and_run_details(tmp_path: Path) -> None:
    import torch

    from trainledger.integrations import track

    for name, momentum in (("plain", 0.0), ("heavy", 0.9)):
        net = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=momentum)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3)
        with track(tmp_path / name, network=net, optimizer=opt, lr_scheduler=sched):
            pass
    client = client_for(tmp_path)
    body = client.post("/api/v1/runs/columns", json={}).json()
    chooser = body["groups"]["Optimizer and scheduler"]
    assert "optimizer/momentum" in chooser and "scheduler/step_size" in chooser
    assert "optimizer/momentum" in body["sortable"]
    found = client.post(
        "/api/v1/runs", json={"optimizer/momentum": {"gt": 0.5}, "sorted_name": "optimizer/lr"}
    )
    assert ids(found) == ["heavy"]
    detail = client.get("/api/v1/runs/heavy").json()
    assert detail["lineage"]["optimizer_settings"]["momentum"] == 0.9
    assert detail["lineage"]["scheduler_settings"]["type"] == "StepLR"


def test_an_unknown_field_is_400_naming_it_and_the_nearest(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json={"optimzer": {"eq": "Adam"}})
    assert r.status_code == 400
    detail = r.json()["detail"]
    assert detail.startswith(
        "Search_condition param error: ValueError. The search attribute not supported."
    )
    assert "'optimzer'" in detail and "did you mean 'optimizer'?" in detail


def test_a_field_no_run_has_comes_with_a_warning(client) -> None:  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/runs", json={"metric/Accuracy": {"gt": 0}})
    assert r.status_code == 200 and r.json()["count"] == 0
    [note] = r.json()["warnings"]
    assert "'metric/Accuracy'" in note and "did you mean 'metric/accuracy'?" in note
    r = client.post("/api/v1/runs", params={"where": "user_defined/tem = a"}, json={})
    assert "did you mean 'user_defined/team'" in r.json()["warnings"][0]
    assert client.post("/api/v1/runs", json={"metric/accuracy": {"gt": 0}}).json()["warnings"] == []
