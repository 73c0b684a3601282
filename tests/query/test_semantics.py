"""The Python semantics, case by case (the SQL path is checked against it elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest

from trainledger.query.semantics import customized, evaluate, is_match, sort_records


def rec(name: str, t: float, **fields: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "summary_dir": f"./{name}",
        "update_time": t,
        "metric": {},
        "user_defined": {},
        "dataset_graph": {},
        "added_info": {},
    }
    r.update(fields)
    return r


RECS = [
    rec(
        "a",
        3,
        optimizer="Adam",
        learning_rate=0.1,
        batch_size=16,
        metric={"acc": 0.9},
        user_defined={"team": "x", "trial": 1},
    ),
    rec(
        "b",
        2,
        optimizer="SGD",
        learning_rate=0.05,
        batch_size=32,
        metric={"acc": 0.7},
        user_defined={"team": "y"},
    ),
    rec("c", 2, optimizer="Adam", learning_rate=None, batch_size=16, user_defined={"trial": 2.5}),
    rec("d", 1, optimizer=None, learning_rate=0.2, batch_size=None, metric={"acc": 0.8}),
]


def dirs(cond: dict[str, Any]) -> list[str]:
    return [o["summary_dir"] for o in evaluate(RECS, cond)["object"]]


@pytest.mark.parametrize(
    ("op", "expected", "actual", "result"),
    [
        ("eq", 1, 1.0, True),
        ("eq", "1", 1, False),
        ("eq", 1, None, False),
        ("lt", 2, 1, True),
        ("lt", 2, "a", False),
        ("lt", "b", "a", True),
        ("lt", 1, None, False),
        ("gt", 0, 1, True),
        ("le", 1, 1, True),
        ("ge", 2, 1, False),
        ("in", [1, 2], 2, True),
        ("in", [1, 2], None, False),
        ("in", [None], None, True),
        ("in", [], 1, False),
        ("in", ["1"], 1, False),
        ("not_in", [1], 2, True),
        ("not_in", [1], None, True),
        ("not_in", [None], None, False),
        ("not_in", [1.0], 1, False),
    ],
)
def test_is_match(op: str, expected: Any, actual: Any, result: bool) -> None:
    assert is_match(op, expected, actual) is result


def test_default_order_newest_first_then_name() -> None:
    assert dirs({}) == ["./a", "./b", "./c", "./d"]


def test_filters_and_together() -> None:
    assert dirs({"optimizer": {"eq": "Adam"}, "batch_size": {"ge": 16, "lt": 32}}) == ["./a", "./c"]
    assert dirs({"metric/acc": {"gt": 0.75}}) == ["./a", "./d"]
    assert dirs({"user_defined/team": {"in": ["x", "y"]}}) == ["./a", "./b"]
    assert dirs({"optimizer": {"not_in": ["Adam"]}}) == ["./b", "./d"]  # None matches not_in


def test_sort_none_first_ascending_last_descending_ties_keep_default() -> None:
    asc = dirs({"sorted_name": "learning_rate", "sorted_type": "ascending"})
    assert asc == ["./c", "./b", "./a", "./d"]
    desc = dirs({"sorted_name": "learning_rate", "sorted_type": "descending"})
    assert desc == ["./d", "./a", "./b", "./c"]
    # a and c tie on batch_size 16: default order (a newer) kept both ways
    assert dirs({"sorted_name": "batch_size"}) == ["./d", "./a", "./c", "./b"]
    assert dirs({"sorted_name": "batch_size", "sorted_type": "descending"}) == [
        "./b",
        "./a",
        "./c",
        "./d",
    ]


def test_sort_mixed_types_numbers_before_strings() -> None:
    recs = [rec("n", 1, user_defined={"v": "s"}), rec("m", 2, user_defined={"v": 3}), rec("o", 3)]
    got = sort_records(recs, {"sorted_name": "user_defined/v"})
    assert [r["summary_dir"] for r in got] == ["./o", "./m", "./n"]


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ({"limit": 2}, ["./a", "./b"]),
        ({"limit": 2, "offset": 1}, ["./c", "./d"]),
        ({"limit": 3, "offset": 1}, ["./d"]),
        ({"limit": 2, "offset": 5}, []),
        ({"offset": 0}, ["./a", "./b", "./c", "./d"]),
        ({"offset": 1}, []),
    ],
)
def test_paging(cond: dict[str, Any], expected: list[str]) -> None:
    result = evaluate(RECS, cond)
    assert [o["summary_dir"] for o in result["object"]] == expected
    assert result["count"] == 4  # counted before paging


def test_lineage_type_parts() -> None:
    (obj,) = evaluate(RECS, {"limit": 1, "lineage_type": {"eq": "dataset"}})["object"]
    assert set(obj) == {"summary_dir", "dataset_graph", "added_info"}
    (obj,) = evaluate(RECS, {"limit": 1, "lineage_type": {"eq": "model"}})["object"]
    assert set(obj) == {"summary_dir", "model_lineage", "added_info"}
    (obj,) = evaluate(RECS, {"limit": 1})["object"]
    assert set(obj) == {"summary_dir", "model_lineage", "dataset_graph", "added_info"}


def test_customized_covers_whole_result_not_page() -> None:
    result = evaluate(RECS, {"limit": 1, "offset": 3})
    assert [o["summary_dir"] for o in result["object"]] == ["./d"]
    assert set(result["customized"]) == {"metric/acc", "user_defined/team", "user_defined/trial"}
    assert result["customized"]["user_defined/trial"]["type"] == "float"  # int + float
    assert result["customized"]["metric/acc"] == {
        "label": "metric/acc",
        "required": True,
        "type": "float",
    }


def test_customized_mixed_and_empty() -> None:
    mixed = customized([rec("a", 1, user_defined={"v": 1}), rec("b", 1, user_defined={"v": "x"})])
    assert mixed["user_defined/v"]["type"] == "mixed"
    assert evaluate(RECS, {"optimizer": {"eq": "none"}}) == {
        "customized": {},
        "object": [],
        "count": 0,
    }


def test_model_lineage_shape() -> None:
    (obj,) = evaluate(RECS, {"limit": 1})["object"]
    assert list(obj["model_lineage"]) == [
        "loss_function",
        "train_dataset_path",
        "train_dataset_count",
        "test_dataset_path",
        "test_dataset_count",
        "network",
        "optimizer",
        "learning_rate",
        "epoch",
        "batch_size",
        "device_num",
        "loss",
        "model_size",
        "dataset_mark",
        "metric",
        "user_defined",
    ]
