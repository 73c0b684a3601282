"""The query semantics of ``semantics.py`` compiled to SQLite, with bound parameters only.

Why the care: SQLite compares across types where Python refuses (``3 < 'a'`` is true in
SQLite, a TypeError that MindInsight treated as "no match"), and NULL never equals anything.
Value columns are declared without a type so SQLite applies no affinity conversion, and each
ordering comparison is guarded by ``typeof``. Field names never enter the SQL text: fixed
fields map to fixed column names, custom fields are looked up by a bound name.
"""

from __future__ import annotations

from typing import Any

from trainledger.query.conditions import FIELDS, RUN_FIELDS, filter_items
from trainledger.query.numbers import sql_number

# fixed field -> column expression of the ``runs`` table
_COLUMNS: dict[str, str] = {f: f"runs.{f}" for f in (*FIELDS, *RUN_FIELDS)}
_CUSTOM = "(SELECT c.value FROM custom AS c WHERE c.run_id = runs.id AND c.name = ?)"
_TAG = "(SELECT a.tag FROM annotations AS a WHERE a.run_id = runs.summary_dir)"
_NUM_TYPES = "('integer', 'real')"
_SQL_OPS = {"eq": "=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}


def _column(field: str) -> tuple[str, list[Any]]:
    """SQL expression (and its parameters) yielding the field's value for one run."""
    if field in _COLUMNS:
        return _COLUMNS[field], []
    if field == "tag":
        return _TAG, []
    return _CUSTOM, [field]  # metric/<name> or user_defined/<name>, stored by full label


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float))


def _predicate(field: str, op: str, value: Any) -> tuple[str, list[Any]]:
    """SQL for one comparison; numbers beyond int64 compare as float64 (see numbers.py)."""
    col, cparams = _column(field)
    value = sql_number(value)
    if op in ("in", "not_in"):
        items = [sql_number(v) for v in value if v is not None]
        has_null = len(items) != len(value)
        marks = ", ".join("?" for _ in items)
        params: list[Any] = []
        if items:
            member = f"{col} IN ({marks})"
            params = cparams + items
        else:
            member = "0"
        if op == "in":
            if has_null:
                return f"({col} IS NULL OR {member})", cparams + params
            return member if items else "0", params
        if has_null:
            return f"({col} IS NOT NULL AND NOT {member})", cparams + params
        return f"({col} IS NULL OR NOT {member})", cparams + params
    if op == "eq":
        if _is_num(value):
            return f"(typeof({col}) IN {_NUM_TYPES} AND {col} = ?)", cparams + cparams + [value]
        return f"(typeof({col}) = 'text' AND {col} = ?)", cparams + cparams + [value]
    guard = f"typeof({col}) IN {_NUM_TYPES}" if _is_num(value) else f"typeof({col}) = 'text'"
    return f"({guard} AND {col} {_SQL_OPS[op]} ?)", cparams + cparams + [value]


def compile_where(cond: dict[str, Any]) -> tuple[str, list[Any]]:
    """WHERE clause (without the keyword) and parameters for a *validated* condition."""
    parts: list[str] = []
    params: list[Any] = []
    for field, op, value in filter_items(cond):
        sql, p = _predicate(field, op, value)
        parts.append(sql)
        params.extend(p)
    return (" AND ".join(parts) if parts else "1"), params


DEFAULT_ORDER = "runs.update_time DESC, runs.summary_dir ASC"


def compile_order(cond: dict[str, Any]) -> tuple[str, list[Any]]:
    """ORDER BY clause (without the keyword): sort key, then the default order for ties.

    SQLite already orders NULL < numbers < text ascending (and the reverse descending),
    which is MindInsight's None-first/numbers-before-strings rule.
    """
    name = cond.get("sorted_name")
    if name is None:
        return DEFAULT_ORDER, []
    col, params = _column(name)
    direction = "DESC" if cond.get("sorted_type") == "descending" else "ASC"
    return f"{col} {direction}, {DEFAULT_ORDER}", params
