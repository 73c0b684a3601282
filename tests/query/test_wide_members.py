"""Over wide runs (hundreds of custom values each) a count of several custom conditions reads
the second and later as membership tests (``sql.compile_members``, chosen by
``page_read._wide``): the same answers as the Python semantics, and only over wide runs."""

from __future__ import annotations

import math
import tempfile
from typing import Any

import pytest

from trainledger.query import page_read
from trainledger.query.conditions import validate_condition
from trainledger.query.index import LineageIndex
from trainledger.query.semantics import evaluate


def _record(i: int, width: int) -> dict[str, Any]:
    metrics: dict[str, Any] = {f"m{j:03d}": ((i * 37 + j * 11) % 100) / 100 for j in range(width)}
    if i % 4 == 0:
        del metrics["m001"]  # a run without the field
    if i % 5 == 0:
        metrics["m002"] = "n/a"  # text among numbers
    return {
        "summary_dir": f"./r{i:02d}",
        "update_time": float(i % 3),
        "metric": metrics,
        "user_defined": {"team": "ab"[i % 2], "trial": i},
    }


CONDITIONS: list[dict[str, Any]] = [
    {"metric/m000": {"gt": 0.3}, "metric/m001": {"lt": 0.7}},
    {"metric/m000": {"ge": 0.2, "le": 0.8}, "metric/m001": {"gt": 0.1}, "metric/m002": {"lt": 0.9}},
    {"metric/m001": {"in": [0.11, 0.48, 0.85]}, "user_defined/team": {"eq": "a"}},
    {"metric/m000": {"gt": 0.1}, "user_defined/trial": {"not_in": [3, 4]}, "limit": 3},
    {
        "metric/m000": {"gt": 0.2},
        "metric/m299": {"lt": 0.8},
        "sorted_name": "metric/m002",
        "sorted_type": "descending",
        "limit": 4,
        "offset": 2,
    },
    {"user_defined/team": {"eq": "b"}, "metric/m000": {"ge": 0}, "sorted_name": "metric/m002"},
]


@pytest.mark.parametrize("width", [300, 3])
def test_the_membership_form_is_read_over_wide_runs_only_and_agrees(width: int) -> None:
    records = [_record(i, width) for i in range(24)]
    chosen: list[bool] = []
    real = page_read._wide
    with tempfile.TemporaryDirectory() as base, LineageIndex(base) as index:
        index.add_records(records)
        stored = index.records()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(page_read, "_wide", lambda c: chosen.append(real(c)) or chosen[-1])
            for cond in CONDITIONS[: len(CONDITIONS) if width > 3 else 4]:
                got = index.query(cond, refresh=False)
                assert got == evaluate(stored, validate_condition(cond)), cond
                assert got["count"] > 0, cond
    assert chosen and set(chosen) == {width >= page_read.WIDE_RUN}


def test_a_type_string_kept_per_label_set_is_never_another_runs() -> None:
    """``index_tables.custom_rows`` keeps a type string per label set and per non-float
    type: the same labels with another value type, or in another order, get their own."""
    import json

    from trainledger.query.index_tables import custom_rows

    def expected(pairs: list[tuple[str, Any]]) -> list[list[Any]]:
        kinds = {"float": 1, "int": 1, "str": 2, "NoneType": 0, "list": 0}
        return [[k, type(v).__name__, kinds[type(v).__name__]] for k, v in pairs]

    runs: list[list[tuple[str, Any]]] = [
        [("metric/a", 1.0), ("metric/b", 2.0)],
        [("metric/a", 1.0), ("metric/b", "x")],
        [("metric/a", 1.0), ("metric/b", 3)],
        [("metric/b", 2.0), ("metric/a", 1.0)],
        [("metric/a", 1.0), ("metric/b", None)],
        [("metric/a", [1.0]), ("metric/b", 2.0)],
        [("metric/a", 5.0), ("metric/b", 6.0)],  # the first run's string again
    ]
    for pairs in runs * 2:  # (the second time from what was kept)
        rows = custom_rows(pairs)
        assert json.loads(rows.types) == expected(pairs), pairs
        plain = [(k, v) for k, v in pairs if type(v) is float]
        assert list(zip(rows.labels, rows.floats, strict=True)) == plain
        assert [row[0] for row in rows.others] == [
            k for k, v in pairs if type(v) is not float and not isinstance(v, list)
        ]


