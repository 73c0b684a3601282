"""parse_where: the FIELD OP VALUE compiler shared by the CLI and the web UI."""

from __future__ import annotations

from typing import Any

import pytest

from trainledger.errors import LineageSearchConditionParamError
from trainledger.query.where import parse_expression, parse_value, parse_where


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("optimizer = Adam", ("optimizer", "eq", "Adam")),
        ("optimizer==Adam", ("optimizer", "eq", "Adam")),
        ("learning_rate>0.05", ("learning_rate", "gt", 0.05)),
        ("epoch >= 2", ("epoch", "ge", 2)),
        ("loss<1e-3", ("loss", "lt", 0.001)),
        ("batch_size <= 64", ("batch_size", "le", 64)),
        ("optimizer != SGD", ("optimizer", "ne", "SGD")),
        ("metric/Accuracy >= 0.9", ("metric/Accuracy", "ge", 0.9)),
        ("batch_size in [16, 32]", ("batch_size", "in", [16, 32])),
        ("optimizer notin ['Adam', \"S, GD\"]", ("optimizer", "not_in", ["Adam", "S, GD"])),
        ("optimizer not in [Adam]", ("optimizer", "not_in", ["Adam"])),
        ("user_defined/team = 'a b'", ("user_defined/team", "eq", "a b")),
        ("user_defined/trial = '4'", ("user_defined/trial", "eq", "4")),
        ("optimizer in []", ("optimizer", "in", [])),
    ],
)
def test_parse_expression(expr: str, expected: tuple[str, str, Any]) -> None:
    assert parse_expression(expr) == expected


def test_parse_value() -> None:
    assert parse_value("-3") == -3 and parse_value("+2.5") == 2.5 and parse_value(".5") == 0.5
    assert parse_value("null") is None and parse_value("abc") == "abc"


def test_parse_where_combines() -> None:
    cond = parse_where(
        ["epoch >= 2", "epoch < 5", "optimizer != SGD", "optimizer != Adam", "metric_acc > 0.5"],
        sort="-metric/acc",
        limit=5,
        page=1,
    )
    assert cond == {
        "epoch": {"ge": 2, "lt": 5},
        "optimizer": {"not_in": ["SGD", "Adam"]},
        "metric/acc": {"gt": 0.5},
        "sorted_name": "metric/acc",
        "sorted_type": "descending",
        "limit": 5,
        "offset": 1,
    }
    assert parse_where([], sort="loss") == {"sorted_name": "loss", "sorted_type": "ascending"}
    assert parse_where("network = MLP") == {"network": {"eq": "MLP"}}


@pytest.mark.parametrize(
    "exprs",
    [
        ["optimizer"],
        ["optimizer ~ x"],
        ["batch_size in 3"],
        ["epoch = "],
        ["optimizer in [a, 'b]"],
        ["epoch = 1", "epoch = 2"],
        ["optimizer > Adam"],
        ["bogus = 1"],
        ["epoch = x"],
    ],
)
def test_parse_where_errors(exprs: list[str]) -> None:
    with pytest.raises(LineageSearchConditionParamError, match="Search_condition param error"):
        parse_where(exprs)
