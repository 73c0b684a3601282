"""Metric sums kept where the batches are: on a GPU, ``Accuracy``/``Loss``/``MAE``/``MSE`` add
each batch's count or sum to a device tensor and read it once, in ``eval()`` (or ``state()``).

Why: a per-batch conversion to numpy waits for the device at every evaluation step. Duck-typed
(tensor methods only), as ``run/metrics.py`` is, so neither imports torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DeviceSum", "device_labels", "on_device"]


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
