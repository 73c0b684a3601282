"""Runs made by real training (``Model`` + ``TrainLineage``): finished, failed, stopped, or
looked at while still running. Unlike ``tests/runs.py`` (lineage written by hand, no torch),
the status and steps here are what the training host itself recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from tests.run.helpers import make_data, make_net
from trainledger.callbacks.lineage import TrainLineage
from trainledger.errors import CallbackError
from trainledger.run import Model
from trainledger.run.callback import Callback, RunContext


class _AtStep(Callback):
    """At training step ``step``: call ``during``, raise, or ask the loop to stop."""

    def __init__(self, step: int, action: str, during: Callable[[], None] | None = None) -> None:
        self.step, self.action, self.during = step, action, during

    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num != self.step:
            return
        if self.action == "fail":
            raise RuntimeError(f"boom at step {self.step}")
        if self.action == "stop":
            run_context.request_stop()
        elif self.during is not None:
            self.during()


def train_run(
    base: Path,
    name: str,
    *,
    fail_at: int | None = None,
    stop_at: int | None = None,
    during: Callable[[], None] | None = None,
    lr: float = 0.1,
) -> Path:
    """Train a toy model for 2 epochs of 6 steps with lineage in ``base/name``.

    ``fail_at``: a step raises (status failed); ``stop_at``: the loop is asked to stop
    (stopped); ``during``: called at step 3, while the run's lineage says running.
    """
    run_dir = base / name
    net = make_net(0)
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=lr))
    callbacks: list[Callback] = [TrainLineage(run_dir)]
    if fail_at is not None:
        callbacks.append(_AtStep(fail_at, "fail"))
    if stop_at is not None:
        callbacks.append(_AtStep(stop_at, "stop"))
    if during is not None:
        callbacks.append(_AtStep(3, "call", during))
    try:
        model.train(2, make_data(48, 8), callbacks=callbacks)
    except CallbackError:
        if fail_at is None:
            raise
    return run_dir
