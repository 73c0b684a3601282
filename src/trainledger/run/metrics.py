"""Evaluation metrics with MindSpore's protocol: ``clear()``, ``update(*inputs)``, ``eval()``.

numpy only: torch tensors are converted on ``update`` (duck-typed, so this module imports
without torch), except that ``Accuracy``, ``Loss``, ``MAE`` and ``MSE`` sum device batches on
the device, ``Precision``/``Recall``/``F1`` count (N, C) device batches per class there and
``ROCAUC`` keeps their scores there, and read them once, in ``eval()``
(``run/device_sums.py``). ``Model`` calls ``update(y_pred, y)`` on every metric, except those
with ``needs_loss = True`` (``Loss``) which get ``update(loss)``.

Differences from MindSpore, on purpose: ``Precision``/``Recall``/``F1`` return one float (macro
average) by default instead of a per-class array, so results can be stored and queried as
lineage metrics (``average=None`` gives the per-class array); ``MAE``/``MSE`` average over every
element instead of dividing an element sum by the number of samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from trainledger.run.device_sums import DeviceCounts, DeviceSum, device_labels, on_device
from trainledger.run.metric_base import Metric, _class_labels, _summed, to_numpy
from trainledger.run.roc_auc import roc_auc

__all__ = [
    "Metric",
    "Accuracy",
    "Loss",
    "Precision",
    "Recall",
    "F1",
    "MAE",
    "MSE",
    "ROCAUC",
    "METRIC_NAMES",
    "get_metric",
    "get_metrics",
    "roc_auc",
    "to_numpy",
]


class _Mean(Metric):
    """A float ``_sum`` over ``_count`` elements (Loss, MAE, MSE)."""

    _name = "Mean"

    def clear(self) -> None:
        self._sum = 0.0
        self._count = 0
        self._device_sum = DeviceSum()  # device batches' sum, read once by _fold

    def _fold(self) -> None:
        self._sum += self._device_sum.take()

    def eval(self) -> float:
        self._fold()
        if self._count == 0:
            raise self._empty(self._name)
        return self._sum / self._count

    def state(self) -> dict[str, np.ndarray]:
        self._fold()
        return {"sum": np.array([self._sum], np.float64), "count": np.array([self._count])}

    def merge(self, states: list[dict[str, np.ndarray]]) -> None:
        self._sum = float(sum(float(st["sum"][0]) for st in states))
        self._count = int(sum(int(st["count"][0]) for st in states))


class Accuracy(Metric):
    """Share of samples whose predicted class is the label."""

    def clear(self) -> None:
        self._correct = 0
        self._total = 0
        self._device_correct = DeviceSum()

    def update(self, *inputs: Any) -> None:
        if len(inputs) == 2 and on_device(*inputs):
            pred, true = device_labels(*inputs)
            self._device_correct.add((pred == true).sum())
            self._total += int(true.shape[0])
            return
        pred, true, _ = _class_labels(*self._pair(inputs, "Accuracy"))
        self._correct += int((pred == true).sum())
        self._total += int(true.shape[0])

    def eval(self) -> float:
        self._correct += int(self._device_correct.take())
        if self._total == 0:
            raise self._empty("Accuracy")
        return self._correct / self._total

    def state(self) -> dict[str, np.ndarray]:
        self._correct += int(self._device_correct.take())
        return {"counts": np.array([self._correct, self._total], dtype=np.int64)}

    def merge(self, states: list[dict[str, np.ndarray]]) -> None:
        self._correct, self._total = (int(v) for v in _summed(states, "counts"))


class Loss(_Mean):
    """Mean of the loss values given to ``update`` (scalars, or per-sample vectors)."""

    needs_loss = True
    _name = "Loss"

    def update(self, *inputs: Any) -> None:
        if len(inputs) != 1:
            raise ValueError(f"Loss.update expected 1 input (loss), received: {len(inputs)}")
        if on_device(inputs[0]):
            loss_t = inputs[0].detach().double()
            self._device_sum.add(loss_t.sum())
            self._count += loss_t.numel() if loss_t.ndim else 1
            return
        loss = to_numpy(inputs[0]).astype(np.float64)
        self._sum += float(loss.sum()) if loss.ndim else float(loss)
        self._count += int(loss.size) if loss.ndim else 1


class _Confusion(Metric):
    """Per-class true positives, predicted positives and actual positives."""

    _name = "Confusion"

    def __init__(self, average: str | None = "macro") -> None:
        if average not in ("macro", "micro", "binary", None):
            raise ValueError(
                f"{type(self).__name__} average expected 'macro', 'micro', 'binary' or None, "
                f"received: {average!r}"
            )
        self.average = average
        super().__init__()

    def clear(self) -> None:
        self._tp = np.zeros(0, dtype=np.int64)
        self._pred = np.zeros(0, dtype=np.int64)
        self._true = np.zeros(0, dtype=np.int64)
        self._device = DeviceCounts()  # (N, C) device batches, read once by _fold

    def update(self, *inputs: Any) -> None:
        if len(inputs) == 2 and on_device(*inputs) and self._device.add(*inputs):
            return
        pred, true, n = _class_labels(*self._pair(inputs, self._name))
        self._add(n, true[pred == true], pred, true)

    def _grow(self, n: int) -> None:
        """Room for ``n`` classes."""
        if n > self._tp.size:
            grow = n - self._tp.size
            self._tp, self._pred, self._true = (
                np.pad(a, (0, grow)) for a in (self._tp, self._pred, self._true)
            )

    def _add(self, n: int, hits: np.ndarray, pred: np.ndarray, true: np.ndarray) -> None:
        """Count per class: ``hits`` are the true classes of correct predictions."""
        self._grow(n)
        size = self._tp.size
        self._tp += np.bincount(hits, minlength=size)
        self._pred += np.bincount(pred, minlength=size)
        self._true += np.bincount(true, minlength=size)

    def _fold(self) -> None:
        """Add the device counts (one host read) to the host ones."""
        taken = self._device.take(self._name)
        if taken is not None:
            tp, pred, true = taken
            self._grow(tp.size)
            self._tp[: tp.size] += tp
            self._pred[: tp.size] += pred
            self._true[: tp.size] += true

    def state(self) -> dict[str, np.ndarray]:
        self._fold()
        return {"tp": self._tp, "pred": self._pred, "true": self._true}

    def merge(self, states: list[dict[str, np.ndarray]]) -> None:
        self._tp, self._pred, self._true = (_summed(states, k) for k in ("tp", "pred", "true"))

    def _reduce(self, num: np.ndarray, den: np.ndarray) -> Any:
        if self._true.sum() == 0:
            raise self._empty(self._name)
        if self.average == "micro":
            return float(num.sum() / den.sum()) if den.sum() else 0.0
        per_class = np.divide(num, den, out=np.zeros(num.shape), where=den > 0)
        if self.average is None:
            return per_class
        if self.average == "binary":
            return float(per_class[1]) if per_class.size > 1 else 0.0
        return float(per_class.mean())


class Precision(_Confusion):
    """TP / predicted positives, per class, macro-averaged by default."""

    _name = "Precision"

    def eval(self) -> Any:
        self._fold()
        return self._reduce(self._tp, self._pred)


class Recall(_Confusion):
    """TP / actual positives, per class, macro-averaged by default."""

    _name = "Recall"

    def eval(self) -> Any:
        self._fold()
        return self._reduce(self._tp, self._true)


class F1(_Confusion):
    """2 TP / (predicted + actual positives), per class, macro-averaged by default."""

    _name = "F1"

    def eval(self) -> Any:
        self._fold()
        return self._reduce(2 * self._tp, self._pred + self._true)


class _Regression(_Mean):
    _name = "Regression"

    def _error(self, inputs: tuple[Any, ...]) -> np.ndarray:
        y_pred, y = self._pair(inputs, self._name)
        y_pred = y_pred.astype(np.float64)
        y = y.astype(np.float64)
        if y.size != y_pred.size:
            raise ValueError(
                f"{self._name}: y_pred and y expected the same size, received shapes "
                f"{y_pred.shape} and {y.shape}"
            )
        return y_pred.reshape(-1) - y.reshape(-1)  # type: ignore[no-any-return]

    def _device_error(self, inputs: tuple[Any, ...], term: Any) -> bool:
        """Sum ``term(y_pred - y)`` on the device when both are device tensors (True)."""
        if len(inputs) != 2 or not on_device(*inputs):
            return False
        y_pred, y = inputs
        if y.numel() != y_pred.numel():
            raise ValueError(
                f"{self._name}: y_pred and y expected the same size, received shapes "
                f"{tuple(y_pred.shape)} and {tuple(y.shape)}"
            )
        err = y_pred.detach().double().reshape(-1) - y.detach().double().reshape(-1)
        self._device_sum.add(term(err).sum())
        self._count += err.numel()
        return True


class MAE(_Regression):
    """Mean absolute error over every element."""

    _name = "MAE"

    def update(self, *inputs: Any) -> None:
        if self._device_error(inputs, lambda err: err.abs()):
            return
        err = self._error(inputs)
        self._sum += float(np.abs(err).sum())
        self._count += err.size


class MSE(_Regression):
    """Mean squared error over every element."""

    _name = "MSE"

    def update(self, *inputs: Any) -> None:
        if self._device_error(inputs, lambda err: err * err):
            return
        err = self._error(inputs)
        self._sum += float((err * err).sum())
        self._count += err.size


class ROCAUC(Metric):
    """Exact area under the ROC curve.

    Binary: ``y_pred`` is (N,) scores or (N, 2) with the positive class second. Multi-class
    (N, C): one-vs-rest per class, macro-averaged over classes that have both positives and
    negatives.
    """

    def clear(self) -> None:
        self._scores: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        self._device: list[tuple[Any, Any]] = []  # device batches, read together by _fold

    def update(self, *inputs: Any) -> None:
        if len(inputs) == 2 and on_device(*inputs):  # kept there: no host read per batch
            y_pred, y = inputs
            self._device.append((y_pred.detach().clone(), y.detach().clone()))
            return
        y_pred, y = self._pair(inputs, "ROCAUC")
        self._scores.append(y_pred.astype(np.float64))
        self._labels.append(y)

    def _fold(self) -> None:
        """The device batches' scores and labels, each copied to the host once."""
        if self._device:
            import torch  # only for device tensors: this module imports without torch

            scores = torch.cat([s for s, _ in self._device]).double().cpu().numpy()
            labels = torch.cat([y for _, y in self._device]).cpu().numpy()
            self._device = []
            self._scores.append(scores)
            self._labels.append(labels)

    def state(self) -> dict[str, np.ndarray]:
        self._fold()
        if not self._scores:
            return {}
        return {"scores": np.concatenate(self._scores), "labels": np.concatenate(self._labels)}

    def merge(self, states: list[dict[str, np.ndarray]]) -> None:
        self._scores = [st["scores"] for st in states if "scores" in st]
        self._labels = [st["labels"] for st in states if "labels" in st]

    def eval(self) -> float:
        self._fold()
        if not self._scores:
            raise self._empty("ROCAUC")
        scores = np.concatenate(self._scores)
        labels = np.concatenate(self._labels)
        if scores.ndim == 2 and scores.shape[1] == 2:
            scores = scores[:, 1]
        if scores.ndim == 1 or scores.shape[1] == 1:
            if labels.ndim == 2 and labels.shape[1] == 2:
                labels = labels[:, 1]
            return roc_auc(scores.reshape(-1), labels.reshape(-1) > 0)
        num_classes = scores.shape[1]
        if labels.ndim == 2:
            labels = labels.argmax(axis=1)
        areas = [roc_auc(scores[:, c], labels.reshape(-1) == c) for c in range(num_classes)]
        valid = [a for a in areas if not np.isnan(a)]
        return float(np.mean(valid)) if valid else float("nan")


