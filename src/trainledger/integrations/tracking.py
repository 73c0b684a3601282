"""``track``: trainledger's lineage and summaries for a hand-written training loop.

::

    with trainledger.track("runs/a", hparams={"lr": 0.1}, network=net, optimizer=opt,
                           train_dataset=loader, valid_dataset=val_loader) as run:
        for step, (x, y) in enumerate(loader, 1):
            ...
            run.log(step, loss=loss.item())
        run.log_eval({"accuracy": acc})
        run.checkpoint(save_checkpoint(net, "runs/a/final.ckpt"))

The run's lineage is the one ``Model`` + ``TrainLineage`` would write for the same objects
(optimizer and initial lr, loss function, network, dataset path/size/batch size, epochs,
final loss, latest checkpoint), with ``hparams`` as ``user_defined`` fields. A block that
raises is recorded as "failed" (Ctrl-C as "stopped") and the error propagates.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from trainledger.integrations.recorder import RunRecorder

__all__ = ["track", "Tracker"]


class Tracker:
    """What ``track`` yields: log scalars, evaluations and checkpoints of the run."""

    def __init__(self, recorder: RunRecorder) -> None:
        self._recorder = recorder

    @property
    def run_dir(self) -> str:
        return self._recorder.run_dir

    def log(self, step: int, **scalars: Any) -> None:
        """Scalars at ``step`` into the run's TensorBoard summaries (``loss`` also becomes the
        lineage's final loss). ``step`` is the global step and sets the run's step count."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"log step expected an int >= 0, received: {step!r}")
        self._recorder.scalars(step, scalars)

    def log_eval(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Evaluation metrics (``{name: number}``) into the lineage's ``metric``."""
        if not isinstance(metrics, Mapping):
            raise TypeError(
                f"log_eval expected a dict of metrics, received: {type(metrics).__name__}"
            )
        self._recorder.evaluation(metrics, step)

    def log_epoch(self, epochs_done: int) -> None:
        """Mark an epoch done: the run's progress snapshot (steps, epochs, checkpoints)."""
        self._recorder.epoch_end(epochs_done)

    def checkpoint(self, path: str | os.PathLike[str]) -> str:
        """Record a checkpoint file written by the loop, of the weights at the step last
        logged; returns its absolute path."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"checkpoint expected an existing file, received: {path!s}")
        self._recorder.checkpoint(path, self._recorder.params.get("cur_step_num"))
        return os.path.abspath(os.fspath(path))

    def hparams(self, **values: Any) -> None:
        """More hyper-parameters, recorded with the next lineage record."""
        self._recorder.add_user_info(values)


@contextmanager
def track(
    run_dir: str | os.PathLike[str],
    *,
    hparams: Mapping[str, Any] | None = None,
    network: Any = None,
    optimizer: Any = None,
    loss_fn: Any = None,
    lr_scheduler: Any = None,
    train_dataset: Any = None,
    valid_dataset: Any = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    raise_exception: bool = False,
) -> Iterator[Tracker]:
    """Record a hand-written training loop as a trainledger run in ``run_dir``.

    Args:
        hparams: hyper-parameters (nested dicts are flattened, see ``flat_hparams``), recorded
            as ``user_defined`` fields; lineage's own hyper-parameters come from the objects.
        network, optimizer, loss_fn, lr_scheduler: the torch objects of the loop.
        train_dataset, valid_dataset: DataLoaders or datasets (paths, sizes, batch size).
        epochs: the planned epoch count (lineage's ``epoch``).
        batch_size: when the dataset does not tell it.
        seed: the run's seed (default: torch's initial seed).
        raise_exception: raise when recording fails (default: log and go on).
    """
    recorder = RunRecorder(run_dir, user_defined_info=hparams, raise_exception=raise_exception)
    recorder.update(
        network=network,
        train_network=network,
        optimizer=optimizer,
        loss_fn=loss_fn,
        lr_scheduler=lr_scheduler,
        train_dataset=train_dataset,
        valid_dataset=valid_dataset,
        epoch_num=epochs,
        batch_size=batch_size,
        seed=seed,
    )
    recorder.begin()
    try:
        yield Tracker(recorder)
    except BaseException as exc:
        recorder.end(exception=exc)
        raise
    recorder.end()
