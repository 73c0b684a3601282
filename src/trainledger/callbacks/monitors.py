"""``LossMonitor`` and ``TimeMonitor``: MindSpore's console monitors."""

from __future__ import annotations

import time
from math import inf, isfinite
from typing import Any

from trainledger.run import Callback, LossReadout, RunContext, is_main_rank, loss_value

__all__ = ["LossMonitor", "TimeMonitor"]


class LossMonitor(Callback):
    """Print the training loss every ``per_print_times`` steps (0: never) and, inside ``fit``,
    the evaluation results at each epoch end (under torch.distributed: on rank 0 only; every
    rank still checks its own loss). A NaN or infinite loss stops training with a
    ``ValueError`` (wrapped in ``CallbackError``), as in MindSpore.

    In sink mode a "step" is one sink unit, so the loss printed is the unit's last step.

    Off the CPU the loss is read through ``cb_params.loss_readout`` (``run/loss_readout.py``),
    which never stalls the device: the check runs up to ``LAG`` (2) steps after the step, and
    the error names the step whose loss was not finite; a print reads its step's loss at once.
    MindSpore reads every loss at its own step, which is what a CPU run still does.
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
        self._next_print: float = per_print_times or inf  # the step at which to print next
        self._epoch_first_step = 0  # cur_step_num before the epoch's first step
        self._context: RunContext | None = None  # the run whose cb_params are _params
        self._params: Any = None
        self._readout: LossReadout | None = None  # a device run's losses (None on the CPU)

    @property
    def next_step_end(self) -> float | None:
        """The step of the next print: at the others a loop that reads the loss itself may
        skip the hook while the loss is finite (``Callback.next_step_end``). None for a
        subclass with its own step hook, which expects every step."""
        if type(self).on_train_step_end is not LossMonitor.on_train_step_end:
            return None
        return self._next_print

    @property
    def last_loss(self) -> float | None:
        """The loss of the last step of the run it follows (None before its first step)."""
        params = self._params
        if self._readout is not None and params is not None:
            return self._readout.value_at(params.get("cur_step_num") or 0)
        return None if params is None else loss_value(params.get("net_outputs"))

    def on_train_begin(self, run_context: RunContext) -> None:
        self._context, self._params = run_context, run_context.original_args()
        self._readout = self._params.get("loss_readout")
        start = self._params.get("cur_step_num") or 0
        self._next_print = start + self._per_print_times if self._per_print_times else inf

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._epoch_first_step = run_context.original_args().get("cur_step_num") or 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        # Every step, between torch ops that leave the CPU caches cold: each Python operation
        # here costs several times what it does in a hot loop, so the common path (a 0-d float
        # tensor) is a read, a check and a compare; the step in the epoch is worked out only to
        # print or raise. tolist() rather than item(): the same float, and about 0.5 µs less
        # a step (item() releases and retakes the GIL).
        if run_context is not self._context:
            self._context, self._params = run_context, run_context.original_args()
            self._readout = self._params.get("loss_readout")
        cb_params = self._params
        if self._readout is not None:
            self._device_step(cb_params, self._readout)
            return
        try:  # item access: the host always sets both fields (.get would cost a method call)
            outputs: Any = cb_params["net_outputs"]
            cur = cb_params["cur_step_num"] or 0
            loss = outputs.tolist()
        except Exception:  # a field missing, or outputs that are not a tensor or an array
            outputs, cur = cb_params.get("net_outputs"), cb_params.get("cur_step_num") or 0
            loss = None
        if type(loss) is not float:
            loss = loss_value(outputs)  # tuples, dicts, numbers, several values, int tensors
        if loss is not None and not isfinite(loss):
            raise ValueError(
                f"epoch: {cb_params.get('cur_epoch_num')} step: {self._step(cb_params)}. "
                f"Invalid loss {loss}, terminating training."
            )
        if cur >= self._next_print:
            self._next_print = cur + self._per_print_times
            if is_main_rank():
                epoch = cb_params.get("cur_epoch_num")
                print(f"epoch: {epoch} step: {self._step(cb_params)}, loss is {loss}", flush=True)

    def _device_step(self, cb_params: Any, readout: LossReadout) -> None:
        """A step of a device run: the lagged check, and a print when one is due."""
        cur = cb_params["cur_step_num"] or 0
        due = cur >= self._next_print
        if due:
            readout.read_all()  # the print needs this step's loss now
        self._check_readout(cb_params, readout)
        if due:
            self._next_print = cur + self._per_print_times
            if is_main_rank():
                loss = readout.value_at(cur)
                epoch = cb_params.get("cur_epoch_num")
                print(f"epoch: {epoch} step: {self._step(cb_params)}, loss is {loss}", flush=True)

    def _check_readout(self, cb_params: Any, readout: LossReadout) -> None:
        """Raise, naming its step, when a loss read so far was not finite."""
        bad = readout.first_nonfinite
        if bad is not None:
            step, loss = bad
            counted = step - self._epoch_first_step
            raise ValueError(
                f"epoch: {cb_params.get('cur_epoch_num')} step: "
                f"{step_in_epoch(cb_params, counted, step)}. "
                f"Invalid loss {loss}, terminating training."
            )

    def _step(self, cb_params: Any) -> int:
        cur = cb_params.get("cur_step_num") or 0
        return step_in_epoch(cb_params, cur - self._epoch_first_step)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        readout = cb_params.get("loss_readout")
        if readout is not None:  # the epoch's last steps are checked within their epoch
            readout.read_all()
            self._check_readout(cb_params, readout)
        results = run_context.original_args().get("eval_results")
        if results and is_main_rank():
            epoch = run_context.original_args().get("cur_epoch_num")
            print(f"Eval result: epoch {epoch}, metrics: {results}", flush=True)


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


def step_in_epoch(cb_params: Any, counted: int, cur: int | None = None) -> int:
    """1-based step within the epoch of global step ``cur`` (default: the current step): from
    the global step when the epoch length is known, else the caller's own count (streams,
    first pass over an unsized dataset)."""
    batch_num = cb_params.get("batch_num")
    if cur is None:
        cur = cb_params.get("cur_step_num")
    if batch_num and cur:
        return int((cur - 1) % batch_num + 1)
    return counted