# lower-cased name -> class; MindSpore's names ("Accuracy", "F1", ...) match case-insensitively
METRIC_NAMES: dict[str, type[Metric]] = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "loss": Loss,
    "precision": Precision,
    "recall": Recall,
    "f1": F1,
    "mae": MAE,
    "mse": MSE,
    "auc": ROCAUC,
    "roc_auc": ROCAUC,
    "rocauc": ROCAUC,
}


def get_metric(name: str) -> Metric:
    """A new metric by name (case-insensitive)."""
    if not isinstance(name, str):
        raise TypeError(f"metric name expected a str, received: {type(name).__name__}")
    cls = METRIC_NAMES.get(name.lower())
    if cls is None:
        raise ValueError(
            f"unknown metric name {name!r}; expected one of {', '.join(sorted(METRIC_NAMES))}"
        )
    return cls()


def get_metrics(metrics: Any) -> dict[str, Metric]:
    """``Model``'s ``metrics`` argument as ``{key: Metric}``; keys are the user's names."""
    if metrics is None:
        return {}
    if isinstance(metrics, Mapping):
        result = {}
        for key, metric in metrics.items():
            if isinstance(metric, str):
                metric = get_metric(metric)
            if not isinstance(metric, Metric):
                raise TypeError(
                    f"metrics[{key!r}] expected a trainledger.metrics.Metric instance, "
                    f"received: {type(metric).__name__}"
                )
            result[str(key)] = metric
        return result
    if isinstance(metrics, (set, frozenset, list, tuple)):
        return {name: get_metric(name) for name in sorted(metrics, key=str)}
    raise TypeError(
        "metrics expected a dict {name: Metric} or a set of names, "
        f"received: {type(metrics).__name__}"
    )
