"""Hugging Face Transformers: ``TrainledgerTrainerCallback`` records ``Trainer.train`` as a run.

::

    trainer = Trainer(model, args, train_dataset=..., eval_dataset=...,
                      callbacks=[TrainledgerTrainerCallback("runs/a")])

What is recorded (through ``RunRecorder``, so fields match the native ``Model`` path):

* hyper-parameters: lineage's optimizer and learning rate from the Trainer's optimizer and
  scheduler, epochs from ``num_train_epochs`` (when ``max_steps`` does not bound the run), the
  batch size and dataset size from the train dataloader; the ``TrainingArguments`` a run is
  usually compared on (learning rate, batch sizes, epochs, seed, scheduler, warm-up, weight
  decay, Adam betas, gradient accumulation, precision ...) as ``user_defined`` fields, and the
  model config's non-default values as ``config.<key>``;
* network: the model's class (its config is in ``user_defined``); seed: ``args.seed``;
* summaries: every ``on_log`` value (``loss``, ``learning_rate``, ``grad_norm`` ...) at the
  global step, except the evaluation values and the end-of-training totals;
* metrics: ``on_evaluate`` metrics without the ``eval_`` prefix (``eval_accuracy`` ->
  ``accuracy``, so names match a native run), timing entries left out;
* checkpoints: the weights file of each ``checkpoint-<step>`` the Trainer saves (the best one
  at the end when ``load_best_model_at_end``);
* status: "finished" at ``on_train_end``, "stopped" when a callback stopped training early.
  The Trainer has no exception hook. Wrapping ``trainer.train()`` in ``callback.recording()``
  records "failed" (or "stopped" for Ctrl-C) as soon as it raises; without it, a run still open
  when the interpreter exits is recorded then, "failed" with the uncaught exception that ended
  the process (or with "the process exited before Trainer.train() ended"). Only SIGKILL and
  the like leave "running". Only the main process writes.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from transformers import TrainerCallback

from trainledger.integrations.recorder import RunRecorder

__all__ = ["TrainledgerTrainerCallback", "TRAINING_ARGUMENTS"]

#: the TrainingArguments recorded as user_defined fields
TRAINING_ARGUMENTS = (
    "learning_rate",
    "per_device_train_batch_size",
    "per_device_eval_batch_size",
    "gradient_accumulation_steps",
    "num_train_epochs",
    "max_steps",
    "seed",
    "lr_scheduler_type",
    "warmup_steps",
    "warmup_ratio",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "optim",
    "fp16",
    "bf16",
    "label_smoothing_factor",
)
_SKIP_LOG = {
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "train_loss",
    "total_flos",
}
_SKIP_METRIC = ("runtime", "samples_per_second", "steps_per_second", "epoch")
_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors")


def training_hparams(args: Any) -> dict[str, Any]:
    """The ``TRAINING_ARGUMENTS`` of a ``TrainingArguments`` (those it has)."""
    values = args.to_dict() if hasattr(args, "to_dict") else vars(args)
    return {k: values[k] for k in TRAINING_ARGUMENTS if k in values}


def config_hparams(model: Any) -> dict[str, Any]:
    """The model config's non-default values, prefixed ``config.``."""
    config = getattr(model, "config", None)
    to_diff = getattr(config, "to_diff_dict", None)
    if not callable(to_diff):
        return {}
    values = {k: v for k, v in to_diff().items() if k != "transformers_version"}
    return {"config": values}


