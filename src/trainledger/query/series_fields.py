"""Series statistics as query fields: ``max(eval/accuracy)``, ``min_step(loss)``...

Why this spelling: a condition key is a statistic's name, then the tag in parentheses.
Fixed fields have no parentheses and custom fields start with ``metric/`` or
``user_defined/``, so no key of MindInsight's grammar reads as a statistic; and since the tag
is everything between the first ``(`` and the final ``)``, a tag may hold ``/``, ``:``, spaces
or parentheses of its own (``max(a (b))`` is the tag ``a (b)``).
"""

from __future__ import annotations

from typing import Any

from trainledger.errors import LineageSearchConditionParamError

__all__ = [
    "STATS",
    "check_series",
    "named_series_fields",
    "parse_series_field",
    "series_field",
    "series_value",
]

#: statistic -> what it is, for the docs and the CLI's help
STATS: dict[str, str] = {
    "last": "the value of the last point (None when it is NaN or infinite)",
    "min": "the smallest finite value",
    "max": "the largest finite value",
    "count": "the number of points (NaN and infinite ones included)",
    "last_step": "the step of the last point",
    "min_step": "the step where the smallest finite value first occurs",
    "max_step": "the step where the largest finite value first occurs",
    "nonfinite_step": "the first step whose value is NaN or infinite (None if none is)",
}


def parse_series_field(name: object) -> tuple[str, str] | None:
    """``(statistic, tag)`` of a series field such as ``max(eval/accuracy)``, else None."""
    if not isinstance(name, str) or not name.endswith(")"):
        return None
    opening = name.find("(")
    if opening <= 0 or opening == len(name) - 2:  # no statistic, or no tag
        return None
    stat = name[:opening]
    return (stat, name[opening + 1 : -1]) if stat in STATS else None


def series_field(stat: str, tag: str) -> str:
    """The field name of ``stat`` over ``tag`` (the inverse of ``parse_series_field``)."""
    return f"{stat}({tag})"


def series_value(series: Any, field: str) -> Any:
    """The value of a series field in a record's ``series`` ({tag: {stat: value}}), or None."""
    parsed = parse_series_field(field)
    if parsed is None or not isinstance(series, dict):
        return None
    stat, tag = parsed
    return (series.get(tag) or {}).get(stat)


def check_series(fields: Any) -> list[str]:
    """``fields`` (series fields to show) as a list, or ``LineageSearchConditionParamError``
    saying which one is not ``<stat>(<tag>)``."""
    if not isinstance(fields, (list, tuple)) or not all(isinstance(f, str) for f in fields):
        raise LineageSearchConditionParamError(
            f"series expected a list of fields such as 'max(eval/accuracy)', received: {fields!r}"
        )
    for name in fields:
        if parse_series_field(name) is None:
            raise LineageSearchConditionParamError(
                f"series expected fields <stat>(<tag>) with stat one of {', '.join(STATS)}, "
                f"received: {name!r}"
            )
    return list(fields)


def named_series_fields(cond: dict[str, Any]) -> list[str]:
    """The series fields a *validated* condition filters or sorts on, each once, in order:
    their values are added to each result object (``"series"``), so an answer shows the
    statistic it was chosen by. A condition without any gets MindInsight's objects as they were."""
    names = [*_field_names(cond), cond.get("sorted_name")]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and parse_series_field(n)))


def _field_names(cond: dict[str, Any]) -> list[Any]:
    """The keys of a condition and of its ``or``/``and``/``not`` conditions."""
    names: list[Any] = list(cond)
    for key in ("or", "and", "not"):
        subs = cond.get(key)
        for sub in [subs] if isinstance(subs, dict) else subs if isinstance(subs, list) else []:
            if isinstance(sub, dict):
                names += _field_names(sub)
    return names
