"""``History``: per-epoch training loss and evaluation results, kept in memory."""

from __future__ import annotations

from typing import Any

from trainledger.run import Callback, RunContext, loss_value

__all__ = ["History"]


class History(Callback):
    """Record, at each training epoch end, ``epoch`` numbers and ``history`` lists.

    ``history["net_output"]`` is the loss of the epoch's last step (MindSpore's name);
    ``history["loss_mean"]`` the mean loss over the epoch's steps; inside ``fit``, every
    evaluation result is appended under its metric name on the epochs that evaluated (so those
    lists may be shorter than ``epoch``; ``eval_epoch`` lists which epochs they belong to).
    """

    def __init__(self) -> None:
        self.epoch: list[int] = []
        self.eval_epoch: list[int] = []
        self.history: dict[str, list[Any]] = {}
        self._sum = 0.0
        self._count = 0

    def on_train_begin(self, run_context: RunContext) -> None:
        self.epoch = []
        self.eval_epoch = []
        self.history = {}

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._sum = 0.0
        self._count = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        loss = loss_value(run_context.original_args().get("net_outputs"))
        if loss is not None:
            self._sum += loss
            self._count += 1

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        epoch = int(cb_params.get("cur_epoch_num") or len(self.epoch) + 1)
        self.epoch.append(epoch)
        last = loss_value(cb_params.get("net_outputs"))
        if last is not None:
            self.history.setdefault("net_output", []).append(last)
        if self._count:
            self.history.setdefault("loss_mean", []).append(self._sum / self._count)
        results = cb_params.get("eval_results")
        if results:
            self.eval_epoch.append(epoch)
            for name, value in results.items():
                self.history.setdefault(name, []).append(value)
