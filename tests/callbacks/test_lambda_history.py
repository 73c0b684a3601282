"""LambdaCallback and History."""

from __future__ import annotations

import pytest

from trainledger.callbacks.history import History
from trainledger.callbacks.lambda_callback import LambdaCallback
from trainledger.run.callback_manager import CallbackManager

from ._train import data, model


def test_lambda_callback_new_and_old_names() -> None:
    log: list[str] = []
    cb = LambdaCallback(
        on_train_epoch_end=lambda rc: log.append(f"epoch {rc.original_args().cur_epoch_num}"),
        step_end=lambda rc: log.append("step"),
        on_eval_end=lambda rc: log.append("eval"),
    )
    model(metrics={"acc"}).fit(2, data(n=16), data(n=8), callbacks=cb)
    assert log == ["step", "step", "eval", "epoch 1", "step", "step", "eval", "epoch 2"]
    manager = CallbackManager([cb])
    assert not manager.has("on_train_begin")  # hooks not given cost nothing


def test_lambda_callback_errors() -> None:
    with pytest.raises(TypeError, match="expected hook names among .* received: 'on_step'"):
        LambdaCallback(on_step=print)
    with pytest.raises(TypeError, match="on_train_end expected a callable"):
        LambdaCallback(on_train_end=3)  # type: ignore[arg-type]


def test_history_train_and_fit() -> None:
    hist = History()
    model(metrics={"acc", "loss"}).fit(3, data(), data(seed=1), valid_frequency=2, callbacks=hist)
    assert hist.epoch == [1, 2, 3]
    assert len(hist.history["net_output"]) == 3 and len(hist.history["loss_mean"]) == 3
    assert hist.eval_epoch == [2]
    assert len(hist.history["acc"]) == 1 and len(hist.history["loss"]) == 1
