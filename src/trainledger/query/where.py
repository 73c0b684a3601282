"""Compile ``FIELD OP VALUE`` expressions (the CLI's ``--where``, the UI's filter box).

Why a tiny grammar instead of JSON: people type ``lr>0.05``-style filters. Each expression
becomes one operator of MindInsight's search condition, expressions are ANDed, and the result
goes through the same validation as any condition, so nothing malformed reaches the index.

Operators: ``=`` (or ``==``) eq, ``!=`` not equal (``not_in [v]``), ``<`` ``<=`` ``>`` ``>=``,
``in`` and ``notin`` (or ``not_in``) with a list ``[a, b]``. Values: numbers (``3``, ``0.05``,
``1e-3``), quoted strings (``'a b'`` or ``"a b"``), ``null``, or a bare word (a string).
Fields: MindInsight's, ``metric/<name>``, ``user_defined/<name>``, trainledger's run fields
``status`` (``status = finished``, ``status in [failed, stopped]``), ``duration`` and
``sessions``, and series statistics ``<stat>(<tag>)`` (``max(eval/accuracy) > 0.9``; sort
with ``--sort -max(eval/accuracy)``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from trainledger.errors import LineageSearchConditionParamError
from trainledger.query.conditions import (
    FIELDS,
    RUN_FIELDS,
    is_field,
    normalize_field,
    validate_condition,
)
from trainledger.query.series_fields import STATS

__all__ = ["parse_where", "parse_expression", "parse_value", "parse_sort", "check_field"]

_SYMBOLIC = re.compile(
    r"^\s*(?P<field>[^\s=!<>]+)\s*(?P<op>!=|<=|>=|==|=|<|>)\s*(?P<value>.*?)\s*$"
)
_WORDS = re.compile(
    r"^\s*(?P<field>[^\s=!<>]+)\s+(?P<op>in|notin|not_in|not\s+in)\s+(?P<value>.*?)\s*$",
    re.IGNORECASE,
)
_OPS = {
    "=": "eq",
    "==": "eq",
    "<": "lt",
    "<=": "le",
    ">": "gt",
    ">=": "ge",
    "!=": "ne",
    "in": "in",
    "notin": "not_in",
    "not_in": "not_in",
}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_HINT = "expected FIELD OP VALUE with OP one of = != < <= > >= in notin"


def _error(message: str) -> LineageSearchConditionParamError:
    return LineageSearchConditionParamError(f"Search_condition param error: {message}")


def parse_value(text: str) -> Any:
    """A scalar: int, float, quoted or bare string, or None for ``null``."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if _NUMBER.match(text):
        if re.fullmatch(r"[+-]?\d+", text):
            try:
                return int(text)
            except ValueError:  # beyond Python's digit limit: compares as float64 anyway
                return float(text)
        return float(text)
    if text.lower() in ("null", "none"):
        return None
    if not text:
        raise _error(f"missing value; {_HINT}")
    return text


def _split_list(body: str) -> list[str]:
    """Split ``a, 'b, c', d`` on commas outside quotes."""
    items: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in body:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quote:
        raise _error(f"unterminated quote in list [{body}]")
    items.append("".join(current))
    if len(items) == 1 and not items[0].strip():
        return []
    return items


def _parse_list(text: str) -> list[Any]:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise _error(f"in/notin expect a list like [a, b], received: {text!r}")
    return [parse_value(item) for item in _split_list(text[1:-1])]


def parse_expression(expr: str) -> tuple[str, str, Any]:
    """``"lr >= 0.05"`` -> ``("lr", "ge", 0.05)``; ``!=`` gives ``("f", "ne", v)``."""
    if not isinstance(expr, str):
        raise _error(f"a --where expression must be a str, received: {expr!r}")
    match = _WORDS.match(expr) or _SYMBOLIC.match(expr)
    if match is None:
        raise _error(f"cannot parse {expr!r}: {_HINT}")
    op = re.sub(r"\s+", "_", match.group("op").lower())
    raw = match.group("value")
    if raw[:1] in ("=", "<", ">", "!"):  # "lr >> 0.1", "lr =< 3": not an operator we know
        bad = match.group("op") + re.match(r"[=<>!]+", raw).group(0)  # type: ignore[union-attr]
        raise _error(f"unknown operator {bad!r} in {expr!r}; {_HINT}")
    op = _OPS[op]
    value = _parse_list(raw) if op in ("in", "not_in") else parse_value(raw)
    return match.group("field"), op, value


#: the terminal table's short labels, accepted as field names
ALIASES = {"lr": "learning_rate", "batch": "batch_size", "epochs": "epoch"}


def check_field(field: str, what: str = "field") -> str:
    """``field`` normalized, or an error naming it and the closest known fields."""
    name = ALIASES.get(field, normalize_field(field))
    if is_field(name) or name == "tag":
        return name
    known = [*FIELDS, *RUN_FIELDS, "tag"]
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise _error(
        f"unknown {what} {field!r}{hint} (known: {', '.join(known)}, metric/<name>, "
        f"user_defined/<name>, and series statistics <stat>(<tag>) with stat one of "
        f"{', '.join(STATS)})"
    )


def parse_sort(sort: str) -> dict[str, str]:
    """``"-metric/Accuracy"`` -> sorted_name + descending; ``"loss"`` -> ascending."""
    sort = sort.strip()
    if sort.startswith("-"):
        return {"sorted_name": sort[1:], "sorted_type": "descending"}
    return {"sorted_name": sort.lstrip("+"), "sorted_type": "ascending"}


def parse_where(
    exprs: Iterable[str] | str,
    *,
    sort: str | None = None,
    limit: int | None = None,
    page: int | None = None,
) -> dict[str, Any]:
    """Compile expressions (ANDed) plus optional sort/limit/page into a validated condition.

    Several expressions on one field combine (``epoch>=2`` and ``epoch<5``); ``!=`` values on
    a field accumulate into one ``not_in`` list. The result is validated like any condition
    and raises ``LineageSearchConditionParamError`` when malformed.
    """
    if isinstance(exprs, str):
        exprs = [exprs]
    cond: dict[str, Any] = {}
    for expr in exprs:
        field, op, value = parse_expression(expr)
        field = check_field(field)
        ops = cond.setdefault(field, {})
        if op == "ne":
            ops.setdefault("not_in", []).append(value)
        elif op == "not_in":
            ops.setdefault("not_in", []).extend(value)
        elif op in ops:
            raise _error(f"operator {op!r} given twice for {field!r}")
        else:
            ops[op] = value
    if sort:
        cond.update(parse_sort(sort))
        cond["sorted_name"] = check_field(cond["sorted_name"], "sort field")
    if limit is not None:
        cond["limit"] = limit
    if page is not None:
        cond["offset"] = page
    return validate_condition(cond)
