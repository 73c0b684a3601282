"""StepLoop (the step loop Model and RecModel share) and the default-callback registry."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch

from tests.run.helpers import make_data, make_net
from trainledger.errors import CallbackError
from trainledger.run import (
    Callback,
    CallbackManager,
    CallbackParams,
    RunContext,
    StepLoop,
    defaults,
)


class _Step:
    """A stand-in for ``TrainStep``: the loop's view of a step, on the CPU."""

    device = None

    def __init__(self, run: Any, inline_parts: Any) -> None:
        self.run, self.inline_parts = run, inline_parts

    def move(self, batch: Any) -> Any:
        return batch


def _loop(callbacks: list[Callback], inline: bool = False) -> tuple[StepLoop, list[str]]:
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = torch.nn.functional.cross_entropy
    calls: list[str] = []

    def train_step(batch: Any) -> Any:
        calls.append("step")
        opt.zero_grad()
        loss = loss_fn(net(batch[0]), batch[1])
        loss.backward()
        opt.step()
        return loss

    manager = CallbackManager(callbacks)
    cb_params = CallbackParams(cur_step_num=0, cur_epoch_num=1, batch_num=None, net_outputs=None)
    rc = RunContext(cb_params)
    parts = (net, loss_fn, opt) if inline else None
    return StepLoop(manager, rc, _Step(train_step, lambda: parts)), calls


def test_run_epoch_counts_steps_and_learns_the_epoch_length() -> None:
    loop, calls = _loop([])
    loop.run_epoch(make_data(n=5, batch=1))
    assert calls == ["step"] * 5
    assert loop.cb_params.cur_step_num == 5 and loop.cb_params.batch_num == 5
    assert loop.cb_params.net_outputs.ndim == 0


def test_inline_parts_bypass_train_step() -> None:
    loop, calls = _loop([], inline=True)
    loop.run_epoch(make_data(n=4, batch=1))
    assert calls == [] and loop.cb_params.cur_step_num == 4


def test_a_stop_request_ends_the_epoch_after_the_step() -> None:
    seen: list[int] = []

    class StopAtTwo(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            seen.append(run_context.original_args().cur_step_num)
            if len(seen) == 2:
                run_context.request_stop()

    loop, calls = _loop([StopAtTwo()])
    loop.run_epoch(make_data(n=6, batch=1))
    assert seen == [1, 2] and len(calls) == 2


def test_a_failing_step_end_hook_still_reaches_the_later_callbacks() -> None:
    later: list[int] = []

    class Boom(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            raise RuntimeError("boom")

    class Later(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            later.append(run_context.original_args().cur_step_num)

    loop, _ = _loop([Boom(), Later()])
    with pytest.raises(CallbackError, match="Boom"):
        loop.run_epoch(make_data(n=3, batch=1))
    assert later == [1]


class _FailingBackward(torch.autograd.Function):
    """The identity, whose backward raises: a step that fails after its forward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("backward failed")


@pytest.mark.parametrize("hooked", [False, True])
def test_an_inline_step_that_fails_in_backward_leaves_its_own_loss(hooked: bool) -> None:
    """With step hooks or without, the inline step's ``net_outputs`` is written after the
    forward (where a hand loop drops its last loss): a failing backward leaves that step's
    loss in cb_params, and the step hooks saw every earlier step's own loss."""
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses: list[torch.Tensor] = []
    seen: list[torch.Tensor] = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(out, y)
        if len(losses) == 2:
            loss = _FailingBackward.apply(loss)
        losses.append(loss)
        return loss

    class Seen(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            seen.append(run_context.original_args().net_outputs)

    cb_params = CallbackParams(cur_step_num=0, cur_epoch_num=1, batch_num=None, net_outputs=None)
    manager = CallbackManager([Seen()] if hooked else [])
    loop = StepLoop(
        manager, RunContext(cb_params), _Step(lambda b: None, lambda: (net, loss_fn, opt))
    )
    with pytest.raises(RuntimeError, match="backward failed"):
        loop.run_epoch(make_data(n=4, batch=1))
    assert cb_params.net_outputs is losses[2] and cb_params.cur_step_num == 3
    assert [id(t) for t in seen] == [id(t) for t in (losses[:2] if hooked else [])]


def test_registered_default_callbacks_are_added_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainledger.run import Model

    class Extra(Callback):
        pass

    registry = list(defaults._FACTORIES)
    monkeypatch.setattr(defaults, "_FACTORIES", registry)
    defaults.add_default_callback(lambda given: None if given else Extra())
    defaults.add_default_callback(lambda given: Extra())
    seen: list[list[Callback]] = []

    class Grab(Callback):
        def on_train_begin(self, run_context: RunContext) -> None:
            seen.append(run_context.original_args().list_callback)

    net = make_net()
    model = Model(net, torch.nn.functional.cross_entropy, torch.optim.SGD(net.parameters(), 0.1))
    model.train(1, make_data(n=2, batch=1), callbacks=Grab())
    assert not any(isinstance(cb, Extra) for cb in seen[-1])  # not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    model.train(1, make_data(n=2, batch=1), callbacks=Grab())
    assert sum(isinstance(cb, Extra) for cb in seen[-1]) == 1  # the first saw Grab: None
    with pytest.raises(TypeError, match="expected a callable"):
        defaults.add_default_callback("ProgressBar")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "source", ["from trainledger import Model", "from trainledger.run import Model"]
)
def test_both_imports_of_model_register_the_progress_bar(source: str) -> None:
    code = (
        f"{source}\n"
        "from trainledger.run.defaults import default_callbacks\n"
        "import sys; sys.stdout.isatty = lambda: True\n"
        "print([type(cb).__name__ for cb in default_callbacks([])])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ProgressBar']"
