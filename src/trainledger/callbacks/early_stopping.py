"""``EarlyStopping``: stop when a monitored value stops improving (MindSpore 2.x / Keras)."""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

from trainledger.run import Callback, RunContext, monitored_value

__all__ = ["EarlyStopping"]

_MAX_HINTS = ("acc", "auc", "f1", "precision", "recall", "score")


class EarlyStopping(Callback):
    """Request a stop after ``patience`` epochs without an improvement of ``min_delta``.

    Args:
        monitor: "loss" (the training loss of the epoch's last step), or a key of ``fit``'s
            ``cb_params.eval_results``; "eval_<name>" also matches the result ``<name>``
            (MindSpore's default "eval_loss" therefore reads the "loss" metric).
        min_delta: the smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        mode: "min", "max" or "auto" (max for accuracy-like names, else min).
        baseline: stop if the value does not beat this within ``patience`` epochs.
        restore_best_weights: when stopping, load the best epoch's weights back into
            ``cb_params.train_network`` (weights are copied in memory at every improvement).
    """

    def __init__(
        self,
        monitor: str = "eval_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: bool = False,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ) -> None:
        if not isinstance(monitor, str) or not monitor:
            raise ValueError(f"EarlyStopping monitor expected a metric name, received: {monitor!r}")
        if not isinstance(patience, int) or isinstance(patience, bool) or patience < 0:
            raise ValueError(f"EarlyStopping patience expected an int >= 0, received: {patience!r}")
        if mode not in ("auto", "min", "max"):
            raise ValueError(
                f"EarlyStopping mode expected 'auto', 'min' or 'max', received: {mode!r}"
            )
        if not isinstance(min_delta, (int, float)):
            raise ValueError(f"EarlyStopping min_delta expected a number, received: {min_delta!r}")
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        if mode == "auto":
            mode = "max" if any(h in monitor.lower() for h in _MAX_HINTS) else "min"
        self.mode = mode
        self._reset()

    def _reset(self) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best: float = math.inf if self.mode == "min" else -math.inf
        if self.baseline is not None:
            self.best = float(self.baseline)
        self.best_epoch = 0
        self.best_weights: dict[str, Any] | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()

    def _improved(self, value: float) -> bool:
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def monitor_value(self, cb_params: Any) -> float | None:
        """The monitored value in this epoch's cb_params (``run.monitored_value``), or None
        when absent."""
        return monitored_value(
            self.monitor, cb_params.get("eval_results"), cb_params.get("net_outputs")
        )

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        value = self.monitor_value(cb_params)
        if value is None:
            if cb_params.get("eval_results") or self.monitor == "loss":
                available = sorted(cb_params.get("eval_results") or {})
                warnings.warn(
                    f"EarlyStopping: monitor {self.monitor!r} not found; available: {available}",
                    stacklevel=2,
                )
            return  # an epoch without evaluation: nothing to compare
        epoch = int(cb_params.get("cur_epoch_num") or 0)
        if self._improved(value):
            self.best = value
            self.best_epoch = epoch
            self.wait = 0
            network = _network(cb_params)
            if self.restore_best_weights and network is not None:
                self.best_weights = copy.deepcopy(network.state_dict())
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            run_context.request_stop()
            network = _network(cb_params)
            if self.restore_best_weights and self.best_weights is not None and network is not None:
                network.load_state_dict(self.best_weights)

    def on_train_end(self, run_context: RunContext) -> None:
        if self.stopped_epoch and self.verbose:
            print(
                f"Epoch {self.stopped_epoch}: early stopping; best {self.monitor} "
                f"{self.best:.6g} at epoch {self.best_epoch}",
                flush=True,
            )


def _network(cb_params: Any) -> Any:
    """The trained network of the run, or None for a host that does not expose one."""
    network = cb_params.get("train_network") or cb_params.get("network")
    return network if hasattr(network, "state_dict") else None
