"""ANDing search conditions from several sources (filter box, axis brushes, the selection).

A search condition holds one value per (field, operator), so two sources constraining the
same field must be folded into one constraint with the meaning of their conjunction: the
larger lower bound, the smaller upper bound, the intersection of ``in`` lists, the union of
``not_in`` lists. Pure; validation stays with the query engine, which sees the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainledger.query import CONTROL_KEYS


def _fold(op: str, old: Any, new: Any) -> Any:
    """The value of ``op`` that means ``old AND new``; raises ValueError if unsure."""
    try:
        if op in ("ge", "gt"):
            return max(old, new)
        if op in ("le", "lt"):
            return min(old, new)
    except TypeError as exc:
        raise ValueError(f"cannot combine {op} {old!r} and {new!r}") from exc
    if op == "in" and isinstance(old, list) and isinstance(new, list):
        return [v for v in old if v in new]
    if op == "not_in" and isinstance(old, list) and isinstance(new, list):
        return old + [v for v in new if v not in old]
    if op == "eq" and old == new:
        return old
    raise ValueError(f"cannot combine {op} {old!r} and {new!r}")


# Fields the engine allows one operation on (MindInsight's "More than one operation of <field>.")
_SINGLE_OPERATION = ("summary_dir", "lineage_type")


def _one_operation(ops: dict[str, Any]) -> dict[str, Any]:
    """``eq``/``in``/``not_in`` on one field, ANDed, as one ``in`` (or ``not_in``) list."""
    lists = all(isinstance(ops[op], list) for op in ("in", "not_in") if op in ops)
    if len(ops) < 2 or not lists or not set(ops) <= {"eq", "in", "not_in"}:
        return ops  # one operation already, or malformed: the engine says what is wrong
    excluded = ops.get("not_in", [])
    if "eq" not in ops and "in" not in ops:
        return {"not_in": excluded}
    allowed = [ops["eq"]] if "eq" in ops else list(ops["in"])
    if "eq" in ops and "in" in ops:
        allowed = [v for v in allowed if v in ops["in"]]
    return {"in": [v for v in allowed if v not in excluded]}


def merge_conditions(*conditions: Mapping[str, Any] | None) -> dict[str, Any]:
    """AND several search conditions into one; later control keys (sort, page) win.

    Constraints that cannot be folded into one (two different ``eq`` values on one field)
    raise ``ValueError``: nothing can match them, and the caller answers with no runs.
    Malformed shapes are passed through untouched for the engine to reject with its message.
    """
    merged: dict[str, Any] = {}
    for condition in conditions:
        if not condition:
            continue
        for key, value in condition.items():
            if key in ("or", "not") and key in merged:  # both must hold: AND them
                merged["and"] = [*merged.get("and", []), {key: value}]
                continue
            if key == "and" and key in merged and isinstance(value, list):
                merged["and"] = [*merged["and"], *value]
                continue
            if key in CONTROL_KEYS or key not in merged:
                merged[key] = value
                continue
            old = merged[key]
            if not isinstance(old, Mapping) or not isinstance(value, Mapping):
                merged[key] = value
                continue
            combined = dict(old)
            for op, operand in value.items():
                combined[op] = _fold(op, combined[op], operand) if op in combined else operand
            merged[key] = _one_operation(combined) if key in _SINGLE_OPERATION else combined
    return merged
