"""Evaluation half of ``Model``: ``eval`` and the evaluation inside ``fit``.

A mixin so that ``model.py`` stays readable; it uses ``Model``'s attributes and protected
methods (declared below for type checkers) and is not meant to be used alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

import torch

from trainledger.errors import DatasetError
from trainledger.run.amp import AmpPolicy
from trainledger.run.batches import call_network, check_dataset, dataset_len, split_batch
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.run.callback_manager import CallbackManager
from trainledger.run.metrics import Metric

__all__ = ["EvalMixin"]


class EvalMixin:
    """``eval`` and the evaluation steps; mixed into ``Model``."""

    _network: torch.nn.Module
    _eval_network: torch.nn.Module
    _loss_fn: Any
    _metrics: dict[str, Metric]
    _eval_indexes: list[int] | None
    _amp: AmpPolicy
    _check_next_batch: bool

    def _make_manager(
        self, callbacks: Callback | Iterable[Callback] | None, progress: bool = True
    ) -> CallbackManager:
        raise NotImplementedError

    def _phase(
        self, manager: CallbackManager, run_context: RunContext, begin: str, end: str
    ) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _prepare_run(self) -> None:
        raise NotImplementedError

    def _move_to_device(self, batch: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def _checked(fn: Any, batch: Any) -> Any:
        raise NotImplementedError

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
        manager = self._make_manager(callbacks, progress=False)
        cb_params = CallbackParams(
            network=self._network, list_callback=manager.callbacks, exception=None
        )
        run_context = RunContext(cb_params)
        with manager:
            return self._run_eval(valid_dataset, manager, run_context, bool(dataset_sink_mode))

    def _run_eval(
        self,
        valid_dataset: Iterable[Any],
        manager: CallbackManager,
        run_context: RunContext,
        sink: bool,
    ) -> dict[str, Any]:
        cb_params = run_context.original_args()
        cb_params.eval_network = self._eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = dataset_len(valid_dataset)
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        cb_params.net_outputs = None
        cb_params.metrics = {}
        for metric in self._metrics.values():
            metric.clear()
        self._prepare_run()
        net = self._eval_network
        was_training = net.training
        net.eval()
        step_hooks = not sink and (
            manager.has("on_eval_step_begin") or manager.has("on_eval_step_end")
        )
        try:
            with torch.no_grad(), self._phase(manager, run_context, "on_eval_begin", "on_eval_end"):
                with self._phase(manager, run_context, "on_eval_epoch_begin", "on_eval_epoch_end"):
                    if sink:
                        manager.call("on_eval_step_begin", run_context)
                    for batch in valid_dataset:
                        batch = self._move_to_device(batch)
                        cb_params.cur_step_num += 1
                        if step_hooks:
                            manager.call("on_eval_step_begin", run_context)
                        cb_params.net_outputs = self._eval_step(batch)
                        if step_hooks:
                            manager.call_all("on_eval_step_end", run_context)
                    if cb_params.cur_step_num == 0:
                        raise DatasetError("valid_dataset yielded no batches")
                    if cb_params.batch_num is None:
                        cb_params.batch_num = cb_params.cur_step_num
                    if sink:
                        manager.call_all("on_eval_step_end", run_context)
                results = {name: metric.eval() for name, metric in self._metrics.items()}
                cb_params.metrics = results
        finally:
            net.train(was_training)
        return results

    def _eval_in_fit(
        self,
        valid_dataset: Iterable[Any],
        sink: bool,
        manager: CallbackManager,
        run_context: RunContext,
    ) -> None:
        """Evaluate inside ``fit`` with the same callbacks and cb_params; the training fields
        that eval overwrites are restored afterwards."""
        cb_params = run_context.original_args()
        saved = {k: cb_params[k] for k in ("batch_num", "cur_step_num", "net_outputs", "mode")}
        try:
            results = self._run_eval(valid_dataset, manager, run_context, sink)
        finally:
            cb_params.update(saved)
        cb_params.eval_results = dict(results)

    def _eval_step(self, batch: Any) -> tuple[Any, Any, Any]:
        """Forward one eval batch and update every metric; returns (loss, predictions, label)."""
        if self._check_next_batch:
            loss, y_pred, label = self._checked(self._eval_forward, batch)
            self._check_next_batch = False
        else:
            loss, y_pred, label = self._eval_forward(batch)
        for name, metric in self._metrics.items():
            if metric.needs_loss:
                if loss is None:
                    raise ValueError(
                        f"metric {name!r} expected a loss; give Model a loss_fn, or an "
                        "eval_network with eval_indexes"
                    )
                metric.update(loss)
            else:
                metric.update(y_pred, label)
        return loss, y_pred, label

    def _eval_forward(self, batch: Any) -> tuple[Any, Any, Any]:
        with self._amp.autocast():
            if self._eval_indexes is not None:
                outputs = call_network(self._eval_network, batch)
                i_loss, i_pred, i_label = self._eval_indexes
                return outputs[i_loss], outputs[i_pred], outputs[i_label]
            args, kwargs, label = split_batch(batch)
            y_pred = self._eval_network(*args, **kwargs)
            loss = self._loss_fn(y_pred, label) if self._loss_fn is not None else None
            return loss, y_pred, label

    def _require_metrics(self, what: str) -> None:
        if not self._metrics:
            raise ValueError(
                f"Model.{what} expected metrics (a dict or a set of names) given to Model, "
                "received: none"
            )
