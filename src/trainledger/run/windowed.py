"""Metrics over a sliding window of the last N training batches, for online training.

Why a window: an online learner never finishes an epoch, and the data drifts, so a metric
accumulated since the start says little about the model now. What online learners watch is
the metric over the most recent traffic (AUC and log loss over the last N batches).

Why recompute instead of update incrementally: most metrics (AUC above all) cannot "forget" a
batch, so the window keeps each batch's predictions, labels and loss (as numpy, off the
autograd graph) and recomputes every metric from them every ``every`` steps. The cost is
paid once per ``every`` steps, not per step.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from trainledger.run.metric_base import Metric, to_numpy

__all__ = ["WindowedMetrics"]


class WindowedMetrics:
    """Keeps the last ``window`` batches and evaluates ``metrics`` over them.

    ``Metric.needs_loss`` metrics (``Loss``) get ``update(loss)`` per batch, the others
    ``update(y_pred, y)``, exactly as ``Model.eval`` calls them, so every metric of
    ``trainledger.metrics`` (and user metrics with the same protocol) works unchanged.
    """

    def __init__(self, metrics: dict[str, Metric], window: int, every: int) -> None:
        for name, value in (("metric_window", window), ("metric_every", every)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} expected a positive int, received: {value!r}")
        self.metrics = metrics
        self.window = window
        self.every = every
        self.needs_predictions = any(not m.needs_loss for m in metrics.values())
        self._batches: deque[tuple[Any, Any, Any]] = deque(maxlen=window)
        self._next_due = every
        self.last: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._batches)

    def add(self, loss: Any, y_pred: Any, y: Any) -> None:
        """Record one training batch (tensors are detached and copied to host memory)."""
        self._batches.append(
            (
                to_numpy(loss),
                None if y_pred is None else to_numpy(y_pred),
                None if y is None else to_numpy(y),
            )
        )

    def due(self, step: int) -> bool:
        """Whether the metrics should be recomputed at global step ``step``.

        True once per ``every`` steps, also when a sink unit jumps over the exact multiple.
        """
        if step < self._next_due:
            return False
        self._next_due = (step // self.every + 1) * self.every
        return True

    def compute(self) -> dict[str, float]:
        """Every metric over the window now; empty while the window is empty."""
        if not self._batches:
            return {}
        result: dict[str, float] = {}
        for name, metric in self.metrics.items():
            metric.clear()
            for loss, y_pred, y in self._batches:
                if metric.needs_loss:
                    metric.update(loss)
                else:
                    metric.update(y_pred, y)
            value = metric.eval()
            result[name] = float(value) if _is_scalar(value) else value
        self.last = result
        return result


def _is_scalar(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return getattr(value, "ndim", 0) == 0
