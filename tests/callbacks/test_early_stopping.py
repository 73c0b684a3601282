"""EarlyStopping: patience, modes, baseline, restoring the best weights."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from trainledger.callbacks.early_stopping import EarlyStopping
from trainledger.run.callback import CallbackParams, RunContext

from ._train import data, model


def _feed(stopper: EarlyStopping, values: list[float], key: str = "loss") -> list[int]:
    """Feed one value per epoch; return the epochs at which a stop was requested."""
    net = torch.nn.Linear(2, 1)
    stops = []
    rc = RunContext(CallbackParams(train_network=net))
    stopper.on_train_begin(rc)
    for epoch, value in enumerate(values, start=1):
        cb = rc.original_args()
        cb.cur_epoch_num = epoch
        cb.eval_results = {key: value}
        with torch.no_grad():
            net.weight.fill_(epoch)
        stopper.on_train_epoch_end(rc)
        if rc.get_stop_requested():
            stops.append(epoch)
            break
    return stops


@pytest.mark.parametrize(
    ("values", "patience", "stop"),
    [
        ([1.0, 0.9, 0.8, 0.7], 0, []),
        ([1.0, 0.9, 0.95, 0.7], 0, [3]),
        ([1.0, 0.9, 0.95, 0.96, 0.97], 2, [4]),
        ([1.0, 0.9, 0.95, 0.8, 0.97, 0.99], 2, [6]),
    ],
)
def test_patience(values: list[float], patience: int, stop: list[int]) -> None:
    assert _feed(EarlyStopping(monitor="eval_loss", patience=patience), values) == stop


def test_max_mode_auto_for_accuracy_and_min_delta() -> None:
    stopper = EarlyStopping(monitor="accuracy", min_delta=0.05)
    assert stopper.mode == "max"
    assert _feed(stopper, [0.5, 0.52], key="accuracy") == [2]  # +0.02 < min_delta


def test_baseline() -> None:
    stopper = EarlyStopping(monitor="loss_x", baseline=0.5, patience=1)
    assert _feed(stopper, [0.6], key="loss_x") == [1]


def test_restore_best_weights() -> None:
    stopper = EarlyStopping(monitor="eval_loss", restore_best_weights=True)
    net_values: list[Any] = []
    _feed(stopper, [1.0, 0.5, 0.7], key="loss")
    assert stopper.best_epoch == 2 and stopper.stopped_epoch == 3
    net_values.append(stopper.best_weights["weight"])  # type: ignore[index]
    assert torch.all(net_values[0] == 2)


def test_in_fit_stops_training() -> None:
    stopper = EarlyStopping(monitor="eval_loss", patience=0)
    m = model(lr=5.0, metrics={"loss"})  # a huge lr makes the eval loss go up
    m.fit(20, data(), data(seed=1), callbacks=stopper)
    assert 0 < stopper.stopped_epoch < 20


def test_train_loss_monitor() -> None:
    stopper = EarlyStopping(monitor="loss", patience=100)
    model().train(2, data(), callbacks=stopper)
    assert stopper.best < float("inf")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode expected 'auto', 'min' or 'max', received: 'up'"):
        EarlyStopping(mode="up")
    with pytest.raises(ValueError, match="patience expected an int >= 0"):
        EarlyStopping(patience=-2)


def test_missing_monitor_warns() -> None:
    with pytest.warns(UserWarning, match="monitor 'eval_f1' not found"):
        _feed(EarlyStopping(monitor="eval_f1"), [0.3], key="accuracy")
