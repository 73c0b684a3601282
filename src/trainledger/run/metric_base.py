"""The metric protocol (``Metric``: ``clear()``, ``update(*inputs)``, ``eval()``, and the
``state()``/``merge()`` of a sharded evaluation) and the numpy helpers the metrics share.

Why its own module: ``run/metrics.py`` holds the concrete metrics and their names; a user's
metric subclasses ``trainledger.metrics.Metric`` (re-exported there) and needs nothing else.
numpy only: torch tensors are converted duck-typed, so this module imports without torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Metric", "to_numpy"]


def to_numpy(x: Any) -> np.ndarray:
    """An ndarray of ``x`` (a torch tensor on any device/dtype, a list, a number)."""
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        t = x.detach().cpu()
        if t.is_floating_point():
            t = t.float()  # bfloat16/float16 have no numpy dtype
        return t.numpy()  # type: ignore[no-any-return]
    return np.asarray(x)


class Metric:
    """Base class: accumulate with ``update``, read with ``eval``, reset with ``clear``."""

    needs_loss = False

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget everything accumulated."""

    def update(self, *inputs: Any) -> None:
        """Accumulate one batch; usually ``update(y_pred, y)``."""
        raise NotImplementedError

    def eval(self) -> Any:
        """The metric over everything accumulated since ``clear``."""
        raise NotImplementedError

    def state(self) -> dict[str, np.ndarray] | None:
        """What ``update`` accumulated, as arrays, so ranks that each saw part of the data can
        be merged (``merge``). None (the default for user metrics): this metric cannot be
        merged, and under a sharded evaluation it keeps its own rank's value."""
        return None

    def merge(self, states: list[dict[str, np.ndarray]]) -> None:
        """Become the metric of the union of ``states`` (every rank's ``state()``, this one's
        included)."""
        raise NotImplementedError(f"{type(self).__name__} has no merge")

    @staticmethod
    def _pair(inputs: tuple[Any, ...], name: str) -> tuple[np.ndarray, np.ndarray]:
        if len(inputs) != 2:
            raise ValueError(
                f"{name}.update expected 2 inputs (y_pred, y), received: {len(inputs)}"
            )
        return to_numpy(inputs[0]), to_numpy(inputs[1])

    @staticmethod
    def _empty(name: str) -> RuntimeError:
        return RuntimeError(f"{name}.eval called before any update (no samples)")


def _class_labels(y_pred: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Predicted and true class indices, and the number of classes.

    ``y_pred`` (N, C) scores -> argmax; ``y`` (N,) indices or (N, C) one-hot. 1-D ``y_pred``
    are binary: integer labels as they are, float scores thresholded at 0.5.
    """
    if y_pred.ndim == 2 and y_pred.shape[1] > 1:
        num_classes = y_pred.shape[1]
        pred = y_pred.argmax(axis=1)
    else:
        flat = y_pred.reshape(-1)
        pred = (flat >= 0.5).astype(np.int64) if flat.dtype.kind == "f" else flat.astype(np.int64)
        num_classes = 2
    true = y.argmax(axis=1) if y.ndim == 2 and y.shape[1] > 1 else y.reshape(-1).astype(np.int64)
    if true.shape[0] != pred.shape[0]:
        raise ValueError(
            f"y_pred and y expected the same number of samples, received: {pred.shape[0]} "
            f"and {true.shape[0]}"
        )
    return pred, true, max(num_classes, int(true.max(initial=0)) + 1)


def _summed(states: list[dict[str, np.ndarray]], key: str) -> np.ndarray:
    """The element-wise sum of ``key`` over ``states``; shorter arrays (a rank that saw fewer
    classes) are padded with zeros."""
    arrays = [np.asarray(st[key]) for st in states]
    size = max(a.size for a in arrays)
    return sum((np.pad(a, (0, size - a.size)) for a in arrays), np.zeros(size, np.int64))
