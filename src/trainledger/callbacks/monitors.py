"""``LossMonitor`` and ``TimeMonitor``: MindSpore's console monitors."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from trainledger.run import Callback, RunContext, is_main_rank, loss_value

__all__ = ["LossMonitor", "TimeMonitor"]


class LossMonitor(Callback):
    """Print the training loss every ``per_print_times`` steps (0: never) and, inside ``fit``,
    the evaluation results at each epoch end (under torch.distributed: on rank 0 only; every
    rank still checks its own loss). A NaN or infinite loss stops training with a
    ``ValueError`` (wrapped in ``CallbackError``) naming the step, as in MindSpore.

    With ``per_print_times=1`` (MindSpore's default) every step's loss is read and checked at
    once. With more, a scalar loss tensor is kept and the kept ones are checked together at
    each print (at the latest at the epoch's end), with one device read instead of one per
    step: reading the loss costs more than the rest of this callback, and on small steps more
    than 3% of the step. Training then stops up to ``per_print_times - 1`` steps after the bad
    one; the error still names the step where the loss first went bad.

    In sink mode a "step" is one sink unit, so the loss printed is the unit's last step.
    """

    def __init__(self, per_print_times: int = 1) -> None:
        if (
            not isinstance(per_print_times, int)
            or isinstance(per_print_times, bool)
            or (per_print_times < 0)
        ):
            raise ValueError(
                f"LossMonitor per_print_times expected an int >= 0, received: {per_print_times!r}"
            )
        self._per_print_times = per_print_times
        self._last_print_step = 0
        self._counted = 0
        self._loss: float | None = None
        self._held: list[Any] = []  # scalar loss tensors not yet checked, of steps in a row
        self._held_from = 0  # self._counted of the first held one

    @property
    def last_loss(self) -> float | None:
        """The loss of the last step (read now if it was held)."""
        if self._held:
            return float(self._held[-1].item())
        return self._loss

    def on_train_begin(self, run_context: RunContext) -> None:
        self._last_print_step = run_context.original_args().get("cur_step_num") or 0
        self._held = []

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._counted = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._counted += 1
        outputs = cb_params.get("net_outputs")
        cur = cb_params.get("cur_step_num") or 0
        due = self._per_print_times and cur - self._last_print_step >= self._per_print_times
        if self._per_print_times > 1 and type(outputs) is torch.Tensor and outputs.ndim == 0:
            if not self._held:
                self._held_from = self._counted
            self._held.append(outputs)
            if not due:
                return
            self._check_held(cb_params)
        else:
            self._check_held(cb_params)
            self._loss = loss = loss_value(outputs)
            if loss is not None and (math.isnan(loss) or math.isinf(loss)):
                self._invalid(cb_params, self._counted, loss)
        if due:
            self._last_print_step = cur
            if is_main_rank():
                epoch = cb_params.get("cur_epoch_num")
                step = step_in_epoch(cb_params, self._counted)
                print(f"epoch: {epoch} step: {step}, loss is {self._loss}", flush=True)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._check_held(run_context.original_args())
        results = run_context.original_args().get("eval_results")
        if results and is_main_rank():
            epoch = run_context.original_args().get("cur_epoch_num")
            print(f"Eval result: epoch {epoch}, metrics: {results}", flush=True)

    def on_train_end(self, run_context: RunContext) -> None:
        self._check_held(run_context.original_args())

    def _check_held(self, cb_params: Any) -> None:
        """Check the held losses with one read; the last one becomes ``_loss``."""
        held, self._held = self._held, []
        if not held:
            return
        with torch.no_grad():
            values = torch.stack(held).float()
            bad = ~torch.isfinite(values)
            if bool(bad.any()):
                first = int(bad.nonzero()[0, 0])
                self._invalid(cb_params, self._held_from + first, float(values[first]))
            self._loss = float(values[-1])

    def _invalid(self, cb_params: Any, counted: int, loss: float) -> None:
        """Raise for the loss of the epoch's ``counted``-th step (held steps are all of the
        current epoch: they are checked at its end)."""
        epoch = cb_params.get("cur_epoch_num")
        step = step_in_epoch(cb_params, self._counted) - (self._counted - counted)
        raise ValueError(f"epoch: {epoch} step: {step}. Invalid loss {loss}, terminating training.")


class TimeMonitor(Callback):
    """Print each epoch's wall time and time per step (on rank 0 under torch.distributed).

    ``data_size`` is the number of steps per epoch; default: the steps the epoch really ran
    (from ``cur_step_num``), so an epoch cut short by a stop request is not under-reported.
    Measured times are kept in ``epoch_times`` and ``step_times`` (seconds).
    """

    def __init__(self, data_size: int | None = None) -> None:
        if data_size is not None and (
            not isinstance(data_size, int) or isinstance(data_size, bool) or data_size < 1
        ):
            raise ValueError(
                f"TimeMonitor data_size expected a positive int or None, received: {data_size!r}"
            )
        self.data_size = data_size
        self.epoch_times: list[float] = []
        self.step_times: list[float] = []
        self._start = 0.0
        self._steps = 0
        self._first_step = 0

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._start = time.perf_counter()
        self._first_step = run_context.original_args().get("cur_step_num") or 0

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        elapsed = time.perf_counter() - self._start
        cb_params = run_context.original_args()
        ran = (cb_params.get("cur_step_num") or 0) - self._first_step
        steps = self.data_size or ran or cb_params.get("batch_num") or 1
        per_step = elapsed / steps
        self.epoch_times.append(elapsed)
        self.step_times.append(per_step)
        if is_main_rank():
            print(
                f"epoch time: {elapsed * 1000:.3f} ms, per step time: {per_step * 1000:.3f} ms",
                flush=True,
            )


def step_in_epoch(cb_params: Any, counted: int) -> int:
    """1-based step within the epoch: from the global step when the epoch length is known,
    else the caller's own count (streams, first pass over an unsized dataset)."""
    batch_num = cb_params.get("batch_num")
    cur = cb_params.get("cur_step_num")
    if batch_num and cur:
        return int((cur - 1) % batch_num + 1)
    return counted
