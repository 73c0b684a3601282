"""Condition validation: MindInsight's error classes and messages, and our documented fixes."""

from __future__ import annotations

from typing import Any

import pytest

from trainledger.errors import LineageError, LineageSearchConditionParamError
from trainledger.query.conditions import (
    lineage_types,
    page_bounds,
    validate_condition,
)

P = "Search_condition param error: "

INVALID: list[tuple[Any, str]] = [
    ([], "TypeError. Invalid search_condition type, it should be dict."),
    ({"limit": True}, "TypeError. The limit must be int."),
    ({"limit": 2.0}, "TypeError. The limit must be int."),
    ({"offset": "1"}, "TypeError. The offset must be int."),
    ({"limit": 0}, "Invalid input limit. 0 < limit <= 100"),
    ({"limit": 101}, "Invalid input limit. 0 < limit <= 100"),
    ({"offset": -1}, "Invalid input offset. 0 <= offset <= 100000"),
    ({"offset": 100001}, "Invalid input offset. 0 <= offset <= 100000"),
    (
        {"sorted_type": "ascending"},
        "ValueError. The sorted_name must exist when sorted_type exists.",
    ),
    (
        {"sorted_name": "loss", "sorted_type": "up"},
        "ValueError. The sorted_type must be ascending or descending.",
    ),
    ({"bogus": {"eq": 1}}, "ValueError. The search attribute not supported."),
    ({"metric/": {"eq": 1}}, "ValueError. The search attribute not supported."),
    ({"user_defined/": {"eq": 1}}, "ValueError. The search attribute not supported."),
    ({"loss": 3}, "TypeError. The search_condition element loss should be dict."),
    (
        {"loss": {"like": 3}},
        "ValueError. The compare condition should be in "
        "('eq', 'lt', 'gt', 'le', 'ge', 'in', 'not_in').",
    ),
    (
        {"optimizer": {"gt": "Adam"}},
        "The parameter optimizer is invalid. Its operation should be `eq`, `in` or `not_in`.",
    ),
    (
        {"optimizer": {"eq": 3}},
        "The parameter optimizer is invalid. It should be a dict and the value should be a string.",
    ),
    (
        {"batch_size": {"in": 3}},
        "The parameter batch_size is invalid. The value of `in` operation must be list or tuple.",
    ),
    (
        {"batch_size": {"eq": True}},
        "The parameter batch_size is invalid. It should be a non-negative integer.",
    ),
    ({"epoch": {"eq": -1}}, "The parameter epoch is invalid. It should be a positive integer."),
    (
        {"learning_rate": {"gt": "0.1"}},
        "The parameter learning_rate is invalid. It should be a dict and the value should be a "
        "float or a integer.",
    ),
    ({"loss": {"lt": True}}, "The parameter loss is invalid. It should be a float."),
    (
        {"metric/acc": {"gt": "x"}},
        "The parameter metric/acc is invalid. It should be a dict and the value should be a float "
        "or a integer",
    ),
    (
        {"lineage_type": "modell"},
        "The parameter lineage_type is invalid. It should be 'dataset' or 'model'.",
    ),
    (
        {"lineage_type": {"eq": "other"}},
        "The parameter lineage_type is invalid. It should be 'dataset' or 'model'.",
    ),
    ({"dataset_mark": {"eq": 1}}, "The parameter dataset_mark is invalid. It should be a string."),
    (
        {"batch_size": {"in": [{"a": 1}]}},
        "The parameter batch_size is invalid. It should be a non-negative integer.",
    ),
    (
        {"user_defined/team": {"in": "abc"}},
        "The parameter user_defined/team is invalid. The value of `in` operation must be list or "
        "tuple.",
    ),
    (
        {"user_defined/team": {"eq": [1]}},
        "The parameter user_defined/team is invalid. It should be a dict and the value should be "
        "a string, an integer or a float.",
    ),
    (
        {"status": {"eq": 3}},
        "The parameter status is invalid. It should be a dict and the value should be a string "
        "(running, finished, failed or stopped).",
    ),
    (
        {"status": {"gt": "failed"}},
        "The parameter status is invalid. Its operation should be `eq`, `in` or `not_in`.",
    ),
    ({"status": "finished"}, "TypeError. The search_condition element status should be dict."),
]


@pytest.mark.parametrize(("cond", "message"), INVALID, ids=[str(c) for c, _ in INVALID])
def test_invalid_condition_message(cond: Any, message: str) -> None:
    with pytest.raises(LineageSearchConditionParamError) as info:
        validate_condition(cond)
    assert str(info.value) == P + message
    assert isinstance(info.value, LineageError) and isinstance(info.value, ValueError)


def test_sorted_name_message_lists_fields() -> None:
    with pytest.raises(LineageSearchConditionParamError, match="The sorted_name must be in"):
        validate_condition({"sorted_name": "bogus"})


@pytest.mark.parametrize(
    "cond",
    [
        None,
        {},
        {"limit": 1},
        {"offset": 100000},
        {"sorted_name": "tag"},
        {"sorted_name": "status", "sorted_type": "descending"},
        {"status": {"eq": "finished"}},
        {"status": {"in": ["failed", None], "not_in": ["stopped"]}},
        {"sorted_name": "metric/acc", "sorted_type": None},
        {"learning_rate": {"not_in": [0.1]}},
        {"metric/acc": {"not_in": [1, 2.5]}},
        {"user_defined/x": {"eq": "a", "in": [1, None]}},
        {"lineage_type": {"in": []}},
    ],
)
def test_valid_conditions(cond: Any) -> None:
    validate_condition(cond)


def test_metric_underscore_spelling_is_normalized() -> None:
    cond = validate_condition({"metric_accuracy": {"gt": 0.5}, "sorted_name": "metric_accuracy"})
    assert cond == {"metric/accuracy": {"gt": 0.5}, "sorted_name": "metric/accuracy"}


def test_page_bounds() -> None:
    assert page_bounds({}) == (0, None)
    assert page_bounds({"limit": 5}) == (0, 5)
    assert page_bounds({"offset": 2}) == (20, 30)
    assert page_bounds({"offset": 2, "limit": 3}) == (6, 9)


def test_lineage_types() -> None:
    assert lineage_types({}) == ["dataset", "model"]
    assert lineage_types({"lineage_type": {"eq": "model"}}) == ["model"]
    assert lineage_types({"lineage_type": {"in": ["dataset"]}}) == ["dataset"]
    assert lineage_types({"lineage_type": {"not_in": ["dataset"]}}) == ["model"]
    assert lineage_types({"lineage_type": {"in": []}}) == []
