"""Validate a search condition before anything evaluates it.

Why a separate pass: a malformed condition must never reach SQL nor raise a raw exception.
Every check here reproduces MindInsight 2.3.1's validation (the same order of checks, the same
error class and message text), so callers that matched on those messages keep working.

Documented differences from MindInsight (fixes):

- ``metric_<name>`` (the older spelling in MindInsight's docs) is accepted as ``metric/<name>``.
- ``not_in`` takes a list on every field (MindInsight rejected it on loss, learning_rate and
  ``metric/`` fields, where it demanded a number).
- ``in``/``not_in`` must be a list on ``user_defined/`` fields too, and list elements and values
  must be plain scalars (str, int, float; None inside lists), so nothing unbindable reaches SQL.
- ``user_defined/`` with an empty name is rejected like ``metric/``.
- Text that is not valid Unicode (a lone surrogate such as ``"\\ud800"``, which JSON can
  carry) in a field name, a value or ``sorted_name`` is rejected, naming the field.
- ``lineage_type`` may be a plain string (``"model"``, ``"dataset"``), as MindInsight's
  documentation and example give it (MindInsight 2.3.1 itself rejected it); it means
  ``{"eq": ...}``.
- Two operations on ``summary_dir`` or ``lineage_type`` (``{"eq": ..., "in": ...}``) are
  rejected with MindInsight's documented "More than one operation of <field>." (2.3.1 ANDed
  them silently).
- ``status`` (trainledger's run state, see ``fields.RUN_FIELDS``) is a field like the string fields
  (``eq``, ``in``, ``not_in``) and a ``sorted_name``; ``duration`` and ``sessions`` like the
  number fields; so are series statistics such as ``max(eval/accuracy)``
  (``series_fields.py``). MindInsight had none of these.
- Every bad condition raises ``LineageSearchConditionParamError`` (a ``LineageError``),
  never another type; numbers of any size are accepted (see ``numbers.py`` for how integers
  beyond 64 bits compare).
"""

from __future__ import annotations

from typing import Any

from trainledger.errors import LineageSearchConditionParamError
from trainledger.query.condition_messages import FIELD_MESSAGES as _FIELD_MESSAGES
from trainledger.query.field_hints import did_you_mean
from trainledger.query.fields import (
    CONTROL_KEYS,
    DERIVED_PREFIXES,
    FIELDS,
    INT_FIELDS,
    LINEAGE_TYPES,
    LOGIC_KEYS,
    OPERATORS,
    PARAMETER_PREFIXES,
    RUN_FIELDS,
    STR_FIELDS,
    is_field,
    normalize_field,
)
from trainledger.query.series_fields import check_series, parse_series_field

#: the deepest nesting of ``and``/``or``/``not`` (and ``--where`` parentheses): a deeper
#: condition from JSON or a typed expression must not exhaust the stack
MAX_NESTING = 32
#: the most values one condition compares (each comparison's value, each member of an
#: ``in``/``not_in`` list): their bound parameters fit every engine (SQLite's 32,766,
#: PostgreSQL's 65,535) with room for the field names and the page's own
MAX_VALUES = 10_000
# a valid condition's dicts and lists nest at most two deep per level, and three below
_MAX_CONTAINERS = 2 * MAX_NESTING + 8
_INT_MAX = 2**63 - 1

_PREFIX = "Search_condition param error: "
# Fields that take exactly one operation (MindInsight's documented rule).
_SINGLE_OPERATION = ("summary_dir", "lineage_type")


class _Invalid(Exception):
    """A field-level problem; the caller turns it into MindInsight's message."""


def _fail(message: str) -> LineageSearchConditionParamError:
    return LineageSearchConditionParamError(_PREFIX + message)


def nesting_error(depth: int) -> LineageSearchConditionParamError:
    """The error of a condition (or a ``--where`` text) nesting ``depth`` levels."""
    return _fail(
        f"ValueError. Conditions nest at most {MAX_NESTING} levels deep (and, or, not and "
        f"parentheses); received {depth} levels."
    )


def _values_error(received: str) -> LineageSearchConditionParamError:
    return _fail(
        f"ValueError. A condition compares at most {MAX_VALUES} values in all (each "
        f"comparison's value and each member of an in or not_in list); received {received}."
    )


