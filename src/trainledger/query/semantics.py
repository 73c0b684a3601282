"""The one query semantics, evaluated in plain Python over flat run records.

A *record* is one run flattened the way MindInsight's querier saw it: the fields of
``fields.FIELDS`` (``summary_dir`` relative to the base, e.g. ``"./run1"``), plus
``metric``, ``user_defined`` and ``dataset_graph`` dicts, ``update_time`` (seconds),
``added_info`` ({"tag": int, "remark": str}, keys present only when set) and ``status`` (the
run record's state, ``fields.RUN_FIELDS``; None or absent when there is none), which
conditions and sorting see but ``model_lineage`` never shows (MindInsight has no such field),
like ``duration`` and ``sessions``, and ``series`` ({tag: {statistic: value}}, the series
statistics that fields such as ``max(eval/accuracy)`` read, ``series_fields.py``).

The SQL compiler (``sql.py``) implements exactly these rules; tests check that both agree on
generated corpora. The rules are MindInsight's:

- a missing value (None) never satisfies eq/lt/gt/le/ge; it satisfies ``not_in`` unless the
  list holds None, and ``in`` only if the list holds None;
- comparing a number with a string is simply false (no error);
- sorting puts None first ascending and last descending, numbers before strings; ties keep
  the default order, which is newest update first (then summary_dir ascending).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

from trainledger.query.conditions import filter_items, lineage_types, page_bounds
from trainledger.query.fields import FIELDS, SHOWN_GROUPS, group_field, group_values
from trainledger.query.numbers import sql_number
from trainledger.query.series_fields import named_series_fields, series_value
from trainledger.values import fresh_copy

Record = dict[str, Any]

_OPS = {
    "eq": operator.eq,
    "lt": operator.lt,
    "gt": operator.gt,
    "le": operator.le,
    "ge": operator.ge,
}


def value_of(record: Record, field: str) -> Any:
    """The value a condition or a sort sees for ``field`` (None when absent)."""
    grouped = group_field(field)
    if grouped is not None:
        return (record.get(grouped[0]) or {}).get(grouped[1])
    if field == "tag":
        return (record.get("added_info") or {}).get("tag")
    if field.endswith(")"):  # a series statistic, e.g. max(eval/accuracy) (series_fields.py)
        return series_value(record.get("series"), field)
    return record.get(field)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float))


def is_match(op: str, expected: Any, actual: Any) -> bool:
    """Whether ``actual`` satisfies ``op expected`` (MindInsight's ExpressionType.is_match)."""
    actual = sql_number(actual)  # ints beyond int64 compare as float64, as in SQL
    if op == "in":
        return any(_equal(actual, e) for e in expected)
    if op == "not_in":
        return not any(_equal(actual, e) for e in expected)
    if actual is None:
        return False
    if op == "eq":
        return _equal(actual, expected)
    if _is_num(actual) != _is_num(expected):
        return False  # number vs string: MindInsight's TypeError -> no match
    return bool(_OPS[op](actual, sql_number(expected)))


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _is_num(a) != _is_num(b):
        return False
    return bool(sql_number(a) == sql_number(b))


def matches(record: Record, cond: dict[str, Any]) -> bool:
    """Whether a record passes every (field, operator, value) of the condition (AND), and
    its ``or`` (any of), ``and`` (all of) and ``not`` (not) conditions."""
    if not all(
        is_match(op, value, value_of(record, field)) for field, op, value in filter_items(cond)
    ):
        return False
    if "or" in cond and not any(matches(record, sub) for sub in cond["or"]):
        return False
    if "and" in cond and not all(matches(record, sub) for sub in cond["and"]):
        return False
    return not ("not" in cond and matches(record, cond["not"]))


def _cmp(a: Any, b: Any) -> int:
    if a is None and b is None:
        return 0
    if a is None:
        return -1
    if b is None:
        return 1
    if _is_num(a) != _is_num(b):
        return -1 if _is_num(a) else 1  # numbers before strings
    a, b = sql_number(a), sql_number(b)
    return (a > b) - (a < b)


def default_order(records: Iterable[Record]) -> list[Record]:
    """Newest update first; equal times by summary_dir ascending."""
    by_dir = sorted(records, key=lambda r: r["summary_dir"])
    return sorted(by_dir, key=lambda r: -float(r.get("update_time") or 0.0))


def sort_records(records: list[Record], cond: dict[str, Any]) -> list[Record]:
    """Stable sort by ``sorted_name`` (records must already be in default order)."""
    name = cond.get("sorted_name")
    if name is None:
        return records
    reverse = cond.get("sorted_type") == "descending"

    def compare(x: Record, y: Record) -> int:
        return _cmp(value_of(x, name), value_of(y, name))

    return sorted(records, key=functools.cmp_to_key(compare), reverse=reverse)


def custom_type_name(value: Any) -> str:
    """The type label MindInsight's customized used: the Python type name."""
    return type(value).__name__


def customized(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """Describe the grouped columns (metric/, user_defined/, and trainledger's optimizer/ and
    scheduler/) over all given records.

    MindInsight computed this over the current page only; we describe the whole result.
    Keys are ordered metric/ first, then the others, each by name.
    """
    types: dict[str, set[str]] = {}
    for record in records:
        for label, value in group_values(record):
            types.setdefault(label, set()).add(custom_type_name(value))
    return finish_customized(types)


#: a result's ``customized`` entries: label -> {"label", "required", "type"}
Customized = dict[str, dict[str, Any]]


def copied_customized(shared: Customized) -> Customized:
    """A fresh copy of shared ``customized`` entries (``page_read``'s, made once per set of
    type strings), for an answer its reader may change."""
    return dict(zip(shared, map(dict.copy, shared.values()), strict=True))


def finish_customized(types: dict[str, set[str]]) -> Customized:
    """Turn label -> set of type names into MindInsight's customized entries (``metric/``
    labels first, each part by name; per query for a wide run's 1,650 labels, so no key
    function and no call per label)."""
    out: dict[str, dict[str, Any]] = {}
    labels = sorted(types)
    metrics = [label for label in labels if label.startswith("metric/")]
    others = [label for label in labels if not label.startswith("metric/")]
    for part, required in ((metrics, True), (others, False)):
        for label in part:
            kinds = types[label]
            if len(kinds) == 1:
                (kind,) = kinds
            elif kinds.issubset({"int", "float"}):
                kind = "float"
            else:
                kind = "mixed"
            out[label] = {"label": label, "required": required, "type": kind}
    return out


#: the fixed fields ``model_lineage`` shows, in MindInsight's order
SHOWN = tuple(f for f in FIELDS if f != "summary_dir")


def model_parts(record: Record) -> tuple[Any, Any, list[tuple[str, Any]]]:
    """The containers ``model_lineage`` shows after the fixed fields, not copied: metric,
    user_defined, and (group, value) of trainledger's groups the run has (``SHOWN_GROUPS``)."""
    get = record.get
    groups = [(group, record[group]) for group in SHOWN_GROUPS if get(group)]
    if get("parents"):  # (every source of the run's weights, ``family_index.py``)
        groups.append(("parents", record["parents"]))
    return get("metric") or {}, get("user_defined") or {}, groups


def model_lineage(record: Record) -> dict[str, Any]:
    """The ``model_lineage`` part of a result object (MindInsight's field order). The fixed
    fields hold scalars (the index refuses a run with any other, ``index_tables.split_value``)."""
    get = record.get
    out = {f: get(f) for f in SHOWN}
    metric, user_defined, groups = model_parts(record)
    out["metric"] = fresh_copy(metric)
    out["user_defined"] = fresh_copy(user_defined)
    for group, value in groups:
        out[group] = fresh_copy(value)
    return out


def build_object(
    record: Record,
    parts: Sequence[str],
    series: dict[str, Any] | None = None,
    added_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One result object: the requested parts plus ``added_info`` (the record's own when not
    given), and ``series`` (the values of the series fields the condition named) when given.
    It shares no dict or list with ``record``."""
    obj: dict[str, Any] = {}
    if "model" in parts:
        obj["summary_dir"] = record["summary_dir"]
        obj["model_lineage"] = model_lineage(record)
    if "dataset" in parts:
        obj["summary_dir"] = record["summary_dir"]
        obj["dataset_graph"] = fresh_copy(record.get("dataset_graph") or {})
    if added_info is None:
        added_info = dict(record.get("added_info") or {})
    obj["added_info"] = added_info
    if series is not None:
        obj["series"] = series
    return obj


def evaluate(records: Iterable[Record], cond: dict[str, Any]) -> dict[str, Any]:
    """Answer a *validated* condition over records, in Python (the reference semantics)."""
    ordered = default_order(records)
    hits = sort_records([r for r in ordered if matches(r, cond)], cond)
    start, stop = page_bounds(cond)
    page = hits[start:stop]
    parts = lineage_types(cond)
    fields = named_series_fields(cond)

    def series(record: Record) -> dict[str, Any] | None:
        return {f: value_of(record, f) for f in fields} if fields else None

    return {
        "customized": customized(hits),
        "object": [build_object(r, parts, series(r)) for r in page],
        "count": len(hits),
    }


def clean_value(value: Any) -> Any:
    """NaN is stored and compared as missing (SQLite cannot hold NaN; None is unambiguous)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
