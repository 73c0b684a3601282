"""``StepLoop``: the training steps of one run, shared by ``Model`` and ``RecModel``.

The host builds one per run around its ``TrainStep`` (``run/step.py``): ``move`` (a batch
onto the network's device), ``run`` (one optimisation step, returning ``net_outputs``),
``inline_parts`` (the network, loss_fn and optimizer of a plain step the loop may run inline,
or None when it may not: amp, a GPU, a first batch not yet checked) and ``device``. The loop
owns what happens around the step: the step hooks, cb_params' step fields, the loss readout
off the CPU and the stop requests.

Speed: ``run_epoch`` runs a CPU ``(x, y)`` batch (or a ``DataLoader``'s ``[x, y]``) of a plain
``loss_fn(network(x), y)`` step inline, as a hand-written loop would (the 3% overhead target;
Python code between torch ops runs with cold caches, so every call counts), and calls the
``on_train_step_end`` functions itself, inline (``CallbackManager.functions``/``failed_in``):
two frames less than ``call_all``. An inline step reads its loss itself when a callback names
the steps it needs (``Callback.next_step_end``: ``LossMonitor``'s prints) and calls that
callback's hook only at those steps and at a loss that is not a finite float: calling the hook
at every step, where it reads the loss itself, measured about 1 µs a step more.

An inline step sets ``net_outputs`` right after its forward, not after ``step()``: freeing the
last step's loss and graph during the new backward cost 2.5 µs a step more than where a hand
loop does it (at ``loss =``). So a step that fails in backward leaves its own loss there, as
the loop without hooks records it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from math import inf
from typing import Any, Protocol

import torch

from trainledger.errors import DatasetError
from trainledger.run.callback import RunContext
from trainledger.run.callback_manager import CallbackManager
from trainledger.run.distributed import STOP_SYNC_STEPS, agree_stop, is_distributed
from trainledger.run.loss_readout import LossReadout
from trainledger.run.step import InlineParts

__all__ = ["Cycle", "Step", "StepLoop", "set_sampler_epoch"]


class Step(Protocol):
    """What the loop needs of a step (``TrainStep``, or a test's stand-in)."""

    @property
    def device(self) -> torch.device | None: ...

    def move(self, batch: Any) -> Any: ...

    def run(self, batch: Any) -> Any: ...

    def inline_parts(self) -> InlineParts | None: ...


_NO_PARTS: Any = (None, None, None)  # until the run's first batch was checked
_PAIRS = (tuple, list)  # an (x, y) batch, or a DataLoader's [x, y], may be a plain step


class StepLoop:
    """Step hooks, step fields and stop handling around ``train_step`` for one run."""

    def __init__(
        self,
        manager: CallbackManager,
        run_context: RunContext,
        step: Step,
    ) -> None:
        self.manager = manager
        self.run_context = run_context
        self.cb_params = run_context.original_args()
        self.move = step.move
        self.train_step = step.run
        self.inline_parts = step.inline_parts
        device = step.device
        self.hooks_begin = manager.has("on_train_step_begin")
        self.hooks_end = manager.has("on_train_step_end")
        # off the CPU, step-end hooks read the loss through a readout that never stalls the
        # device (run/loss_readout.py); cb_params.loss_readout is None on the CPU
        self.readout = LossReadout.for_device(device) if device and self.hooks_end else None
        self.cb_params["loss_readout"] = self.readout
        self._sink = bool(self.cb_params.get("dataset_sink_mode"))
        self._unit_steps = 0  # steps of the current sink unit (their numbers, for the readout)
        # a failing hook ends the run, so the list of functions to call never shrinks during it
        self._end_fns = manager.functions("on_train_step_end")
        self._lean_fns, self._named = manager.step_end_schedule()  # see the module docstring
        if not self._named:
            self._lean_fns = self._end_fns
        # under torch.distributed a stop takes effect on every rank at the same step: ranks
        # agree every STOP_SYNC_STEPS steps (and at epoch ends), not at every step
        self.distributed = is_distributed()
        self._since_sync = 0
        if self.distributed:
            self.stop_requested = self._agreed_stop  # type: ignore[method-assign]

    # --- the pieces RecModel's online loop composes ----------------------------------------
    def step_begin(self) -> None:
        """``on_train_step_begin`` on every callback that has it."""
        self._unit_steps = 0
        if self.hooks_begin:
            self.manager.call("on_train_step_begin", self.run_context)

    def step_end(self) -> None:
        """``on_train_step_end`` on every callback (not yet failed) that has it; a failure
        still lets the later callbacks have the hook, then raises ``CallbackError``."""
        if not self.hooks_end:
            return
        manager, run_context = self.manager, self.run_context
        for fn in self._end_fns:
            try:
                fn(run_context)
            except Exception as exc:
                manager.failed_in("on_train_step_end", fn, exc, run_context)

    def step(self, batch: Any) -> Any:
        """Move ``batch``, record it as ``train_dataset_element``, train on it, record and
        return ``net_outputs``."""
        cb_params = self.cb_params
        batch = self.move(batch)
        cb_params["train_dataset_element"] = batch
        cb_params["net_outputs"] = outputs = self.train_step(batch)
        if self.readout is not None:  # a sink unit counts its steps after its last one
            self._unit_steps += 1
            step = cb_params["cur_step_num"] + (self._unit_steps if self._sink else 0)
            self.readout.push(step, outputs)
        return outputs

    def stop_requested(self) -> bool:
        """Whether to stop after this step (under a process group: whether the ranks agreed
        to, checked every ``STOP_SYNC_STEPS`` calls)."""
        return self.run_context.get_stop_requested()

    def _agreed_stop(self) -> bool:
        self._since_sync += 1
        if self._since_sync < STOP_SYNC_STEPS:
            return False
        self._since_sync = 0
        return agree_stop(self.run_context)

    def _next_due(self) -> float:
        """The first step at which a callback that names its steps needs its hook (-inf: none
        names them)."""
        return min((cb.next_step_end or 0 for cb in self._named), default=-inf)

    def epoch_stop(self) -> bool:
        """At an epoch end: whether to stop (the ranks agree: one collective per epoch)."""
        if self.distributed:
            self._since_sync = 0
            return agree_stop(self.run_context)
        return self.run_context.get_stop_requested()

    # --- Model's epoch and sink unit -------------------------------------------------------
    def run_epoch(self, dataset: Iterable[Any]) -> None:
        """One pass over ``dataset`` (a stop request ends it after the step); step fields are
        current at each step when hooked (hooks, ``watches_steps``), else written at the end."""
        cb_params, run_context = self.cb_params, self.run_context
        set_sampler_epoch(dataset, cb_params.cur_epoch_num - 1)
        self._since_sync = 0
        begin, end = self.hooks_begin, self.hooks_end
        hooked = begin or end or self.manager.watches_steps
        call, end_fns, lean_fns = self.manager.call, self._end_fns, self._lean_fns
        due = self._next_due()  # -inf when no callback names its steps (lean_fns is end_fns)
        move, train_step, inline_parts = self.move, self.train_step, self.inline_parts
        # the readout is not None only off the CPU, where no step is inline
        distributed, agreed_stop, readout = self.distributed, self.stop_requested, self.readout
        parts = inline_parts()
        network, loss_fn, optimizer = parts or _NO_PARTS
        started = 0  # steps begun: one that raised counts, in both loops
        batch: Any = None
        outputs: Any = cb_params["net_outputs"]
        try:
            for batch in dataset:
                if parts is not None and type(batch) in _PAIRS and len(batch) == 2:
                    x, y = batch
                    try:  # tensors on the CPU (a subclass too: the step treats it alike)
                        plain = x.is_cpu and y.is_cpu
                    except AttributeError:  # numpy arrays, lists: moved to tensors below
                        plain = False
                else:
                    plain = False
                if not plain:
                    batch = move(batch)
                started += 1
                if hooked:
                    # item access, not attributes: CallbackParams.__getattr__ is Python-level
                    cb_params["train_dataset_element"] = batch
                    cb_params["cur_step_num"] += 1
                    if begin:
                        call("on_train_step_begin", run_context)
                if plain:
                    optimizer.zero_grad()  # no arguments, as in TrainStep.run
                    outputs = loss_fn(network(x), y)
                    if hooked:  # here, where a hand loop drops its last loss: see the docstring
                        cb_params["net_outputs"] = outputs
                    outputs.backward()
                    optimizer.step()
                else:
                    outputs = train_step(batch)
                    if parts is None and (parts := inline_parts()) is not None:  # now checked
                        network, loss_fn, optimizer = parts
                    if hooked:
                        cb_params["net_outputs"] = outputs
                        if readout is not None:
                            readout.push(cb_params["cur_step_num"], outputs)
                if end:  # step_end's loop, inline: one Python frame less per step
                    fns = end_fns  # or, before a named step, at a finite loss: the others'
                    if plain and lean_fns is not end_fns and cb_params["cur_step_num"] < due:
                        loss = outputs.tolist()
                        if type(loss) is float and -inf < loss < inf:
                            fns = lean_fns
                    try:
                        for fn in fns:
                            fn(run_context)
                    except Exception as exc:
                        self.manager.failed_in("on_train_step_end", fn, exc, run_context)
                    if fns is not lean_fns and plain:  # a named step's hooks ran
                        due = self._next_due()
                # under a process group the ranks agree every STOP_SYNC_STEPS steps; else the flag
                # (read as an attribute: see RunContext.__init__, run/callback.py)
                if agreed_stop() if distributed else run_context._stop_requested:
                    break
            else:
                if cb_params.batch_num is None:
                    cb_params.batch_num = started  # learnt from the first full pass
        finally:
            if not hooked:  # as the hooked loop leaves them
                cb_params["cur_step_num"] += started
                if started:
                    cb_params["train_dataset_element"] = batch
                    cb_params["net_outputs"] = outputs
        if started == 0:
            raise _no_batches(cb_params)

    def run_sink_unit(self, source: Iterable[Any] | Cycle) -> None:
        """One sink "epoch": ``sink_size`` steps (or a whole pass) between one pair of step
        hooks; only a signal cuts it short."""
        cb_params, run_context = self.cb_params, self.run_context
        self._unit_steps = 0
        self.manager.call("on_train_step_begin", run_context)
        steps = 0
        limit = cb_params.sink_size if cb_params.sink_size > 0 else None
        if not isinstance(source, Cycle):  # a whole pass per sink unit: a new epoch's order
            set_sampler_epoch(source, cb_params.cur_epoch_num - 1)
        batches = source.take(limit) if isinstance(source, Cycle) else iter(source)
        for batch in batches:
            self.step(batch)
            steps += 1
            if run_context.stop_reason == "signal" and not self.distributed:
                break  # under a process group the ranks agree at the unit's end instead
        if steps == 0:
            raise _no_batches(cb_params)
        if cb_params.batch_num is None:
            cb_params.batch_num = steps
        cb_params.cur_step_num += steps
        self.manager.call_all("on_train_step_end", run_context)


class Cycle:
    """A dataset iterated across epochs: sink units continue where the last one stopped."""

    def __init__(self, dataset: Iterable[Any]) -> None:
        self._dataset = dataset
        self._it: Iterator[Any] = iter(dataset)

    def take(self, n: int | None) -> Iterator[Any]:
        count = 0
        fresh = False
        while n is None or count < n:
            try:
                batch = next(self._it)
            except StopIteration:
                if fresh or n is None:
                    return
                self._it = iter(self._dataset)
                fresh = True
                continue
            fresh = False
            count += 1
            yield batch


def _no_batches(cb_params: Any) -> DatasetError:
    return DatasetError(f"train_dataset yielded no batches in epoch {cb_params.cur_epoch_num}")


def set_sampler_epoch(dataset: Iterable[Any], epoch: int) -> None:
    """Reshuffle a ``DistributedSampler`` per epoch, as every torch DDP loop must (0-based)."""
    sampler = getattr(dataset, "sampler", None)
    set_epoch = getattr(sampler, "set_epoch", None)
    if callable(set_epoch):
        set_epoch(epoch)
