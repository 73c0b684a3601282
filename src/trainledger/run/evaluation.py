"""``Evaluator``: the evaluation passes of ``Model.eval`` and of ``fit``.

``Model`` owns one and hands each pass what belongs to the run (callback manager, run
context, the device mover and the amp policy of the moment); the evaluator owns what belongs
to evaluation (eval network, loss, metrics, eval indexes) and checks each pass's first batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from trainledger.errors import DatasetError
from trainledger.run.amp import AmpPolicy
from trainledger.run.batches import call_network, checked_call, dataset_len, split_batch
from trainledger.run.callback import RunContext
from trainledger.run.callback_manager import CallbackManager
from trainledger.run.eval_shard import EvalShard, head
from trainledger.run.metric_base import Metric

__all__ = ["Evaluator"]


class Evaluator:
    """One evaluation pass at a time over ``eval_network`` and ``metrics``.

    Args:
        eval_network: the network run under ``torch.no_grad`` in eval mode.
        loss_fn: ``loss_fn(predictions, label)`` (None: no loss unless ``eval_indexes``).
        metrics: ``{name: Metric}``, cleared at the start of every pass.
        eval_indexes: positions of (loss, predictions, label) in the eval network's outputs.
    """

    def __init__(
        self,
        eval_network: torch.nn.Module,
        loss_fn: Any,
        metrics: dict[str, Metric],
        eval_indexes: list[int] | None,
    ) -> None:
        self.eval_network = eval_network
        self.loss_fn = loss_fn
        self.metrics = metrics
        self.eval_indexes = eval_indexes

    def run(
        self,
        valid_dataset: Iterable[Any],
        manager: CallbackManager,
        run_context: RunContext,
        sink: bool,
        move_to_device: Callable[[Any], Any],
        amp: AmpPolicy,
    ) -> dict[str, Any]:
        """One pass over ``valid_dataset``; returns ``{metric: value}``. The eval hooks fire
        through ``manager``; with ``sink`` the step hooks fire once for the whole pass. Over a
        ``DistributedSampler`` the metrics leave its padding out and are merged over the
        ranks (``run/eval_shard.py``)."""
        cb_params = run_context.original_args()
        cb_params.eval_network = self.eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = dataset_len(valid_dataset)
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        cb_params.net_outputs = None
        cb_params.metrics = {}
        for metric in self.metrics.values():
            metric.clear()
        shard = EvalShard.of(valid_dataset)
        net = self.eval_network
        was_training = net.training
        net.eval()
        step_hooks = not sink and (
            manager.has("on_eval_step_begin") or manager.has("on_eval_step_end")
        )
        try:
            with torch.no_grad(), manager.phase(run_context, "on_eval_begin", "on_eval_end"):
                with manager.phase(run_context, "on_eval_epoch_begin", "on_eval_epoch_end"):
                    if sink:
                        manager.call("on_eval_step_begin", run_context)
                    for batch in valid_dataset:
                        batch = move_to_device(batch)
                        first = cb_params.cur_step_num == 0
                        cb_params.cur_step_num += 1
                        if step_hooks:
                            manager.call("on_eval_step_begin", run_context)
                        cb_params.net_outputs = self.step(batch, amp, first, shard)
                        if step_hooks:
                            manager.call_all("on_eval_step_end", run_context)
                    if cb_params.cur_step_num == 0:
                        raise DatasetError("valid_dataset yielded no batches")
                    if cb_params.batch_num is None:
                        cb_params.batch_num = cb_params.cur_step_num
                    if sink:
                        manager.call_all("on_eval_step_end", run_context)
                if shard is not None:
                    shard.merge(self.metrics)
                results = {name: metric.eval() for name, metric in self.metrics.items()}
                cb_params.metrics = results
        finally:
            net.train(was_training)
        return results

    def run_in_fit(
        self,
        valid_dataset: Iterable[Any],
        manager: CallbackManager,
        run_context: RunContext,
        sink: bool,
        move_to_device: Callable[[Any], Any],
        amp: AmpPolicy,
    ) -> None:
        """``run`` inside ``fit``, with the training run's callbacks and cb_params: the
        training fields a pass overwrites are restored, and ``eval_results`` is set."""
        cb_params = run_context.original_args()
        saved = {k: cb_params[k] for k in ("batch_num", "cur_step_num", "net_outputs", "mode")}
        try:
            results = self.run(valid_dataset, manager, run_context, sink, move_to_device, amp)
        finally:
            cb_params.update(saved)
        cb_params.eval_results = dict(results)

    def step(
        self, batch: Any, amp: AmpPolicy, first: bool = False, shard: EvalShard | None = None
    ) -> tuple[Any, Any, Any]:
        """Forward one eval batch and update every metric; returns (loss, predictions, label).
        ``first``: the pass's first batch, whose shape errors name the batch's structure;
        ``shard``: this rank's shard, whose padding is left out of the metrics."""
        if first:
            loss, y_pred, label = checked_call(self._forward, batch, amp)
        else:
            loss, y_pred, label = self._forward(batch, amp)
        keep = shard.keep(label) if shard is not None else None
        if keep is not None:
            if keep == 0:
                return loss, y_pred, label
            loss, y_pred, label = self._head(loss, y_pred, label, keep, amp)
        for name, metric in self.metrics.items():
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

    def _head(
        self, loss: Any, y_pred: Any, label: Any, keep: int, amp: AmpPolicy
    ) -> tuple[Any, Any, Any]:
        """The first ``keep`` samples' loss, predictions and labels. A batch-mean loss is
        recomputed over them with ``loss_fn``; a per-sample loss is cut like the labels."""
        size = len(label)
        y_pred, label = head(y_pred, keep), head(label, keep)
        if self.loss_fn is not None and self.eval_indexes is None:
            with amp.autocast():
                return self.loss_fn(y_pred, label), y_pred, label
        if getattr(loss, "shape", ())[:1] == (size,):
            return head(loss, keep), y_pred, label
        return loss, y_pred, label  # an eval network's batch-mean loss: padding kept

    def _forward(self, batch: Any, amp: AmpPolicy) -> tuple[Any, Any, Any]:
        with amp.autocast():
            if self.eval_indexes is not None:
                outputs = call_network(self.eval_network, batch)
                i_loss, i_pred, i_label = self.eval_indexes
                return outputs[i_loss], outputs[i_pred], outputs[i_label]
            args, kwargs, label = split_batch(batch)
            y_pred = self.eval_network(*args, **kwargs)
            loss = self.loss_fn(y_pred, label) if self.loss_fn is not None else None
            return loss, y_pred, label
