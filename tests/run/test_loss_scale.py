"""MindSpore's loss-scale managers on torch's CPU ``GradScaler``: an overflowed step is skipped
(or applied, for a fixed scale without ``drop_overflow_update``), the dynamic scale backs off by
``scale_factor`` and grows after ``scale_window`` clean steps, and ``net_outputs`` is
``(loss, overflow, loss_scale)`` as in MindSpore's loss-scaled cell."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from trainledger import (
    Callback,
    DynamicLossScaleManager,
    FixedLossScaleManager,
    Model,
    RecModel,
    RunContext,
)

OVERFLOW_AT = 3  # the step whose gradients are infinite


class _Explodes:
    """MSE loss whose gradient is infinite at one call (a huge factor: the loss itself stays
    finite in float32 only before scaling, as a real fp16 overflow does)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, y_pred: Any, y: Any) -> Any:
        self.calls += 1
        loss = torch.nn.functional.mse_loss(y_pred, y)
        return loss * 1e38 if self.calls == OVERFLOW_AT else loss


class _Record(Callback):
    def __init__(self, net: torch.nn.Module) -> None:
        self.net = net
        self.rows: list[tuple[bool, float, torch.Tensor]] = []

    def on_train_step_end(self, run_context: RunContext) -> None:
        loss, overflow, scale = run_context.original_args().net_outputs
        assert loss.ndim == 0 and overflow.dtype == torch.bool
        self.rows.append((bool(overflow), float(scale), self.net.weight.detach().clone()))


def _train(manager: Any, steps: int = 6) -> tuple[_Record, torch.Tensor]:
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1)
    before = net.weight.detach().clone()
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(steps)]
    record = _Record(net)
    model = Model(
        net, _Explodes(), torch.optim.SGD(net.parameters(), lr=0.01), loss_scale_manager=manager
    )
    model.train(1, data, callbacks=[record])
    return record, before


def test_dynamic_scale_skips_the_overflow_backs_off_and_grows_after_the_window():
    record, _ = _train(
        DynamicLossScaleManager(init_loss_scale=2**10, scale_factor=4, scale_window=2)
    )
    overflow = [row[0] for row in record.rows]
    scales = [row[1] for row in record.rows]
    assert overflow == [i + 1 == OVERFLOW_AT for i in range(6)]
    # steps 1, 2 clean: grows after step 2; step 3 overflows: / 4; steps 4, 5: grows at 5
    assert scales == [2**10, 2**12, 2**10, 2**10, 2**12, 2**12]
    weights = [row[2] for row in record.rows]
    torch.testing.assert_close(weights[OVERFLOW_AT - 1], weights[OVERFLOW_AT - 2])  # skipped
    assert not torch.equal(weights[OVERFLOW_AT], weights[OVERFLOW_AT - 1])  # trains on after


def test_fixed_scale_stays_and_drops_the_overflowed_update():
    record, _ = _train(FixedLossScaleManager(loss_scale=256))
    assert [row[1] for row in record.rows] == [256.0] * 6
    assert [row[0] for row in record.rows] == [i + 1 == OVERFLOW_AT for i in range(6)]
    weights = [row[2] for row in record.rows]
    torch.testing.assert_close(weights[OVERFLOW_AT - 1], weights[OVERFLOW_AT - 2])
    assert all(torch.isfinite(w).all() for w in weights)


def test_fixed_scale_without_drop_applies_the_overflowed_update():
    record, _ = _train(FixedLossScaleManager(loss_scale=256, drop_overflow_update=False))
    weights = [row[2] for row in record.rows]
    assert record.rows[OVERFLOW_AT - 1][0] is True
    assert not torch.isfinite(weights[OVERFLOW_AT - 1]).all()  # applied as it was


def test_without_an_overflow_a_scaled_run_trains_as_an_unscaled_one():
    def run(manager: Any) -> torch.Tensor:
        torch.manual_seed(0)
        net = torch.nn.Linear(3, 1)
        data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        Model(net, torch.nn.MSELoss(), opt, loss_scale_manager=manager).train(1, data)
        return net.weight.detach()

    plain = run(None)
    torch.testing.assert_close(run(FixedLossScaleManager(1024)), plain)
    torch.testing.assert_close(run(DynamicLossScaleManager(2**16)), plain)


def test_online_training_skips_the_overflowed_step():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]
    record = _Record(net)
    model = RecModel(
        net,
        _Explodes(),
        torch.optim.SGD(net.parameters(), lr=0.01),
        loss_scale_manager=DynamicLossScaleManager(2**8, 2, 100),
    )
    model.online_train(iter(data), callbacks=[record])
    assert [row[0] for row in record.rows] == [i + 1 == OVERFLOW_AT for i in range(5)]
    assert record.rows[OVERFLOW_AT - 1][1] == 2**7
    torch.testing.assert_close(record.rows[OVERFLOW_AT - 1][2], record.rows[OVERFLOW_AT - 2][2])


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: FixedLossScaleManager(0.5), ValueError, "loss_scale expected a number >= 1"),
        (lambda: FixedLossScaleManager("8"), TypeError, "received: str"),
        (lambda: FixedLossScaleManager(8, drop_overflow_update=1), TypeError, "a bool"),
        (lambda: DynamicLossScaleManager(math.nan), ValueError, "init_loss_scale"),
        (lambda: DynamicLossScaleManager(8, scale_factor=1), ValueError, "> 1"),
        (lambda: DynamicLossScaleManager(8, scale_window=0), ValueError, "scale_window"),
        (lambda: DynamicLossScaleManager(8, scale_window=2.0), TypeError, "scale_window"),
    ],
)
def test_manager_arguments_are_checked(make, error, words):
    with pytest.raises(error, match=words):
        make()


def test_model_checks_the_manager_and_keep_batchnorm_fp32():
    net = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="loss_scale_manager expected a FixedLossScaleManager"):
        Model(net, torch.nn.MSELoss(), opt, loss_scale_manager=128)
    with pytest.raises(ValueError, match="expected an optimizer"):
        Model(net, torch.nn.MSELoss(), None, loss_scale_manager=FixedLossScaleManager())
    with pytest.raises(TypeError, match="keep_batchnorm_fp32 expected a bool"):
        Model(net, torch.nn.MSELoss(), opt, keep_batchnorm_fp32="yes")
    Model(net, torch.nn.MSELoss(), opt, amp_level="O2", keep_batchnorm_fp32=False)
    assert FixedLossScaleManager(64).get_loss_scale() == 64.0
    assert DynamicLossScaleManager().get_drop_overflow_update() is True