def check_shape(cond: dict[str, Any]) -> None:
    """Refuse a condition nesting deeper than ``MAX_NESTING`` or comparing more than
    ``MAX_VALUES`` values, by an iterative walk: it runs before anything recurses into the
    condition (10,000 nested ``not`` were a ``RecursionError``), and bounds what an engine
    must bind (a longer ``in`` list was an index failure on PostgreSQL only)."""
    stack: list[tuple[Any, int, int, bool]] = [(cond, 0, 0, True)]
    values = visited = 0
    while stack:
        node, logic, depth, counted = stack.pop()
        visited += 1
        if visited > 10 * MAX_VALUES:  # (a structure that refers to itself ends here too)
            raise _values_error(f"more than {MAX_VALUES}")
        if depth > _MAX_CONTAINERS:
            raise _fail(
                f"TypeError. A condition's dicts and lists nest at most {_MAX_CONTAINERS} "
                "levels deep; received more (a value must be a plain scalar or a list of them)."
            )
        if isinstance(node, dict):
            for key, value in node.items():
                nested = key in LOGIC_KEYS
                if nested and logic >= MAX_NESTING:
                    raise nesting_error(logic + 1)
                keep = counted and (nested or key not in CONTROL_KEYS)
                stack.append((value, logic + nested, depth + 1, keep))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, logic, depth + 1, counted) for item in node)
        elif counted:
            values += 1
    if values > MAX_VALUES:
        raise _values_error(str(values))


def _unknown_field(attr: str) -> LineageSearchConditionParamError:
    """MindInsight's "not supported", word for word (callers and the oracle tests match it),
    with the field and the nearest known names as the exception's ``field`` and a note."""
    exc = _fail("ValueError. The search attribute not supported.")
    exc.field = attr
    known = [*FIELDS, *RUN_FIELDS, "tag"]
    exc.add_note(
        f"the field {attr!r} is not one a condition takes{did_you_mean(attr, known)} "
        "(or metric/<name>, user_defined/<name>, <stat>(<tag>), parent/run, parent/step, "
        "parent/checkpoint, parent/match, parent/count, run/train_dataset_fingerprint)"
    )
    return exc


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _check_list(value: Any) -> None:
    if not isinstance(value, (list, tuple)):
        raise _Invalid("The value of `in` operation must be list or tuple.")
    if not all(v is None or _is_scalar(v) for v in value):
        raise _Invalid("Wrong value type.")


def _check_operation(ops: dict[str, Any]) -> None:
    if not set(ops).issubset({"in", "eq", "not_in"}):
        raise _Invalid("Its operation should be `eq`, `in` or `not_in`.")


def _check_typed(ops: dict[str, Any], kind: str) -> None:
    """MindInsight's check_dict_value_type / check_param_value_type, lists checked too."""
    for op, value in ops.items():
        if op in ("in", "not_in"):
            _check_list(value)
        elif kind == "str":
            if not isinstance(value, str):
                raise _Invalid("Wrong value type.")
        elif kind == "int":
            if not isinstance(value, int):
                raise _Invalid("Wrong value type.")
            if value < 0 or value > _INT_MAX:
                raise _Invalid("Int value should <= pow(2, 63) - 1.")
            if isinstance(value, bool):
                raise _Invalid("Wrong value type.")
        elif kind == "num":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Invalid("Wrong value type.")
        elif not _is_scalar(value):  # user_defined/: any plain scalar
            raise _Invalid("Wrong value type.")


def _validate_control(cond: dict[str, Any]) -> None:
    """MindInsight's validate_condition: types of the paging and sorting keys."""
    for key in ("limit", "offset"):
        if key in cond:
            value = cond[key]
            if isinstance(value, bool) or not isinstance(value, int):
                raise _fail(f"TypeError. The {key} must be int.")
    if "sorted_name" in cond:
        name = cond["sorted_name"]
        msg = (
            f"ValueError. The sorted_name must be in {list(FIELDS)} or start with "
            "`metric/` or `user_defined/`."
        )
        if not isinstance(name, str) or not (is_field(normalize_field(name)) or name == "tag"):
            raise _fail(msg)
    if "series" in cond:
        try:
            cond["series"] = check_series(cond["series"])
        except LineageSearchConditionParamError as exc:
            raise _fail(str(exc)) from None
    if "sorted_type" in cond:
        if "sorted_name" not in cond:
            raise _fail("ValueError. The sorted_name must exist when sorted_type exists.")
        if cond["sorted_type"] not in ("ascending", "descending", None):
            raise _fail("ValueError. The sorted_type must be ascending or descending.")


