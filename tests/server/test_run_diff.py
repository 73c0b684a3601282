"""The diff view's rules (``server.run_diff``) and its route, ``GET /api/v1/diff``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.runs import make_diff_base
from tests.server.conftest import client_for
from trainledger.server.run_diff import MAX_DIFF_RUNS, diff_runs, field_group, same_value


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (1e-3, 0.001, True),  # the same float, however it was written
        (1, 1.0, True),
        (0.1 + 0.2, 0.3, False),  # not the same float: no tolerance
        (True, 1, False),  # a bool is not a number
        (False, 0.0, False),
        (math.nan, math.nan, True),
        (math.inf, math.inf, True),
        (2**53 + 1, 2**53, False),  # integers exactly, though they round to one float
        ("0.001", 0.001, False),  # text is not a number
        (None, None, True),
        (None, 0, False),
        (None, "", False),
        ([1, 2.0], [1.0, 2], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1e-3, "b": [1]}, {"b": [1.0], "a": 0.001}, True),
        ({"a": 1}, {"b": 1}, False),
        ("Adam", "adam", False),
    ],
)
def test_same_value(a: Any, b: Any, same: bool) -> None:
    assert same_value(a, b) is same
    assert same_value(b, a) is same


def _names(result: dict[str, Any]) -> dict[str, list[str]]:
    return {g["group"]: [f["name"] for f in g["fields"]] for g in result["groups"]}


def test_only_differing_fields_are_listed_and_missing_differs_from_null() -> None:
    a = {"learning_rate": 1e-3, "batch_size": 16, "user_defined/x": None, "optimizer/momentum": 0.9}
    b = {"learning_rate": 0.001, "batch_size": 32, "optimizer/momentum": 0.9}
    c = {
        "learning_rate": 0.001,
        "batch_size": 16,
        "user_defined/x": None,
        "optimizer/momentum": 0.9,
    }
    result = diff_runs([("a", a), ("b", b), ("c", c)])
    assert result["runs"] == ["a", "b", "c"]
    assert (result["fields"], result["differing"]) == (4, 2)
    assert _names(result) == {
        "Hyper-parameters": ["batch_size"],
        "User defined": ["user_defined/x"],
    }
    cells = result["groups"][1]["fields"][0]["values"]
    assert cells == [
        {"missing": False, "value": None, "text": "null"},
        {"missing": True, "text": "(missing)"},
        {"missing": False, "value": None, "text": "null"},
    ]
    assert diff_runs([("a", a), ("c", c)])["groups"] == []  # nothing differs


def test_show_all_lists_every_field_with_whether_it_is_the_same() -> None:
    a = {"learning_rate": 1e-3, "scheduler/gamma": 0.5, "run/git_commit": "abc", "loss": math.nan}
    b = {"learning_rate": 0.001, "scheduler/gamma": 0.1, "run/git_commit": "abc", "loss": math.nan}
    result = diff_runs([("a", a), ("b", b)], show_all=True)
    rows = {f["name"]: f for g in result["groups"] for f in g["fields"]}
    assert {name: row["same"] for name, row in rows.items()} == {
        "learning_rate": True,
        "scheduler/gamma": False,
        "run/git_commit": True,
        "loss": True,
    }
    # a NaN is sent as protobuf JSON's "NaN" (as the runs table gets it), never as null
    assert rows["loss"]["values"][0] == {"missing": False, "value": "NaN", "text": "nan"}
    assert [g["group"] for g in result["groups"]] == [
        "Hyper-parameters",
        "Scheduler",
        "Metrics",
        "Code version",
    ]


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("learning_rate", "Hyper-parameters"),
        ("optimizer", "Optimizer"),
        ("optimizer/betas.0", "Optimizer"),
        ("scheduler/T_max", "Scheduler"),
        ("user_defined/team", "User defined"),
        ("dataset_graph", "Dataset"),
        ("train_dataset_count", "Dataset"),
        ("network", "Network"),
        ("metric/accuracy", "Metrics"),
        ("max(eval/accuracy)", "Metrics"),
        ("run/python_version", "Environment"),
        ("run/git_commit", "Code version"),
        ("run/seed", "Hyper-parameters"),
        ("run/status", "Run"),
        ("something_new", "Other"),
    ],
)
def test_field_groups(name: str, group: str) -> None:
    assert field_group(name) == group


@pytest.mark.parametrize("ids", [[], ["a"], ["a", "a"]])
def test_fewer_than_two_distinct_runs_is_an_error(ids: list[str]) -> None:
    with pytest.raises(ValueError, match="two or more distinct runs; received"):
        diff_runs([(i, {}) for i in ids])


# --- the route, over real run directories ---------------------------------------------------


@pytest.fixture
def diff_base(tmp_path: Path) -> Path:
    return make_diff_base(tmp_path / "runs")


def test_the_route_lists_exactly_the_differing_fields(diff_base: Path) -> None:
    with client_for(diff_base) as client:
        answer = client.get("/api/v1/diff", params={"run": ["a", "b", "c"]})
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert result["runs"] == ["a", "b", "c"]
        assert _names(result) == {
            "Hyper-parameters": ["batch_size"],
            "User defined": ["user_defined/team"],
            "Environment": ["run/python_version"],
        }
        team = result["groups"][1]["fields"][0]["values"]
        assert [cell["text"] for cell in team] == ["a", "(missing)", "a"]
        everything = client.get("/api/v1/diff", params={"run": ["a", "b"], "all": "true"}).json()
        rows = {f["name"]: f["same"] for g in everything["groups"] for f in g["fields"]}
        assert rows["learning_rate"] is True  # 1e-3 and 0.001
        assert rows["run/git_commit"] is True and rows["batch_size"] is False
        assert len(rows) == everything["fields"]


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "two or more distinct runs (?run=A&run=B); received 0: []"),
        ({"run": ["a"]}, 400, "received 1: ['a']"),
        ({"run": ["a", "./a"]}, 400, "received 2: ['a', 'a']"),
        ({"run": ["a", "nope"]}, 404, "no such runs under the base: ['nope']"),
        (
            {"run": [f"r{i}" for i in range(MAX_DIFF_RUNS + 1)]},
            400,
            f"at most {MAX_DIFF_RUNS} runs; received {MAX_DIFF_RUNS + 1}",
        ),
    ],
)
def test_bad_requests_say_what_was_expected_and_received(
    diff_base: Path, params: dict[str, Any], status: int, message: str
) -> None:
    with client_for(diff_base) as client:
        answer = client.get("/api/v1/diff", params=params)
        assert answer.status_code == status
        assert message in answer.json()["detail"]
