"""Compile ``--where`` expressions (the CLI's, the UI's filter box) to a search condition.

Why a tiny grammar instead of JSON: people type ``lr>0.05``-style filters. Each comparison
becomes one operator of MindInsight's search condition; comparisons join with ``and``,
``or``, ``not`` and parentheses (``where_parse.py``: the grammar, precedence ``not`` >
``and`` > ``or``), into ``{"or": [...]}`` and ``{"not": ...}`` where needed; several
expressions are ANDed. The result goes through the same validation as any condition, so
nothing malformed reaches the index.

Operators: ``=`` (or ``==``) eq, ``!=`` not equal (``not_in [v]``), ``<`` ``<=`` ``>`` ``>=``,
``in`` and ``notin`` (or ``not_in``) with a list ``[a, b]``. Values: numbers (``3``, ``0.05``,
``1e-3``), quoted strings (``'a b'`` or ``"a b"``), ``null``, or a bare word (a string).
Fields: MindInsight's, ``metric/<name>``, ``user_defined/<name>``, trainledger's run fields
``status`` (``status = finished``, ``status in [failed, stopped]``), ``duration`` and
``sessions``, and series statistics ``<stat>(<tag>)`` (``max(eval/accuracy) > 0.9``; sort
with ``--sort -max(eval/accuracy)``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from trainledger.query.conditions import validate_condition
from trainledger.query.field_hints import did_you_mean
from trainledger.query.fields import FIELDS, RUN_FIELDS, is_field, is_number_field, normalize_field
from trainledger.query.series_fields import STATS
from trainledger.query.where_parse import Comparison, Node, error, parse_tree, parse_value

__all__ = [
    "FIELD_ALIASES",
    "parse_where",
    "parse_expression",
    "parse_value",
    "parse_sort",
    "check_field",
]


def parse_expression(expr: str) -> tuple[str, str, Any]:
    """``"lr >= 0.05"`` -> ``("lr", "ge", 0.05)``; ``!=`` gives ``("f", "ne", v)``. One
    comparison; ``parse_where`` takes ``and``/``or``/``not`` too."""
    tree = parse_tree(expr)
    if not isinstance(tree, Comparison):
        raise error(f"expected one comparison, received: {expr!r}")
    return tree.field, tree.op, tree.value


#: the terminal table's short labels, accepted as field names
FIELD_ALIASES = {"lr": "learning_rate", "batch": "batch_size", "epochs": "epoch"}


def check_field(
    field: str, what: str = "field", known: Callable[[], Iterable[str]] | None = None
) -> str:
    """``field`` normalized, or an error naming it (as the error's ``field``) and the nearest
    known fields: MindInsight's and, with ``known`` (asked only for a name that is none of
    them), the fields the base's runs have (``acuracy`` -> ``metric/accuracy``). Without
    ``known``, a bare name is offered as ``metric/`` and ``user_defined/`` (the table shows
    them without their prefix); with it, only names that exist are offered."""
    name = FIELD_ALIASES.get(field, normalize_field(field))
    if is_field(name) or name == "tag":
        return name
    fixed = [*FIELDS, *RUN_FIELDS, "tag"]
    hint = did_you_mean(name, fixed if known is None else [*fixed, *known()])
    if not hint and known is None and "/" not in name and "(" not in name:
        hint = f"; did you mean 'metric/{name}' or 'user_defined/{name}'?"
    exc = error(
        f"unknown {what} {field!r}{hint} (known: {', '.join(fixed)}, metric/<name>, "
        f"user_defined/<name>, optimizer/<name>, scheduler/<name>, parent/run, parent/step, "
        f"parent/checkpoint, parent/match, parent/count, run/train_dataset_fingerprint, "
        f"registry/<model>, registry/<model>@<alias>, and series statistics <stat>(<tag>) "
        f"with stat one of {', '.join(STATS)})"
    )
    exc.field = field
    raise exc


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
    known: Callable[[], Iterable[str]] | None = None,
) -> dict[str, Any]:
    """Compile expressions (ANDed) plus optional sort/limit/page into a validated condition.

    Several expressions on one field combine (``epoch>=2`` and ``epoch<5``); ``!=`` values on
    a field accumulate into one ``not_in`` list. The result is validated like any condition
    and raises ``LineageSearchConditionParamError`` when malformed; a word where a number
    field wants a number (``lr > abc``) is an error saying so. ``known``: the fields the
    base's runs have, asked for the "did you mean" of an unknown field (``check_field``).
    """
    if isinstance(exprs, str):
        exprs = [exprs]
    check = functools.partial(check_field, known=known)
    trees = [parse_tree(expr) for expr in exprs]
    cond = _condition(("and", trees), check) if trees else {}
    if sort:
        cond.update(parse_sort(sort))
        cond["sorted_name"] = check(cond["sorted_name"], "sort field")
    if limit is not None:
        cond["limit"] = limit
    if page is not None:
        cond["offset"] = page
    return validate_condition(cond)


def _condition(node: Node, check: Callable[[str], str]) -> dict[str, Any]:
    """A parsed tree as a search condition: the comparisons an ``and`` joins combine into
    one dict as before; ``or`` and ``not`` become ``{"or": [...]}`` and ``{"not": ...}``."""
    if isinstance(node, Comparison):
        return _add({}, node, check)
    kind, inner = node
    if kind == "not":
        return {"not": _condition(inner, check)}
    if kind == "or":
        return {"or": [_condition(child, check) for child in _flat("or", inner)]}
    cond: dict[str, Any] = {}
    for child in _flat("and", inner):
        if isinstance(child, Comparison):
            _add(cond, child, check)
            continue
        part = _condition(child, check)
        key = next(iter(part))  # "or" or "not"
        if key in cond:
            cond.setdefault("and", []).append(part)
        else:
            cond[key] = part[key]
    return cond


def _flat(kind: str, nodes: list[Node]) -> list[Node]:
    """``(a and b) and c`` as a, b, c (and the same for or)."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, tuple) and node[0] == kind:
            out += _flat(kind, node[1])
        else:
            out.append(node)
    return out


def _add(
    cond: dict[str, Any], comparison: Comparison, check: Callable[[str], str]
) -> dict[str, Any]:
    """Add one comparison to an ANDed condition: several on one field combine, ``!=``
    values gather into one ``not_in`` list, one operator twice on a field is an error."""
    field = check(comparison.field)
    op, value = comparison.op, comparison.value
    if is_number_field(field):
        words = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
        if words:
            raise error(
                f"{comparison.field} expected a number, received {words[0]!r}, which is not "
                f"a number (a value such as 0.05, 3 or 1e-3)"
            )
    ops = cond.setdefault(field, {})
    if op == "ne":
        ops.setdefault("not_in", []).append(value)
    elif op == "not_in":
        ops.setdefault("not_in", []).extend(value)
    elif op in ops:
        raise error(f"operator {op!r} given twice for {field!r}")
    else:
        ops[op] = value
    return cond
