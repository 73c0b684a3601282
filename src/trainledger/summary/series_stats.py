"""A scalar series' statistics (``TagStats``): from its points, by running update as a writer
writes them, and chained across files read one after another.

Why here, in ``summary``: the writer keeps them as it writes (``series_sidecar.py``) and the
index computes them when it reads files (``query/series_index.py``); one definition makes the
two agree to the bit, which the index relies on when it trusts a writer's sidecar.

The rule for every path: points in writing order, after the series rule of ``series.py``;
``last`` is the last point's value (None when it is NaN or infinite), ``min``/``max`` over the
finite values with the step of their *first* occurrence, ``count`` every point,
``nonfinite_step`` the step of the first NaN or infinity and ``nonfinite_kind`` what it was
(``"nan"``, ``"inf"`` or ``"-inf"``: a loss that overflowed is not one that went NaN),
``top_step`` the largest step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - the annotations' types
    import numpy as np

__all__ = ["TagStats", "nonfinite_kind", "tag_stats"]


@dataclass(frozen=True)
class TagStats:
    """The statistics of one tag's series (the query's names: ``as_dict``) and its largest
    step."""

    last: float | None
    last_step: int
    min: float | None
    min_step: int | None
    max: float | None
    max_step: int | None
    count: int
    nonfinite_step: int | None
    top_step: int
    nonfinite_kind: str | None

    def as_dict(self) -> dict[str, Any]:
        """The statistics by their query names (``top_step`` is the index's own)."""
        return {
            "last": self.last,
            "min": self.min,
            "max": self.max,
            "count": self.count,
            "last_step": self.last_step,
            "min_step": self.min_step,
            "max_step": self.max_step,
            "nonfinite_step": self.nonfinite_step,
        }

    def then(self, later: TagStats) -> TagStats:
        """These statistics followed by those of points written after them (none dropped)."""
        low = self.min is None or (later.min is not None and later.min < self.min)
        high = self.max is None or (later.max is not None and later.max > self.max)
        return TagStats(
            later.last,
            later.last_step,
            later.min if low else self.min,
            later.min_step if low else self.min_step,
            later.max if high else self.max,
            later.max_step if high else self.max_step,
            self.count + later.count,
            self.nonfinite_step if self.nonfinite_step is not None else later.nonfinite_step,
            max(self.top_step, later.top_step),
            self.nonfinite_kind if self.nonfinite_step is not None else later.nonfinite_kind,
        )


def tag_stats(steps: np.ndarray, values: np.ndarray) -> TagStats:
    """Statistics of a non-empty series (its points in writing order, after the rule)."""
    import numpy as np  # (heavy: only reading summaries needs it, not a query of the index)

    finite = np.isfinite(values)
    last = float(values[-1])
    low = high = low_step = high_step = None
    if finite.all():
        low_at, high_at = int(np.argmin(values)), int(np.argmax(values))
    elif finite.any():
        where = np.flatnonzero(finite)
        low_at = int(where[np.argmin(values[where])])
        high_at = int(where[np.argmax(values[where])])
    else:
        low_at = high_at = -1
    if low_at >= 0:
        low, low_step = float(values[low_at]), int(steps[low_at])
        high, high_step = float(values[high_at]), int(steps[high_at])
    bad = np.flatnonzero(~finite)
    return TagStats(
        last if math.isfinite(last) else None,
        int(steps[-1]),
        low,
        low_step,
        high,
        high_step,
        len(values),
        int(steps[bad[0]]) if len(bad) else None,
        int(steps.max()),
        nonfinite_kind(float(values[bad[0]])) if len(bad) else None,
    )


def nonfinite_kind(value: float) -> str:
    """``"nan"``, ``"inf"`` or ``"-inf"``: the name a non-finite value goes by in the index
    and the series API (JSON has none of them as a number)."""
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"
