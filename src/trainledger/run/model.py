"""``Model``: MindSpore's high-level training host, for ``torch.nn.Module`` networks.

The loop is short on purpose: every run- and epoch-level phase goes through
``CallbackManager.phase`` (which guarantees the matching ``*_end`` hook), and the steps of an
epoch are ``StepLoop``'s (``run/steploop.py``: the inline CPU step, step hooks, stop requests),
given this model's ``TrainStep`` (``run/step.py``: device placement to optimizer update).
``RecModel`` (online training) reuses these protected building blocks:

* ``_build_train_params(...) -> CallbackParams``: every cb_params field of a training run.
* ``_make_manager(callbacks) -> CallbackManager``: validated callbacks + registered defaults.
* ``_step_loop(manager, run_context) -> StepLoop``: the run's step loop.
* ``_phase(manager, run_context, begin, end)``: the phase wrapper.
* ``_stop_signals(run_context)``: SIGINT/SIGTERM -> ``request_stop("signal")`` (main thread).
* ``_finish_train(cb_params, run_context)``: sets ``stop_reason`` before ``on_train_end``.

Sink mode: this host has no device-side data sink. ``dataset_sink_mode=True`` keeps
MindSpore's observable contract instead: an "epoch" is ``sink_size`` steps (the whole dataset
when ``sink_size=-1``, the iterator continuing across epochs otherwise) and the step hooks fire
once per epoch, with ``cur_step_num`` advanced by the number of steps run. Users turn it on to
cut callback overhead on tiny steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

import torch

from trainledger.run.arguments import (
    check_frequency,
    check_loss_scale_args,
    check_model_args,
    check_train_args,
)
from trainledger.run.batches import (
    check_dataset,
    dataset_len,
)
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.run.callback_manager import CallbackManager, as_callback_list
from trainledger.run.defaults import default_callbacks
from trainledger.run.distributed import is_distributed, rank_and_world
from trainledger.run.evaluation import Evaluator
from trainledger.run.loss_scale import LossScaleManager
from trainledger.run.metric_base import Metric
from trainledger.run.metrics import get_metrics
from trainledger.run.signals import stop_on_signals
from trainledger.run.step import TrainStep
from trainledger.run.steploop import Cycle, StepLoop

__all__ = ["Model"]


class Model:
    """Train, evaluate and predict with a ``torch.nn.Module`` and callbacks.

    Args:
        network: the network. With ``loss_fn`` it maps inputs to predictions; without it, it
            returns its loss (a tensor, a tuple with the loss first, or a dict with "loss").
        loss_fn: ``loss_fn(predictions, label) -> loss``; batches are then ``(inputs..., label)``.
        optimizer: a torch optimizer. May be None only when the network updates its own
            parameters (MindSpore's TrainOneStepCell): it has an ``optimizer`` attribute or
            ``steps_itself = True``; then ``network(*batch)`` is one whole training step.
        metrics: ``{name: Metric}`` or a set of names ("accuracy", "loss", "precision",
            "recall", "f1", "mae", "mse", "auc", case-insensitive); results use the same keys.
        eval_network, eval_indexes: a network whose output tuple holds (loss, predictions,
            label) at these three positions, as in MindSpore.
        amp_level: "O0" (off), "O1"/"O2"/"O3"/"auto": ``torch.autocast`` (see ``run/amp.py``).
        boost_level: accepted for MindSpore compatibility; a no-op on this host.
        loss_scale_manager: a ``FixedLossScaleManager`` or ``DynamicLossScaleManager``
            (``run/loss_scale.py``): the loss is scaled, overflowed steps are skipped, and
            ``net_outputs`` is ``(loss, overflow, loss_scale)``, as in MindSpore. Needs an
            optimizer.
        keep_batchnorm_fp32: MindSpore's; accepted (a bool): parameters, batch norm's
            included, always stay float32 under ``torch.autocast``.

    ``train``/``fit`` add a ``ProgressBar`` when stdout is a terminal and no ProgressBar was
    passed; set ``model.show_progress = False`` (or the class attribute) to turn that off.
    """

    show_progress: bool = True

    def __init__(
        self,
        network: torch.nn.Module,
        loss_fn: Any = None,
        optimizer: Any = None,
        metrics: Any = None,
        eval_network: torch.nn.Module | None = None,
        eval_indexes: list[int] | None = None,
        amp_level: str = "O0",
        boost_level: str = "O0",
        *,
        loss_scale_manager: LossScaleManager | None = None,
        keep_batchnorm_fp32: bool | None = None,
    ) -> None:
        check_model_args(network, loss_fn, optimizer, eval_network, eval_indexes, boost_level)
        check_loss_scale_args(loss_scale_manager, keep_batchnorm_fp32, optimizer)
        self._network = network
        self._train_network = network
        self._eval_network = eval_network if eval_network is not None else network
        self._predict_network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._metrics: dict[str, Metric] = get_metrics(metrics)
        self._eval_indexes = list(eval_indexes) if eval_indexes is not None else None
        self._amp_level = amp_level
        self._boost_level = boost_level
        self._steps_itself = (
            optimizer is None
            and loss_fn is None
            and (
                bool(getattr(network, "steps_itself", False))
                or getattr(network, "optimizer", None) is not None
            )
        )
        self._step = TrainStep(
            network, loss_fn, optimizer, amp_level, loss_scale_manager, self._steps_itself
        )
        self._evaluator = Evaluator(self._eval_network, loss_fn, self._metrics, self._eval_indexes)

    # --- public properties (MindSpore names) ---------------------------------------------
    @property
    def train_network(self) -> torch.nn.Module:
        return self._train_network

    @property
    def eval_network(self) -> torch.nn.Module:
        return self._eval_network

    @property
    def predict_network(self) -> torch.nn.Module:
        return self._predict_network

    @property
    def loss_fn(self) -> Any:
        return self._loss_fn

    @property
    def metrics(self) -> dict[str, Metric]:
        return dict(self._metrics)

    # --- public API ----------------------------------------------------------------------
    def train(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        callbacks: Callback | Iterable[Callback] | None = None,
        dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train for epochs ``initial_epoch + 1 .. epoch`` (``epoch`` is the total)."""
        self._run_train(
            epoch, train_dataset, callbacks, dataset_sink_mode, sink_size, initial_epoch, None
        )

    def fit(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        valid_dataset: Iterable[Any] | None = None,
        valid_frequency: int | list[int] = 1,
        callbacks: Callback | Iterable[Callback] | None = None,
        dataset_sink_mode: bool = False,
        valid_dataset_sink_mode: bool = False,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train, evaluating on ``valid_dataset`` every ``valid_frequency`` epochs (an int) or
        at the listed epochs (a list). Evaluation runs before ``on_train_epoch_end``, whose
        ``cb_params.eval_results`` then holds ``{metric: value}`` ({} on other epochs)."""
        valid = None
        if valid_dataset is not None:
            self._require_metrics("fit")
            check_frequency(valid_frequency)
            check_dataset(valid_dataset, "valid_dataset", 2)
            valid = (valid_dataset, valid_frequency, bool(valid_dataset_sink_mode))
        self._run_train(
            epoch, train_dataset, callbacks, dataset_sink_mode, sink_size, initial_epoch, valid
        )

    def eval(
        self,
        valid_dataset: Iterable[Any],
        callbacks: Callback | Iterable[Callback] | None = None,
        dataset_sink_mode: bool = False,
    ) -> dict[str, Any]:
        """Evaluate the metrics over one pass of ``valid_dataset``; returns ``{name: value}``.

        With ``dataset_sink_mode`` the eval step hooks fire once for the whole pass. Stop
        requests are ignored: an evaluation is always complete."""
        self._require_metrics("eval")
        check_dataset(valid_dataset, "valid_dataset", 1)
        manager = self._make_manager(callbacks, training=False)
        cb_params = CallbackParams(
            network=self._network, list_callback=manager.callbacks, exception=None
        )
        run_context = RunContext(cb_params)
        with manager:
            self._step.prepare()
            return self._evaluator.run(
                valid_dataset,
                manager,
                run_context,
                bool(dataset_sink_mode),
                self._step.move,
                self._step.amp,
            )

    def predict(self, *inputs: Any) -> Any:
        """The predict network's output for ``inputs`` (moved to its device), without grad."""
        net = self._predict_network
        was_training = net.training
        net.eval()
        try:
            with torch.no_grad(), self._step.amp.autocast():
                return net(*self._step.move(inputs))
        finally:
            net.train(was_training)

    # --- the training loop -----------------------------------------------------------------
    def _run_train(
        self,
        epoch: int,
        train_dataset: Iterable[Any],
        callbacks: Callback | Iterable[Callback] | None,
        dataset_sink_mode: bool,
        sink_size: int,
        initial_epoch: int,
        valid: tuple[Iterable[Any], int | list[int], bool] | None,
    ) -> None:
        check_train_args(epoch, initial_epoch, sink_size)
        self._check_can_train()
        sink = bool(dataset_sink_mode)
        passes = 1 if sink and sink_size > 0 else epoch - initial_epoch
        check_dataset(train_dataset, "train_dataset", passes)
        manager = self._make_manager(callbacks)
        batch_num = sink_size if sink and sink_size > 0 else dataset_len(train_dataset)
        cb_params = self._build_train_params(
            train_dataset=train_dataset,
            epoch_num=epoch,
            batch_num=batch_num,
            list_callback=manager.callbacks,
            initial_epoch=initial_epoch,
            dataset_sink_mode=sink,
            sink_size=sink_size,
        )
        if valid is not None:
            cb_params.eval_results = {}
        run_context = RunContext(cb_params)
        self._step.prepare()
        self._train_network.train()
        source = Cycle(train_dataset) if sink and sink_size > 0 else None
        loop = self._step_loop(manager, run_context)
        with self._stop_signals(run_context), manager:
            with self._phase(manager, run_context, "on_train_begin", "on_train_end"):
                for ep in range(initial_epoch, epoch):
                    cb_params.cur_epoch_num = ep + 1
                    with self._phase(
                        manager, run_context, "on_train_epoch_begin", "on_train_epoch_end"
                    ):
                        if sink:
                            loop.run_sink_unit(source or train_dataset)
                        else:
                            loop.run_epoch(train_dataset)
                        if valid is not None and _should_eval(ep + 1, valid[1], run_context):
                            self._step.prepare()
                            self._evaluator.run_in_fit(
                                valid[0],
                                manager,
                                run_context,
                                valid[2],
                                self._step.move,
                                self._step.amp,
                            )
                    if valid is not None:
                        cb_params.eval_results = {}
                    if loop.epoch_stop():
                        break
                self._finish_train(cb_params, run_context)

    def _finish_train(self, cb_params: CallbackParams, run_context: RunContext) -> None:
        """Record why training ended, before ``on_train_end`` runs."""
        cb_params.stop_reason = run_context.stop_reason or "completed"

    # --- protected building blocks (reused by RecModel) ----------------------------------
    def _build_train_params(
        self,
        *,
        train_dataset: Any,
        epoch_num: int | None,
        batch_num: int | None,
        list_callback: list[Callback],
        initial_epoch: int = 0,
        dataset_sink_mode: bool = False,
        sink_size: int = -1,
    ) -> CallbackParams:
        """Every cb_params field of a training run (see the README's cb_params table)."""
        rank, world = rank_and_world()
        return CallbackParams(
            train_network=self._train_network,
            network=self._network,
            optimizer=self._optimizer
            if self._optimizer is not None
            else getattr(self._network, "optimizer", None),
            loss_fn=self._loss_fn,
            epoch_num=epoch_num,
            cur_epoch_num=initial_epoch,
            cur_step_num=initial_epoch * batch_num if batch_num else 0,
            batch_num=batch_num,
            net_outputs=None,
            train_dataset=train_dataset,
            train_dataset_element=None,
            list_callback=list_callback,
            parallel_mode="data_parallel" if is_distributed() else "stand_alone",
            device_number=world,
            rank=rank,
            mode="train",
            dataset_sink_mode=dataset_sink_mode,
            sink_size=sink_size,
            initial_epoch=initial_epoch,
            last_save_ckpt_step=0,
            latest_ckpt_file=None,
            amp_level=self._amp_level,
            loss_readout=None,
            exception=None,
            stop_reason=None,
        )

    def _make_manager(
        self, callbacks: Callback | Iterable[Callback] | None, training: bool = True
    ) -> CallbackManager:
        """Validated callbacks, plus for training the registered defaults (``run.defaults``: a
        ``ProgressBar`` on a terminal, unless ``show_progress`` is False); training is
        collective (every rank ends it together, ``CallbackManager``), an evaluation is not."""
        cbs = as_callback_list(callbacks)
        if training and self.show_progress:
            cbs.extend(default_callbacks(cbs))
        return CallbackManager(cbs, collective=training)

    def _step_loop(self, manager: CallbackManager, run_context: RunContext) -> StepLoop:
        """The run's step loop around this model's step."""
        return StepLoop(manager, run_context, self._step)

    def _phase(
        self, manager: CallbackManager, run_context: RunContext, begin: str, end: str
    ) -> AbstractContextManager[None]:
        """The phase wrapper: ``begin`` hooks, body, ``end`` hooks even when the body fails."""
        return manager.phase(run_context, begin, end)

    def _stop_signals(self, run_context: RunContext) -> AbstractContextManager[bool]:
        """SIGINT/SIGTERM -> ``request_stop("signal")``; a no-op off the main thread."""
        return stop_on_signals(run_context)

    def _check_can_train(self) -> None:
        if self._optimizer is None and not self._steps_itself:
            raise ValueError(
                "Model.train expected an optimizer, or a network that updates its own "
                "parameters (with an `optimizer` attribute or `steps_itself = True`), "
                "received: optimizer=None"
            )

    def _require_metrics(self, what: str) -> None:
        if not self._metrics:
            raise ValueError(
                f"Model.{what} expected metrics (a dict or a set of names) given to Model, "
                "received: none"
            )


def _should_eval(epoch: int, freq: int | list[int], run_context: RunContext) -> bool:
    if run_context.stop_reason == "signal" and not is_distributed():
        # the user asked to stop now; evaluation could take long. Not under a process group:
        # the signal may not have reached every rank yet, and evaluation has collectives
        return False
    return epoch in freq if isinstance(freq, list) else epoch % freq == 0
