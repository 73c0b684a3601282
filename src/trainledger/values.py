"""Plain values from what users pass: a scalar from a number or a tensor, the checks of
integer arguments, and copies of JSON-like values. Ground (``docs/architecture.md``, "Layer
rules"): the run host, the callbacks, summaries, lineage, the query engine and the
integrations all read scalars, check arguments and copy records, and must agree, so the rules
live below them all.

The rules are MindSpore's: an argument of the wrong type is a ``TypeError`` and one out of
range a ``ValueError``, each saying what was expected and what was received; a bool is never
a number here (``True`` is not an epoch count, nor a metric value).
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Iterable
from typing import Any

__all__ = [
    "check_positive_int",
    "floats_without_nan",
    "fresh_copy",
    "holds_containers",
    "scalar_of",
]


def scalar_of(value: Any) -> float | None:
    """A plain float from a number, or a tensor or array of one element (any device, any
    dtype: read with ``item()``); None for anything else: None, bools, text, several values.

    Why None rather than an error: callers record what they can (a metric dict may hold a
    string or a per-class vector), and a missing value is what they report then.
    """
    if value is None or isinstance(value, (bool, str, bytes)):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    numel = getattr(value, "numel", None) or getattr(value, "size", None)
    try:
        count = numel() if callable(numel) else numel
        if count == 1 and hasattr(value, "item"):
            item = value.item()
            return None if isinstance(item, bool) else float(item)
    except (TypeError, ValueError, RuntimeError):
        return None
    return None


def check_positive_int(name: str, value: Any, *, allow_none: bool = False) -> None:
    """``value`` is an int > 0, or None when ``allow_none``: a ``TypeError`` for another type
    (bools included), a ``ValueError`` for 0 or less."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        expected = "a positive int or None" if allow_none else "a positive int"
        raise TypeError(f"{name} expected {expected}, received: {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} expected a positive int, received: {value}")


def fresh_copy(value: Any) -> Any:
    """A copy of a JSON-like value that shares no dict or list with it (scalars and tuples
    are immutable): a record handed out must not share anything with what produced it (a
    parsed lineage file, the index's cached records).

    Why not ``copy.deepcopy`` or a comprehension: the C ``copy()`` of each container leaves
    only its nested containers to visit, so a run's 1,500 metrics cost one copy, not 1,500
    calls (a fifth of indexing such a run went to the recursive copy before)."""
    kind = type(value)
    if kind is dict:
        out = value.copy()
        if len(out) > 16 and not holds_containers(out.values()):  # (a wide run's metrics)
            return out
        for key, item in out.items():
            if type(item) is dict or type(item) is list:
                out[key] = fresh_copy(item)
        return out
    if kind is list:
        out = value.copy()
        for i, item in enumerate(out):
            if type(item) is dict or type(item) is list:
                out[i] = fresh_copy(item)
        return out
    return value


def holds_containers(values: Iterable[Any]) -> bool:
    """Whether any of ``values`` is a dict or a list; their types are looked at in C, so a
    wide run's 1,500 scalar metrics cost one pass, not 1,500 calls."""
    kinds = set(map(type, values))
    return dict in kinds or list in kinds


def floats_without_nan(values: Collection[Any]) -> bool:
    """Whether every one of ``values`` is a float (not a subclass) and none is NaN, looked
    at in C: a wide run's 1,500 metrics cost three passes, not 1,500 calls. (Both
    infinities among them also read as a NaN: False, which only costs the caller its slow
    path.)"""
    if set(map(type, values)) != {float}:
        return False
    total = sum(values)  # (NaN if a value is)
    return bool(total == total)
