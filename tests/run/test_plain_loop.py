"""The epoch loop with and without step hooks (``Model._train_epoch``): same training, same
cb_params at epoch level, as the loop that calls step hooks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.run.helpers import make_data, make_net
from trainledger import Callback, Model, RunContext
from trainledger.errors import CallbackError


class EpochEnd(Callback):
    """Only epoch hooks, so the plain loop runs; records what epoch end sees."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.seen.append(
            {
                "step": cb.cur_step_num,
                "element": cb.train_dataset_element,
                "loss": float(cb.net_outputs.detach()),
                "exception": cb.exception,
            }
        )


class StepEnd(EpochEnd):
    """The same, plus a step hook, so the hooked loop runs."""

    def on_train_step_end(self, run_context: RunContext) -> None:
        pass


def _hand_trained(data: list[tuple[torch.Tensor, torch.Tensor]], epochs: int) -> torch.nn.Module:
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in data:
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
    return net


@pytest.mark.parametrize("callback_type", [EpochEnd, StepEnd])
def test_both_loops_train_like_a_hand_loop_and_report_the_same_fields(
    callback_type: type[EpochEnd],
) -> None:
    data = make_data()
    net = make_net()
    cb = callback_type()
    Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1)).train(
        2, data, callbacks=[cb]
    )
    expected = _hand_trained(data, 2)
    for ours, theirs in zip(net.parameters(), expected.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs)
    assert [s["step"] for s in cb.seen] == [len(data), 2 * len(data)]
    assert all(s["element"] is data[-1] for s in cb.seen)
    assert all(np.isfinite(s["loss"]) and s["exception"] is None for s in cb.seen)


def test_plain_loop_takes_batches_that_need_moving_or_splitting() -> None:
    """numpy batches and lists leave the inline path and still train; a tensor subclass
    takes it (its step is the same)."""

    class Sub(torch.Tensor):
        pass

    data = make_data()
    mixed: list[Any] = []
    for i, (x, y) in enumerate(data):
        if i % 4 == 0:
            mixed.append((x.numpy(), y.numpy()))
        elif i % 4 == 1:
            mixed.append([x, y])
        elif i % 4 == 2:
            mixed.append((x.as_subclass(Sub), y))
        else:
            mixed.append((x, y))
    net = make_net()
    cb = EpochEnd()
    Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1)).train(
        1, mixed, callbacks=[cb]
    )
    expected = _hand_trained(data, 1)
    for ours, theirs in zip(net.parameters(), expected.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs)
    assert cb.seen[0]["step"] == len(data)


@pytest.mark.parametrize("callback_type", [EpochEnd, StepEnd])
def test_a_dataloaders_list_batches_run_inline_and_train_like_a_hand_loop(
    callback_type: type[EpochEnd],
) -> None:
    """``default_collate`` gives ``[x, y]`` lists: after the first (checked) batch they take
    the inline step, as tuples do, and train the same."""
    data = make_data()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(
            torch.cat([x for x, _ in data]), torch.cat([y for _, y in data])
        ),
        batch_size=len(data[0][1]),
    )
    assert type(next(iter(loader))) is list
    net = make_net()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    steps = []
    train_step = model._step.run
    model._step.run = lambda batch: steps.append(batch) or train_step(batch)  # type: ignore[method-assign]
    cb = callback_type()
    model.train(2, loader, callbacks=[cb])
    assert len(steps) == 1  # the first batch only: the rest ran inline
    expected = _hand_trained(data, 2)
    for ours, theirs in zip(net.parameters(), expected.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs)
    assert [s["step"] for s in cb.seen] == [len(data), 2 * len(data)]
    assert all(type(s["element"]) is list for s in cb.seen)


@pytest.mark.parametrize("callback_type", [EpochEnd, StepEnd])
def test_a_failing_step_is_counted_and_current_in_both_loops(
    callback_type: type[EpochEnd],
) -> None:
    data = make_data()
    bad = (torch.randn(8, 5), data[0][1])  # wrong feature count: the network raises
    broken = [*data[:3], bad, *data[3:]]
    net = make_net()
    cb = callback_type()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(RuntimeError):
        model.train(1, broken, callbacks=[cb])
    (seen,) = cb.seen
    assert seen["step"] == 4  # three good steps, then the failing one
    assert seen["element"] is bad
    assert isinstance(seen["exception"], RuntimeError)


def test_stop_request_from_an_epoch_free_source_stops_the_plain_loop() -> None:
    """A stop requested outside step hooks (a signal handler does this) ends the epoch after
    the current step."""
    data = make_data(n=400)
    net = make_net()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    holder: dict[str, RunContext] = {}

    class Grab(EpochEnd):
        def on_train_begin(self, run_context: RunContext) -> None:
            holder["rc"] = run_context

    def stopping() -> Any:
        for i, batch in enumerate(data):
            if i == 5:
                holder["rc"].request_stop("signal")
            yield batch

    class Once:
        def __iter__(self) -> Any:
            return stopping()

    cb = Grab()
    model.train(3, Once(), callbacks=[cb])
    assert [s["step"] for s in cb.seen] == [6]


