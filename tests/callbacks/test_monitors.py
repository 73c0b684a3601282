"""LossMonitor and TimeMonitor."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from trainledger.callbacks.monitors import LossMonitor, TimeMonitor
from trainledger.errors import CallbackError
from trainledger.run import RunContext

from ._train import data, model


def test_loss_monitor_prints_every_n_steps(capsys: pytest.CaptureFixture[str]) -> None:
    monitor = LossMonitor(per_print_times=2)
    model().train(2, data(n=32), callbacks=monitor)  # 4 steps per epoch
    lines = capsys.readouterr().out.strip().splitlines()
    steps = [re.match(r"epoch: (\d) step: (\d), loss is ([\d.]+)", ln).groups() for ln in lines]  # type: ignore[union-attr]
    assert [(e, s) for e, s, _ in steps] == [("1", "2"), ("1", "4"), ("2", "2"), ("2", "4")]
    assert monitor.last_loss == pytest.approx(float(steps[-1][2]))


def test_loss_monitor_zero_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    model().train(1, data(), callbacks=LossMonitor(0))
    assert capsys.readouterr().out == ""


def test_loss_monitor_prints_eval_results_in_fit(capsys: pytest.CaptureFixture[str]) -> None:
    model(metrics={"acc"}).fit(1, data(), data(seed=1), callbacks=LossMonitor(0))
    assert "Eval result: epoch 1, metrics: {'acc':" in capsys.readouterr().out


def test_loss_monitor_stops_on_nan() -> None:
    def nan_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return out.sum() * float("nan")

    with pytest.raises(CallbackError, match="LossMonitor.on_train_step_end.*Invalid loss nan"):
        model(loss_fn=nan_loss).train(1, data(), callbacks=LossMonitor(0))


def test_loss_monitor_bad_argument() -> None:
    with pytest.raises(ValueError, match="per_print_times expected an int >= 0, received: -1"):
        LossMonitor(-1)


def test_time_monitor(capsys: pytest.CaptureFixture[str]) -> None:
    monitor = TimeMonitor()
    model().train(2, data(n=32), callbacks=monitor)
    out = capsys.readouterr().out
    assert len(re.findall(r"epoch time: [\d.]+ ms, per step time: [\d.]+ ms", out)) == 2
    assert len(monitor.epoch_times) == 2
    assert monitor.step_times[0] == pytest.approx(monitor.epoch_times[0] / 4)
    with pytest.raises(ValueError, match="data_size expected a positive int"):
        TimeMonitor(0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_loss_monitor_stops_on_the_step_whose_loss_is_invalid(bad: float) -> None:
    """The loss is read at every step (not only at prints): training stops on the bad step,
    and the error names its epoch and step, as in MindSpore."""
    calls = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        loss = torch.nn.functional.cross_entropy(out, y)
        return loss * bad if len(calls) == 6 else loss  # epoch 2, step 2 (4 steps an epoch)

    with pytest.raises(CallbackError, match=rf"epoch: 2 step: 2\. Invalid loss {bad}") as info:
        model(loss_fn=loss_fn).train(3, data(n=32), callbacks=LossMonitor(per_print_times=100))
    assert isinstance(info.value.__cause__, ValueError)
    assert len(calls) == 6  # no step after the bad one


def test_loss_monitor_reads_losses_that_are_not_float_tensors() -> None:
    """Tuples (loss first), plain numbers, integer tensors, several values (their mean) and
    one-element tensors go through ``loss_value``; the same monitor follows each run_context
    it is given."""
    monitor = LossMonitor(0)
    for outputs, expected in [
        ((torch.tensor(0.5), 1), 0.5),
        (2, 2.0),
        (torch.tensor(3), 3.0),
        (torch.tensor([1.0, 2.0]), 1.5),
        (torch.tensor([0.25]), 0.25),
        (torch.tensor(0.5, dtype=torch.bfloat16), 0.5),
        (np.float32(0.75), 0.75),
        (np.array([0.5, 1.5]), 1.0),
    ]:
        run_context = RunContext({"net_outputs": outputs, "cur_step_num": 1})
        monitor.on_train_step_end(run_context)
        assert monitor.last_loss == expected and type(monitor.last_loss) is float


def test_loss_monitor_knows_the_last_loss_between_its_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An inline step calls the hook only at prints while the loss is finite
    (``next_step_end``): the prints and ``last_loss`` are as if it ran at every step."""
    losses: list[float] = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(out, y)
        losses.append(float(loss.detach()))
        return loss

    monitor = LossMonitor(per_print_times=3)
    model(loss_fn=loss_fn).train(2, data(n=32), callbacks=monitor)  # 8 steps
    printed = re.findall(r"epoch: (\d) step: (\d), loss is ([\d.]+)", capsys.readouterr().out)
    assert [(e, s) for e, s, _ in printed] == [("1", "3"), ("2", "2")]  # steps 3 and 6
    assert [float(v) for _, _, v in printed] == pytest.approx([losses[2], losses[5]])
    assert monitor.last_loss == pytest.approx(losses[7])


def test_a_loss_monitor_subclass_with_its_own_step_hook_gets_every_step() -> None:
    class Counting(LossMonitor):
        steps: list[int] = []

        def on_train_step_end(self, run_context: RunContext) -> None:
            self.steps.append(run_context.original_args().cur_step_num)
            super().on_train_step_end(run_context)

    monitor = Counting(per_print_times=100)
    assert monitor.next_step_end is None and LossMonitor(100).next_step_end == 100
    model().train(2, data(n=32), callbacks=monitor)
    assert monitor.steps == list(range(1, 9))
