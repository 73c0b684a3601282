"""PyTorch Lightning: ``TrainledgerCallback`` records ``Trainer.fit``/``test`` as a trainledger run.

::

    trainer = lightning.Trainer(callbacks=[TrainledgerCallback("runs/a")])

What is recorded (through ``RunRecorder``, so fields match the native ``Model`` path):

* hyper-parameters: ``pl_module.hparams`` (``save_hyperparameters()``) as ``user_defined``
  fields; lineage's optimizer and learning rate from ``trainer.optimizers[0]`` and its first
  scheduler at the start of training (the scheduler's base lr, as the native path records
  it), epochs from ``max_epochs``;
* network: the module's ``backbone`` (MindInsight's rule), else its one child module that is
  not a loss, else the LightningModule itself; the loss function: a ``loss_fn``/``criterion``
  /``loss`` attribute or a torch loss child module;
* datasets: path, size and batch size from the train/val dataloaders (a datamodule's too);
* metrics: after each validation (not the sanity check) and test, the ``callback_metrics`` that
  validation/test logged (``metrics=[...]`` picks names); scalars: every ``log_every_n_steps``
  the training values of ``callback_metrics`` go to the run's TensorBoard summaries;
* checkpoints: the best (else last) file of each ``ModelCheckpoint``, with its size;
* status: "finished", "failed" on an exception, "stopped" on Ctrl-C or ``trainer.should_stop``
  (early stopping); only the global-zero rank writes under DDP.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import lightning.pytorch as pl

from trainledger.integrations.recorder import RunRecorder

__all__ = ["TrainledgerCallback"]

_LOSS_NAMES = ("loss_fn", "criterion", "loss", "loss_func", "_loss_fn")
_BACKBONE_NAMES = ("backbone", "_backbone")


def _first(loaders: Any) -> Any:
    """The first dataloader of Lightning's single/list/dict/CombinedLoader forms."""
    loaders = getattr(loaders, "iterables", loaders)  # CombinedLoader
    if isinstance(loaders, Mapping):
        loaders = list(loaders.values())
    if isinstance(loaders, (list, tuple)):
        return loaders[0] if loaders else None
    return loaders


def _loss_of(module: Any) -> Any:
    import torch

    for name in _LOSS_NAMES:
        value = getattr(module, name, None)
        if value is not None and callable(value) and not isinstance(value, (int, float)):
            return value
    for child in module.children():
        if isinstance(child, torch.nn.modules.loss._Loss):
            return child
    return None


def _network_of(module: Any) -> Any:
    """The user's network inside the LightningModule (see the module docstring)."""
    import torch

    for name in _BACKBONE_NAMES:
        if isinstance(getattr(module, name, None), torch.nn.Module):
            return module
    children = [c for c in module.children() if not isinstance(c, torch.nn.modules.loss._Loss)]
    return children[0] if len(children) == 1 else module


def _seed() -> int | None:
    seed = os.environ.get("PL_GLOBAL_SEED")
    return int(seed) if seed and seed.lstrip("-").isdigit() else None