def _validate_comparisons(cond: dict[str, Any]) -> None:
    """MindInsight's pre-load pass: field names, operator names, metric value types."""
    for attr, ops in cond.items():
        if attr in CONTROL_KEYS:
            continue
        if not is_field(attr) and attr != "tag":  # tag: trainledger's, as in sorted_name
            raise _unknown_field(attr)
        if not isinstance(ops, dict):
            raise _fail(f"TypeError. The search_condition element {attr} should be dict.")
        for op in ops:
            if op not in OPERATORS:
                raise _fail(
                    "ValueError. The compare condition should be in "
                    "('eq', 'lt', 'gt', 'le', 'ge', 'in', 'not_in')."
                )
        if attr.startswith("metric/") or attr == "tag" or parse_series_field(attr):
            try:
                _check_typed(ops, "num")
            except _Invalid:
                raise _fail(
                    f"The parameter {attr} is invalid. "
                    "It should be a dict and the value should be a float or a integer"
                ) from None


def _field_error(field: str, detail: str) -> LineageSearchConditionParamError:
    if "operation" in detail.lower():
        return _fail(f"The parameter {field} is invalid. {detail}")
    return _fail(_FIELD_MESSAGES[field])


def _validate_fields(cond: dict[str, Any]) -> None:
    """MindInsight's schema pass: range errors first, then per-field validators by name."""
    if "limit" in cond and not 0 < cond["limit"] <= 100:
        raise _fail(_FIELD_MESSAGES["limit"])
    if "offset" in cond and not 0 <= cond["offset"] <= 100000:
        raise _fail(_FIELD_MESSAGES["offset"])
    if "lineage_type" in cond and not isinstance(cond["lineage_type"], dict):
        raise _fail(_FIELD_MESSAGES["lineage_type"])
    # MindInsight ran its validators in the alphabetical order of their method names; ours
    # (RUN_FIELDS) come after them.
    order = sorted(
        [f for f in (*FIELDS, "lineage_type") if f in cond],
        key=lambda f: "check_" + f,
    )
    order += [f for f in RUN_FIELDS if f in cond]
    for field in order:
        ops = cond[field]
        try:
            if field in _SINGLE_OPERATION:
                _check_operation(ops)
                if len(ops) > 1:
                    raise _fail(
                        f"More than one operation of {field}. Give one of eq, in, not_in; "
                        f"received: {', '.join(map(str, ops))}."
                    )
            if field == "lineage_type":
                _check_typed(ops, "str")
                wanted = [
                    item
                    for op, value in ops.items()
                    for item in (value if op in ("in", "not_in") else [value])
                ]
                if not set(wanted).issubset(LINEAGE_TYPES):
                    raise _Invalid(f"Given lineage type should be one of {list(LINEAGE_TYPES)}.")
            elif field in STR_FIELDS or field == "status":
                _check_operation(ops)
                _check_typed(ops, "str")
            elif field in INT_FIELDS or field == "sessions":
                _check_typed(ops, "int")
            else:
                _check_typed(ops, "num")
        except _Invalid as exc:
            raise _field_error(field, str(exc)) from None
    for attr, ops in cond.items():
        # user_defined/ and trainledger's optimizer/, scheduler/, parent/ and run/: any plain
        # scalar
        if attr.startswith(PARAMETER_PREFIXES + DERIVED_PREFIXES):
            try:
                _check_typed(ops, "any")
            except _Invalid as exc:
                raise _fail(
                    f"The parameter {attr} is invalid. {exc}"
                    if "operation" in str(exc)
                    else f"The parameter {attr} is invalid. It should be a dict and the value "
                    "should be a string, an integer or a float."
                ) from None