def eval_metric_names(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``eval_accuracy`` -> ``accuracy``; timing entries left out."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = key.split("_", 1)[1] if key.startswith(("eval_", "test_")) else key
        if name not in _SKIP_METRIC:
            out[name] = value
    return out


def _unwrap(obj: Any, attr: str) -> Any:
    """Accelerate's wrappers (``AcceleratedOptimizer.optimizer``,
    ``AcceleratedScheduler.scheduler``) -> the torch object, so lineage names ``AdamW``."""
    for _ in range(4):
        inner = getattr(obj, attr, None)
        if inner is None or inner is obj:
            break
        obj = inner
    return obj


def _weights_file(checkpoint_dir: str) -> str | None:
    for name in _WEIGHTS:
        path = os.path.join(checkpoint_dir, name)
        if os.path.isfile(path):
            return path
    return None


class TrainledgerTrainerCallback(TrainerCallback):  # type: ignore[misc]
    """Record a Transformers ``Trainer`` run's lineage, summaries and checkpoints in ``run_dir``.

    Args:
        run_dir: the run directory (created if missing).
        user_defined_info: extra fields merged with the training arguments.
        raise_exception: raise when recording fails (default: log and let training go on).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        user_defined_info: Mapping[str, Any] | None = None,
        raise_exception: bool = False,
    ) -> None:
        self.run_dir = os.path.abspath(os.fspath(run_dir))
        self._user_info = dict(user_defined_info or {})
        self._raise = raise_exception
        self._recorder: RunRecorder | None = None

    @property
    def recorder(self) -> RunRecorder | None:
        """The current run's recorder (None before training starts)."""
        return self._recorder

    @contextmanager
    def recording(self) -> Iterator[TrainledgerTrainerCallback]:
        """Wrap ``trainer.train()``: an exception records the run as failed, then propagates."""
        try:
            yield self
        except BaseException as exc:
            rec = self._recorder
            if rec is not None and rec.began and not rec.ended:
                rec.end(exception=exc)
            raise

    def _at_exit(self) -> None:
        """The interpreter exits with the run still open: record why (see the module doc)."""
        rec = self._recorder
        if rec is None or not rec.began or rec.ended:
            return
        exc = getattr(sys, "last_value", None)  # set for the uncaught exception, if any
        if not isinstance(exc, BaseException):
            exc = RuntimeError("the process exited before Trainer.train() ended")
        rec.end(exception=exc)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        model = kwargs.get("model")
        info = {**training_hparams(args), **config_hparams(model), **self._user_info}
        rec = self._recorder = RunRecorder(
            self.run_dir,
            user_defined_info=info,
            raise_exception=self._raise,
            write=bool(state.is_world_process_zero),
        )
        epochs = float(args.num_train_epochs)
        bounded_by_epochs = args.max_steps is None or args.max_steps <= 0
        rec.update(
            network=model,
            train_network=model,
            optimizer=_unwrap(kwargs.get("optimizer"), "optimizer"),
            lr_scheduler=_unwrap(kwargs.get("lr_scheduler"), "scheduler"),
            epoch_num=int(epochs) if bounded_by_epochs and epochs.is_integer() else None,
            train_dataset=kwargs.get("train_dataloader"),
            valid_dataset=kwargs.get("eval_dataloader"),
            batch_size=int(args.per_device_train_batch_size),
            seed=int(args.seed),
            cur_step_num=int(state.global_step),
        )
        rec.begin()
        atexit.unregister(self._at_exit)  # one registration per callback, however many runs
        atexit.register(self._at_exit)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        rec = self._recorder
        if rec is None or not logs:
            return
        values = {
            k: v
            for k, v in logs.items()
            if k not in _SKIP_LOG and not k.startswith(("eval_", "test_"))
        }
        rec.scalars(int(state.global_step), values)

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: Any = None, **kwargs: Any
    ) -> None:
        rec = self._recorder
        if rec is None or not metrics:
            return
        loader = kwargs.get("eval_dataloader")
        if loader is not None:
            rec.update(valid_dataset=loader)
        rec.evaluation(eval_metric_names(metrics), step=int(state.global_step))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self._recorder
        if rec is None:
            return
        checkpoint_dir = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        weights = _weights_file(checkpoint_dir)
        if weights is not None:
            rec.checkpoint(weights, int(state.global_step))

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self._recorder
        if rec is not None:
            rec.update(cur_step_num=int(state.global_step))
            rec.epoch_end(round(state.epoch or 0))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self._recorder
        if rec is None or rec.ended:
            return
        best = state.best_model_checkpoint
        weights = _weights_file(best) if best else None
        if weights is not None:
            rec.checkpoint(weights)
        rec.update(cur_step_num=int(state.global_step), cur_epoch_num=round(state.epoch or 0))
        early = state.max_steps and state.global_step < state.max_steps
        rec.end(stop_reason="requested" if early else "completed")
        atexit.unregister(self._at_exit)