@pytest.mark.parametrize(
    "odd", [math.nan, math.inf, -math.inf, 2.0**53, -(2.0**53), 2.0**53 - 1, -0.0, 1e308]
)
def test_a_run_of_floats_is_split_as_value_by_value(odd: float) -> None:
    """The all-floats path of ``custom_rows`` (checked in C) splits a run as the value-by-value
    path does: NaN, infinities and |x| >= 2**53 are not plain floats, whichever their place
    (NaN first or last, where ``min``/``max`` may pass over it); ``to_record`` still turns a
    NaN metric into None and a key into text."""
    from trainledger.query.flat_record import to_record
    from trainledger.query.index_tables import custom_rows, split_value

    for pairs in (
        [("metric/a", odd), ("metric/b", 1.0), ("metric/c", -2.5)],
        [("metric/b", 1.0), ("metric/c", -2.5), ("metric/a", odd)],
    ):
        rows = custom_rows(pairs)
        plain = [(k, v) for k, v in pairs if -(2.0**53) < v < 2.0**53]
        assert list(zip(rows.labels, rows.floats, strict=True)) == plain
        others = [(k, *split_value(v), "float") for k, v in pairs if (k, v) not in plain]
        assert repr(rows.others) == repr(others)
    record = to_record({"metric": {"a": odd, "b": 1.0, 7: 2.0}}, "./r", 1.0)
    assert record["metric"] == {"a": None if odd != odd else odd, "b": 1.0, "7": 2.0}
    assert to_record({"metric": {"b": 1.0, "a": odd}}, "./r", 1.0)["metric"]["a"] == (
        None if odd != odd else odd
    )


def test_a_wide_runs_floats_are_stored_a_statement_of_many_rows_at_a_time() -> None:
    """Plain floats filling two statements of ``_FLOAT_ROWS`` and part of a third, stored
    exactly, beside a label given twice (a record added as is: the last value kept, as row
    by row) and a value that is not a plain float."""
    from trainledger.query import index_tables

    count = 2 * index_tables._FLOAT_ROWS + 101
    metric: dict[Any, Any] = {f"m{k:04d}": k / 7 - 50 for k in range(count)}
    metric[1] = 0.5
    metric["1"] = 0.7
    metric["huge"] = 2.0**60
    record = {"summary_dir": "./w", "update_time": 1.0, "metric": metric}
    with tempfile.TemporaryDirectory() as base, LineageIndex(base) as index:
        index.add_records([record])
        rows = dict(
            index.db.connection()
            .execute("SELECT name, coalesce(num, big) FROM custom ORDER BY name")
            .fetchall()
        )
    expected = {f"metric/{k}": v for k, v in metric.items() if k != 1}
    assert rows == expected


def test_customized_is_made_once_per_type_sets_and_fresh_in_every_answer() -> None:
    """The customized entries of a set of type strings are made once
    (``page_read._customized_of``): an answer changed by its reader leaves the next one as
    it was, and a run stored with another type or another label changes the next one."""
    records = [
        {"summary_dir": f"./r{i}", "update_time": float(i), "metric": {"a": i / 3, "b": 1.0}}
        for i in range(3)
    ]
    with tempfile.TemporaryDirectory() as base, LineageIndex(base) as index:
        index.add_records(records)
        first = index.query({}, refresh=False)["customized"]
        assert first["metric/a"] == {"label": "metric/a", "required": True, "type": "float"}
        first["metric/a"]["type"] = "changed by its reader"
        del first["metric/b"]
        again = index.query({"metric/b": {"eq": 1.0}}, refresh=False)["customized"]
        assert again == evaluate(index.records(), validate_condition({}))["customized"]
        assert again["metric/a"]["type"] == "float" and "metric/b" in again
        index.add_records(
            [{"summary_dir": "./s", "update_time": 9.0, "metric": {"a": "text", "c": 2}}]
        )
        later = index.query({}, refresh=False)["customized"]
        assert later == evaluate(index.records(), validate_condition({}))["customized"]
        assert later["metric/a"]["type"] == "mixed" and later["metric/c"]["type"] == "int"