def test_callback_error_in_epoch_end_after_plain_loop_is_named() -> None:
    class Boom(Callback):
        def on_train_epoch_end(self, run_context: RunContext) -> None:
            raise ValueError("boom")

    net = make_net()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(CallbackError, match="Boom"):
        model.train(1, make_data(), callbacks=[Boom()])


@pytest.mark.parametrize("watches", [False, True])
def test_a_callback_that_watches_steps_sees_them_current_without_step_hooks(
    watches: bool,
) -> None:
    """``watches_steps`` (ProgressBar's drawing thread reads cb_params between hooks): the
    loop keeps cur_step_num, net_outputs and train_dataset_element current at every step;
    without it, and without step hooks, they are written once at the epoch's end."""
    data = make_data()
    seen: list[tuple[int, Any, Any]] = []
    holder: dict[str, RunContext] = {}

    class Watch(EpochEnd):
        watches_steps = watches

        def on_train_begin(self, run_context: RunContext) -> None:
            holder["rc"] = run_context

    def watched() -> Any:  # reads cb_params between steps, as another thread would
        for batch in data:
            cb = holder["rc"].original_args()
            seen.append((cb.cur_step_num, cb.net_outputs, cb.train_dataset_element))
            yield batch

    class Once:
        def __iter__(self) -> Any:
            return watched()

    net = make_net()
    cb = Watch()
    Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1)).train(
        1, Once(), callbacks=[cb]
    )
    steps = [step for step, _, _ in seen]
    if watches:
        assert steps == list(range(len(data)))
        assert all(isinstance(out, torch.Tensor) for _, out, _ in seen[1:])
        assert all(el is batch for (_, _, el), batch in zip(seen[1:], data, strict=False))
    else:
        assert steps == [0] * len(data)
    assert cb.seen[0]["step"] == len(data) and cb.seen[0]["element"] is data[-1]


class Named(Callback):
    """Names the steps it needs (``next_step_end``) and records the steps it is called at."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.due: float = every
        self.called: list[tuple[int, float]] = []

    @property
    def next_step_end(self) -> float | None:
        return self.due

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.called.append((cb.cur_step_num, float(cb.net_outputs.detach())))
        if cb.cur_step_num >= self.due:
            self.due = cb.cur_step_num + self.every


def _losses_of_each_step(offset: dict[int, float]) -> tuple[Model, list[float]]:
    """A model whose loss at step ``n`` (1-based) has ``offset[n]`` added (a constant: the
    gradients stay finite), and the list the losses of its steps are appended to."""
    losses: list[float] = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(out, y) + offset.get(len(losses) + 1, 0.0)
        losses.append(float(loss.detach()))
        return loss

    net = make_net()
    return Model(net, loss_fn, torch.optim.SGD(net.parameters(), lr=0.1)), losses


def test_an_inline_step_calls_a_callback_that_names_its_steps_only_at_them() -> None:
    """``next_step_end``: after the run's first (checked) step, an inline step with a finite
    loss skips the hook of a callback that names its steps until one is due; the callbacks
    that need every step get theirs, in order, at every step; a loss that is not finite
    calls it at once."""
    data = make_data()  # 6 batches an epoch
    model, losses = _losses_of_each_step({9: float("inf"), 10: float("nan")})
    named, every = Named(4), StepEnd()
    order: list[str] = []
    named_hook, every_hook = named.on_train_step_end, every.on_train_step_end
    named.on_train_step_end = lambda rc: order.append("named") or named_hook(rc)  # type: ignore[method-assign]
    every.on_train_step_end = lambda rc: order.append("every") or every_hook(rc)  # type: ignore[method-assign]
    model.train(2, data, callbacks=[named, every])
    assert [step for step, _ in named.called] == [1, 4, 8, 9, 10, 12]
    for step, loss in named.called:
        assert loss == losses[step - 1] or (np.isnan(loss) and np.isnan(losses[step - 1]))
    assert order.count("every") == 12
    assert order[:3] == ["named", "every", "every"]  # step 1 (both, in order), step 2
    assert order[4:6] == ["named", "every"]  # step 4: in the callbacks' order


def test_a_callback_that_names_its_steps_is_called_at_every_step_that_is_not_inline() -> None:
    """Batches that are not a plain ``(x, y)`` (here dicts) run ``train_step``, which reads
    no loss: every hook, at every step."""
    data = [{"input": x, "label": y} for x, y in make_data()]  # Sequential.forward(input)
    net = make_net()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    named = Named(4)
    model.train(1, data, callbacks=[named])
    assert [step for step, _ in named.called] == [1, 2, 3, 4, 5, 6]
