"""Metric sums kept where the batches are: on a GPU, ``Accuracy``/``Loss``/``MAE``/``MSE`` add
each batch's count or sum to a device tensor, and ``Precision``/``Recall``/``F1`` their
per-class counts, and read them once, in ``eval()`` (or ``state()``).

Why: a per-batch conversion to numpy waits for the device at every evaluation step. Duck-typed
(tensor methods only), as ``run/metrics.py`` is, so neither imports torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DeviceCounts", "DeviceSum", "device_labels", "on_device"]


def on_device(*values: Any) -> bool:
    """Whether every value is a torch tensor off the CPU (summed there, read once)."""
    return all(hasattr(v, "is_cpu") and not v.is_cpu for v in values)


def device_labels(y_pred: Any, y: Any) -> tuple[Any, Any]:
    """Predicted and true class indices on the device, by ``metrics._class_labels``' rule:
    (N, C) scores -> argmax; 1-D float scores thresholded at 0.5; one-hot labels -> argmax."""
    if y_pred.ndim == 2 and y_pred.shape[1] > 1:
        pred = y_pred.argmax(1)
    else:
        flat = y_pred.reshape(-1)
        pred = (flat >= 0.5).long() if flat.is_floating_point() else flat.long()
    true = y.argmax(1) if y.ndim == 2 and y.shape[1] > 1 else y.reshape(-1).long()
    if true.shape[0] != pred.shape[0]:
        raise ValueError(
            f"y_pred and y expected the same number of samples, received: {pred.shape[0]} "
            f"and {true.shape[0]}"
        )
    return pred, true


class DeviceSum:
    """A running sum that stays a device tensor until ``take`` reads it (one host read)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None

    def add(self, amount: Any) -> None:
        self.value = amount if self.value is None else self.value + amount

    def take(self) -> float:
        """The sum as a float (0.0 when nothing was added); the sum restarts."""
        value, self.value = self.value, None
        return 0.0 if value is None else float(value.item())


class DeviceCounts:
    """Per-class true positives, predictions and labels of (N, C) score batches, counted on
    the device (``index_add_``: no host read) and read once by ``take``.

    Binary float scores ((N,) or (N, 1), thresholded at 0.5) are two classes. A label outside
    ``[0, C)`` cannot be counted without knowing the largest label (a host read), so it is
    counted apart and ``take`` raises a ``ValueError`` naming it; predicted labels (integer
    ``y_pred``) are left to the host path (``add`` returns False): their classes are known
    only from their values.
    """

    __slots__ = ("counts", "outside")

    def __init__(self) -> None:
        self.counts: Any = None  # (3, C) int64: true positives, predicted, actual per class
        self.outside: Any = None  # [labels outside [0, C), the largest label]

    def add(self, y_pred: Any, y: Any) -> bool:
        """Count a batch on the device; False (nothing counted) when it has no (N, C) scores
        or its C differs from the batches counted so far."""
        classes = _classes(y_pred)
        if classes is None or (self.counts is not None and self.counts.shape[1] != classes):
            return False
        pred, true = device_labels(y_pred, y)
        outside = (true < 0) | (true >= classes)
        label = true.clamp(0, classes - 1)
        inside = (~outside).long()
        if self.counts is None:
            self.counts = pred.new_zeros((3, classes))
            self.outside = pred.new_zeros(2)
        self.counts[0].index_add_(0, label, (pred == true).long() * inside)
        self.counts[1].index_add_(0, pred, pred.new_ones(pred.shape))
        self.counts[2].index_add_(0, label, inside)
        self.outside[0] += outside.sum()
        if true.numel():
            self.outside[1] = self.outside[1].maximum(true.max())
        return True

    def take(self, metric: str) -> tuple[Any, Any, Any] | None:
        """The (tp, predicted, actual) numpy counts (None when nothing was counted); the counts
        restart. Raises ``ValueError`` when a label was not a class of the scores."""
        if self.counts is None:
            return None
        counts, outside = self.counts, self.outside
        self.counts = self.outside = None
        host = _to_host_rows(counts, outside)
        classes = counts.shape[1]
        if host[1][0]:
            raise ValueError(
                f"{metric} expected labels in [0, {classes}) (the scores have {classes} "
                f"classes), received {int(host[1][0])} outside it, the largest {int(host[1][1])}"
            )
        tp, pred, true = host[0]
        return tp, pred, true


def _classes(y_pred: Any) -> int | None:
    """C of (N, C) scores, 2 of binary float scores ((N,) or (N, 1)), None otherwise."""
    if y_pred.ndim == 2 and y_pred.shape[1] >= 2:
        return int(y_pred.shape[1])
    binary = y_pred.ndim == 1 or (y_pred.ndim == 2 and y_pred.shape[1] == 1)
    return 2 if binary and y_pred.is_floating_point() else None


def _to_host_rows(counts: Any, outside: Any) -> tuple[Any, Any]:
    """The counts and the outside record as numpy, in one copy to the host."""
    import torch  # only for device tensors: this module imports without torch

    flat = torch.cat([counts.reshape(-1), outside]).cpu().numpy()
    classes = counts.shape[1]
    return flat[: 3 * classes].reshape(3, classes), flat[3 * classes :]
