"""Issue 16 items 1 and 6: numbers of any size and malformed conditions.

A run holding an integer beyond 64 bits must be indexed (and must never hide the others), and
every malformed condition must raise a ``LineageError`` subclass naming the field, never a raw
``OverflowError``/``UnicodeEncodeError``/``TypeError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.runs import write_run
from trainledger.errors import LineageError, LineageSearchConditionParamError
from trainledger.query import FIELDS, LineageIndex, filter_summary_lineage, parse_where

BIG = 2**64 + 1  # a uint64 counter's range, beyond SQLite's INTEGER


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-values")
    write_run(root, "plain", mtime=1_800_000_300, metrics={"acc": 0.5, "count": 7})
    write_run(root, "uint64", mtime=1_800_000_200, metrics={"acc": 0.7, "count": BIG})
    write_run(root, "huge", mtime=1_800_000_100, metrics={"acc": 0.9, "count": 10**400})
    write_run(root, "negative", mtime=1_800_000_000, metrics={"acc": 0.1, "count": -(2**70)})
    return root


def _dirs(result: dict[str, Any]) -> list[str]:
    return [obj["summary_dir"] for obj in result["object"]]


def test_huge_integers_are_indexed_and_hide_nothing(base: Path) -> None:
    result = filter_summary_lineage(base, None)
    assert result["count"] == 4
    by_dir = {obj["summary_dir"]: obj for obj in result["object"]}
    assert by_dir["./uint64"]["model_lineage"]["metric"]["count"] == BIG  # exact for display
    assert by_dir["./huge"]["model_lineage"]["metric"]["count"] == 10**400
    assert result["customized"]["metric/count"]["type"] == "int"


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"metric/count": {"gt": 2**63}}, ["./uint64", "./huge"]),
        ({"metric/count": {"ge": 2**64}}, ["./uint64", "./huge"]),
        ({"metric/count": {"gt": 10**300}}, ["./huge"]),
        ({"metric/count": {"lt": 0}}, ["./negative"]),
        ({"metric/count": {"in": [BIG, 7]}}, ["./plain", "./uint64"]),
        ({"metric/count": {"eq": 2**64}}, ["./uint64"]),  # float64: 2**64 == 2**64 + 1
        ({"learning_rate": {"lt": 2**70}}, ["./plain", "./uint64", "./huge", "./negative"]),
        ({"summary_dir": {"in": ["./plain", 2**64]}}, ["./plain"]),
    ],
)
def test_huge_numbers_compare_as_float64(
    base: Path, condition: dict[str, Any], expected: list[str]
) -> None:
    assert _dirs(filter_summary_lineage(base, condition)) == expected


def test_sorting_puts_huge_integers_in_numeric_order(base: Path) -> None:
    cond = {"sorted_name": "metric/count", "sorted_type": "ascending"}
    assert _dirs(filter_summary_lineage(base, cond)) == [
        "./negative",
        "./plain",
        "./uint64",
        "./huge",
    ]


def test_where_expressions_take_huge_numbers(base: Path) -> None:
    cond = parse_where(["metric/count > " + "9" * 5000])  # beyond Python's int() digit limit
    assert _dirs(filter_summary_lineage(base, cond)) == []
    cond = parse_where([f"metric/count >= {2**64}"])
    assert _dirs(filter_summary_lineage(base, cond)) == ["./uint64", "./huge"]


def test_a_run_sqlite_cannot_store_is_unreadable_not_fatal(tmp_path: Path) -> None:
    write_run(tmp_path, "ok", metrics={"acc": 0.5})
    write_run(tmp_path, "bad", metrics={"acc": 0.5})
    with LineageIndex(tmp_path, reader=_reader_with_surrogate_key) as index:
        stats = index.refresh()
        assert (stats.parsed, stats.unreadable) == (2, 1)
        assert _dirs(index.query(None)) == ["./ok"]


def _reader_with_surrogate_key(run_dir: str) -> dict[str, Any]:
    from trainledger.lineage import read_lineage

    lineage = read_lineage(run_dir)
    if run_dir.endswith("bad"):
        lineage["metric"] = {"\ud800": 1.0}
    return lineage


@pytest.mark.parametrize(
    ("condition", "named"),
    [
        ({"metric/\ud800": {"eq": 1}}, "metric/\\ud800"),
        ({"optimizer": {"eq": "\udc00"}}, "optimizer"),
        ({"user_defined/x": {"in": ["a", "\ud800"]}}, "user_defined/x"),
        ({"sorted_name": "metric/\udc00"}, "sorted_name"),
        ({"summary_dir": {"eq": "./\ud800"}}, "summary_dir"),
    ],
)
def test_lone_surrogates_are_a_condition_error(
    base: Path, condition: dict[str, Any], named: str
) -> None:
    with pytest.raises(LineageSearchConditionParamError, match=named.replace("\\", "\\\\")):
        filter_summary_lineage(base, condition)


def test_lineage_type_not_in_a_list(base: Path) -> None:
    result = filter_summary_lineage(base, {"lineage_type": {"not_in": ["model"]}})
    assert result["count"] == 4
    assert all("model_lineage" not in obj for obj in result["object"])
    with pytest.raises(LineageSearchConditionParamError, match="lineage_type"):
        filter_summary_lineage(base, {"lineage_type": {"not_in": ["model", "other"]}})


@pytest.mark.parametrize("series", [None, 3, "max(acc)", {"max(acc)": 1}, [1], ["acc"]])
def test_series_that_is_not_a_list_of_fields_is_a_condition_error(base: Path, series: Any) -> None:
    """(``{"series": None}`` raised a TypeError, found by the fuzzing below)."""
    with pytest.raises(LineageSearchConditionParamError, match="series expected"):
        filter_summary_lineage(base, {"series": series})


# -- fuzzing: whatever the condition, only LineageError subclasses --------------------------

_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6)
_NAMES = st.one_of(
    st.sampled_from([*FIELDS, "metric/acc", "metric/count", "user_defined/u", "tag", "x"]),
    st.builds(lambda p, t: p + t, st.sampled_from(["metric/", "user_defined/", "metric_"]), _TEXT),
    _TEXT,
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**130),
    st.integers(max_value=-(2**62), min_value=-(2**130)),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_TEXT, inner, max_size=3),
    ),
    max_leaves=6,
)
_OPERATORS = st.one_of(st.sampled_from(["eq", "lt", "gt", "le", "ge", "in", "not_in"]), _TEXT)
_FIELD_OPS = st.dictionaries(_OPERATORS, _VALUES, max_size=3)
_CONTROL = st.fixed_dictionaries(
    {},
    optional={
        "limit": _SCALARS,
        "offset": _SCALARS,
        "sorted_name": st.one_of(_NAMES, _SCALARS),
        "sorted_type": st.one_of(st.sampled_from(["ascending", "descending"]), _SCALARS),
        "lineage_type": st.one_of(
            st.dictionaries(
                st.sampled_from(["eq", "in", "not_in", "gt"]),
                st.one_of(
                    st.sampled_from(["model", "dataset"]),
                    st.lists(st.sampled_from(["model", "dataset", "x"]), max_size=3),
                    _VALUES,
                ),
                max_size=2,
            ),
            _VALUES,
        ),
    },
)
# near-valid conditions (known fields, real operators, plain values of any size or text)
# reach SQL; the rest mostly exercise validation
_NUMBERS = st.one_of(st.integers(), st.integers(min_value=-(2**130), max_value=2**130), st.floats())
_PLAIN = st.one_of(_NUMBERS, st.lists(st.one_of(st.none(), _NUMBERS), max_size=3))
_WELL_FORMED = st.builds(
    lambda fields, sort: {**fields, **sort},
    st.dictionaries(
        st.sampled_from(
            ["learning_rate", "loss", "metric/acc", "metric/count", "user_defined/u", "metric_acc"]
        ),
        st.dictionaries(st.sampled_from(["eq", "lt", "gt", "le", "ge", "in", "not_in"]), _PLAIN),
        max_size=3,
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "sorted_name": st.sampled_from(["metric/count", "loss", "tag", "summary_dir"]),
            "sorted_type": st.sampled_from(["ascending", "descending"]),
            "limit": st.integers(1, 5),
            "offset": st.integers(0, 3),
        },
    ),
)
CONDITIONS = st.one_of(
    _WELL_FORMED,
    _WELL_FORMED,
    st.builds(
        lambda fields, control: {**fields, **control},
        st.dictionaries(_NAMES, st.one_of(_FIELD_OPS, _VALUES), max_size=3),
        _CONTROL,
    ),
    _VALUES,
)


@pytest.mark.slow
@settings(
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(condition=CONDITIONS)
def test_fuzzed_conditions_raise_only_lineage_errors(base: Path, condition: Any) -> None:
    try:
        result = filter_summary_lineage(base, condition)
    except LineageError as exc:
        assert str(exc)
    else:
        assert 0 <= result["count"] <= 4


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions=st.lists(st.text(max_size=30), max_size=3), sort=st.none() | st.text())
def test_fuzzed_where_expressions_raise_only_lineage_errors(
    base: Path, expressions: list[str], sort: str | None
) -> None:
    try:
        cond = parse_where(expressions, sort=sort)
        filter_summary_lineage(base, cond)
    except LineageError as exc:
        assert str(exc)
