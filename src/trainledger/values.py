"""Plain values from what users pass: a scalar from a number or a tensor, and the checks of
integer arguments. Ground (``docs/architecture.md``, "Layer rules"): the run host, the
callbacks, summaries, lineage and the integrations all read scalars and check arguments, and
must agree, so the rules live below them all.

The rules are MindSpore's: an argument of the wrong type is a ``TypeError`` and one out of
range a ``ValueError``, each saying what was expected and what was received; a bool is never
a number here (``True`` is not an epoch count, nor a metric value).
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["check_positive_int", "scalar_of"]


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