def _encodable(value: Any, errors: str = "strict") -> bool:
    """Whether every text in ``value`` is valid UTF-8 (``errors="surrogateescape"``: or a
    path as Python lists a name that is not UTF-8, whose bytes become lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8", errors)
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v, errors) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_encodable(v, errors) for v in value)
    return True


def _check_unicode(cond: dict[str, Any]) -> None:
    """Reject text no database can store (lone surrogates), naming the field."""
    for key, value in cond.items():
        if not _encodable(key):
            raise _fail(
                f"The parameter {ascii(key)} is invalid. A field name must be valid Unicode "
                "text (it holds a lone surrogate)."
            )
        # a summary_dir is a path: names that are not UTF-8 become ids (storage.id_of_name)
        if not _encodable(value, "surrogateescape" if key == "summary_dir" else "strict"):
            raise _fail(
                f"The parameter {key} is invalid. Its value must be valid Unicode text "
                f"(it holds a lone surrogate): {ascii(value)}."
            )


def validate_condition(search_condition: Any) -> dict[str, Any]:
    """Check a search condition; return it normalized (``metric_x`` -> ``metric/x``).

    Raises ``LineageSearchConditionParamError`` with MindInsight's message for anything
    malformed: wrong types, bools where ints are due, unknown fields or operators,
    out-of-range limit/offset, non-list ``in``, sorted_type without sorted_name.
    """
    if search_condition is None:
        return {}
    if not isinstance(search_condition, dict):
        raise _fail("TypeError. Invalid search_condition type, it should be dict.")
    check_shape(search_condition)
    cond: dict[str, Any] = {}
    for key, value in search_condition.items():
        if not isinstance(key, str):
            raise _fail("ValueError. The search attribute not supported.")
        cond[normalize_field(key) if key not in CONTROL_KEYS else key] = value
    if cond.get("lineage_type") in LINEAGE_TYPES:  # the documented plain-string form
        cond["lineage_type"] = {"eq": cond["lineage_type"]}
    if isinstance(cond.get("sorted_name"), str):
        cond["sorted_name"] = normalize_field(cond["sorted_name"])
    _check_unicode(cond)
    _validate_control(cond)
    _validate_comparisons(cond)
    _validate_fields(cond)
    _validate_logic(cond, 0)
    return cond


def _validate_logic(cond: dict[str, Any], depth: int) -> None:
    """Validate (and normalize, in place) the conditions under ``or``/``and``/``not``: each
    is a dict of field conditions, checked as a top-level one, and logic keys again; the
    paging, sorting and lineage_type keys belong to the top level only."""
    for key in LOGIC_KEYS:
        if key not in cond:
            continue
        value = cond[key]
        if depth >= MAX_NESTING:  # (check_shape refused it already: kept for direct calls)
            raise nesting_error(depth + 1)
        if key == "not" and not isinstance(value, dict):
            raise _fail(f"TypeError. The not expected a condition (a dict), received: {value!r}.")
        if key != "not" and (not isinstance(value, (list, tuple)) or not value):
            raise _fail(
                f"TypeError. The {key} expected a non-empty list of conditions (dicts), "
                f"received: {value!r}."
            )
        subs = [value] if key == "not" else list(value)
        checked = [_validate_sub(sub, key, depth + 1) for sub in subs]
        cond[key] = checked[0] if key == "not" else checked


def _validate_sub(sub: Any, key: str, depth: int) -> dict[str, Any]:
    if not isinstance(sub, dict):
        raise _fail(f"TypeError. Each condition of {key} should be a dict, received: {sub!r}.")
    if not sub:
        raise _fail(f"ValueError. A condition of {key} is empty: it would match every run.")
    placed = [k for k in sub if k in CONTROL_KEYS and k not in LOGIC_KEYS]
    if placed:
        raise _fail(
            f"ValueError. {placed[0]} belongs to the top level of search_condition, "
            f"not inside {key}."
        )
    out = {normalize_field(k) if isinstance(k, str) else k: v for k, v in sub.items()}
    if not all(isinstance(k, str) for k in out):
        raise _fail("ValueError. The search attribute not supported.")
    _check_unicode(out)
    _validate_comparisons(out)
    _validate_fields(out)
    _validate_logic(out, depth)
    return out


def lineage_types(cond: dict[str, Any]) -> list[str]:
    """Which parts ('model', 'dataset') each result object carries."""
    spec = cond.get("lineage_type")
    if not spec:
        return list(LINEAGE_TYPES)
    kept = set(LINEAGE_TYPES)
    if "eq" in spec:
        kept &= {spec["eq"]}
    if "in" in spec:
        kept &= set(spec["in"])
    if "not_in" in spec:
        kept -= set(spec["not_in"])
    return [t for t in LINEAGE_TYPES if t in kept]


def page_bounds(cond: dict[str, Any]) -> tuple[int, int | None]:
    """(start, stop) of the requested page; ``stop`` None means everything."""
    if "offset" not in cond and "limit" not in cond:
        return 0, None
    offset = cond.get("offset", 0)
    limit = cond.get("limit", 10)
    return offset * limit, (offset + 1) * limit


def filter_items(cond: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """The (field, operator, value) triples to AND together (the ``LOGIC_KEYS`` apart)."""
    return [
        (field, op, value)
        for field, ops in cond.items()
        if field not in CONTROL_KEYS
        for op, value in ops.items()
    ]