class TrainledgerCallback(pl.Callback):
    """Record a Lightning run's lineage, summaries and checkpoints in ``run_dir``.

    Args:
        run_dir: the run directory (created if missing).
        metrics: names of the evaluation metrics to record (default: everything the
            validation/test loop logged).
        user_defined_info: extra fields merged with the module's hparams.
        network: the network to name in lineage (default: found in the module, see above).
        raise_exception: raise when recording fails (default: log and let training go on).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        metrics: Iterable[str] | None = None,
        user_defined_info: Mapping[str, Any] | None = None,
        network: Any = None,
        raise_exception: bool = False,
    ) -> None:
        super().__init__()
        self.run_dir = os.path.abspath(os.fspath(run_dir))
        self._metric_names = None if metrics is None else set(metrics)
        self._user_info = dict(user_defined_info or {})
        self._network = network
        self._raise = raise_exception
        self._recorder: RunRecorder | None = None
        self._before_eval: dict[str, Any] = {}
        self._eval_keys: set[str] = set()
        self._every = 50  # Trainer.log_every_n_steps, read at the start of training

    @property
    def recorder(self) -> RunRecorder | None:
        """The current run's recorder (None before ``fit``/``test`` starts)."""
        return self._recorder

    # --- set-up ---------------------------------------------------------------------------
    def _open(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> RunRecorder:
        if self._recorder is None or self._recorder.ended:
            info = {**dict(getattr(pl_module, "hparams", {}) or {}), **self._user_info}
            self._recorder = RunRecorder(
                self.run_dir,
                user_defined_info=info,
                raise_exception=self._raise,
                write=trainer.is_global_zero,
            )
        return self._recorder

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        rec = self._open(trainer, pl_module)
        self._every = max(int(getattr(trainer, "log_every_n_steps", 50) or 1), 1)
        configs = getattr(trainer, "lr_scheduler_configs", None) or []
        epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else None
        network = self._network if self._network is not None else _network_of(pl_module)
        rec.update(
            network=network,
            train_network=pl_module,
            optimizer=trainer.optimizers[0] if trainer.optimizers else None,
            lr_scheduler=configs[0].scheduler if configs else None,
            loss_fn=_loss_of(pl_module),
            epoch_num=epochs,
            train_dataset=_first(trainer.train_dataloader),
            valid_dataset=_first(trainer.val_dataloaders),
            cur_step_num=trainer.global_step,
            cur_epoch_num=trainer.current_epoch,
            seed=_seed(),
        )
        rec.begin()

    # --- training -------------------------------------------------------------------------
    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        # Per step: two dict stores and a modulo (the values are read at logging steps only)
        rec = self._recorder
        if rec is None:
            return
        step = trainer.global_step
        params = rec.params
        params["cur_step_num"] = step
        if outputs is not None:
            params["net_outputs"] = outputs
        if step % self._every == 0 and rec.writes:
            keys = self._eval_keys
            values = {k: v for k, v in trainer.callback_metrics.items() if k not in keys}
            rec.scalars(step, values)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        rec = self._recorder
        if rec is not None:
            self._note_checkpoints(trainer, rec)
            rec.epoch_end(trainer.current_epoch + 1)

    # --- evaluation -----------------------------------------------------------------------
    def _snapshot(self, trainer: pl.Trainer) -> None:
        # the values themselves, not their ids: holding them keeps an id from being reused
        self._before_eval = dict(trainer.callback_metrics)

    def _eval_metrics(self, trainer: pl.Trainer) -> dict[str, Any]:
        """What this evaluation logged: new keys, or keys whose value object changed."""
        before = self._before_eval
        metrics = {k: v for k, v in trainer.callback_metrics.items() if before.get(k) is not v}
        self._before_eval = {}
        if self._metric_names is not None:
            metrics = {k: v for k, v in trainer.callback_metrics.items() if k in self._metric_names}
        self._eval_keys.update(metrics)
        return metrics

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._snapshot(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        rec = self._recorder
        if rec is None or trainer.sanity_checking:
            return
        rec.evaluation(self._eval_metrics(trainer), step=trainer.global_step)

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        rec = self._open(trainer, pl_module)
        rec.update(valid_dataset=_first(trainer.test_dataloaders))
        self._snapshot(trainer)

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._recorder is not None:
            self._recorder.evaluation(self._eval_metrics(trainer), step=trainer.global_step)

    # --- the end --------------------------------------------------------------------------
    def _note_checkpoints(self, trainer: pl.Trainer, rec: RunRecorder) -> None:
        for cb in trainer.checkpoint_callbacks:
            path = getattr(cb, "best_model_path", "") or getattr(cb, "last_model_path", "")
            if path and os.path.isfile(path):
                rec.checkpoint(path)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        rec = self._recorder
        if rec is None or stage != "fit" or rec.ended or not rec.began:
            return
        self._note_checkpoints(trainer, rec)
        rec.update(cur_step_num=trainer.global_step, cur_epoch_num=trainer.current_epoch)
        rec.end(stop_reason="requested" if trainer.should_stop else "completed")

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        rec = self._recorder
        if rec is None or rec.ended:
            return
        self._note_checkpoints(trainer, rec)
        rec.update(cur_step_num=trainer.global_step)
        rec.end(exception=exception)
