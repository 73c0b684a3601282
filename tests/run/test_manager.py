"""CallbackManager: validation, fan-out, skipped hooks, error propagation with end hooks."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from trainledger.errors import CallbackError
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.run.callback_manager import CallbackManager, hook_function
from trainledger.run.model import Model

from .helpers import OldStyle, Recorder, make_data, make_net


class Boom(Callback):
    def __init__(self, hook: str, exc: BaseException | None = None, at_step: int = 0) -> None:
        self.hook = hook
        self.exc = exc or RuntimeError("boom")
        self.at_step = at_step
        self.exited_with: Any = "not exited"

    def __exit__(self, *exc_info: object) -> None:
        self.exited_with = exc_info[0]

    def __getattribute__(self, name: str) -> Any:
        if name == object.__getattribute__(self, "hook"):

            def fail(run_context: RunContext) -> None:
                if run_context.original_args().get("cur_step_num", 1) >= self.at_step:
                    raise self.exc

            return fail
        return object.__getattribute__(self, name)


def _model() -> Model:
    net = make_net()
    return Model(
        net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), metrics={"acc"}
    )


def test_non_callback_is_type_error() -> None:
    with pytest.raises(TypeError, match=r"callbacks\[1\] expected a trainledger.Callback.*int"):
        CallbackManager([Recorder(), 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="received: str"):
        CallbackManager("nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"callbacks\[0\]"):
        _model().train(1, make_data(), callbacks=[object()])  # type: ignore[list-item]


def test_fan_out_in_list_order() -> None:
    order: list[str] = []

    class Named(Callback):
        def __init__(self, name: str) -> None:
            self.name = name

        def on_train_begin(self, run_context: RunContext) -> None:
            order.append(self.name)

    manager = CallbackManager([Named("a"), Named("b"), Named("c")])
    with manager:
        manager.call("on_train_begin", RunContext({}))
    assert order == ["a", "b", "c"]


def test_hooks_nobody_overrides_are_skipped() -> None:
    manager = CallbackManager([Callback(), OldStyle()])
    assert not manager.has("on_eval_step_end")
    assert manager.has("on_train_step_end")  # via the old name step_end
    assert hook_function(Callback(), "on_train_step_end") is None
    old = OldStyle()
    assert hook_function(old, "on_train_step_end") == old.step_end


def test_callbacks_entered_and_exited() -> None:
    log: list[str] = []

    class Ctx(Callback):
        def __enter__(self) -> Ctx:
            log.append("enter")
            return self

        def __exit__(self, *exc_info: object) -> None:
            log.append(f"exit {exc_info[0].__name__ if exc_info[0] else None}")

    _model().train(1, make_data(n=8), callbacks=[Ctx()])
    assert log == ["enter", "exit None"]


@pytest.mark.parametrize(
    ("hook", "expected_others"),
    [
        (
            "on_train_step_end",
            [
                "on_train_begin",
                "on_train_epoch_begin",
                "on_train_step_begin",
                "on_train_step_end",
                "on_train_epoch_end",
                "on_train_end",
            ],
        ),
        (
            "on_train_step_begin",
            [
                "on_train_begin",
                "on_train_epoch_begin",
                "on_train_step_begin",
                "on_train_epoch_end",
                "on_train_end",
            ],
        ),
        (
            "on_train_epoch_end",
            [
                "on_train_begin",
                "on_train_epoch_begin",
                "on_train_step_begin",
                "on_train_step_end",
                "on_train_epoch_end",
                "on_train_end",
            ],
        ),
        ("on_train_begin", ["on_train_begin", "on_train_end"]),
        (
            "on_train_end",
            [
                "on_train_begin",
                "on_train_epoch_begin",
                "on_train_step_begin",
                "on_train_step_end",
                "on_train_epoch_end",
                "on_train_end",
            ],
        ),
    ],
)
def test_failing_callback_others_still_get_end_hooks(hook: str, expected_others: list[str]) -> None:
    before = Recorder(fields=("exception", "stop_reason"))
    after = Recorder(fields=("exception", "stop_reason"))
    boom = Boom(hook)
    with pytest.raises(CallbackError) as info:
        _model().train(
            1 if hook == "on_train_end" else 3, make_data(n=8), callbacks=[before, boom, after]
        )
    err = info.value
    assert err.callback == "Boom" and err.hook == hook
    assert f"Boom.{hook}" in str(err) and "boom" in str(err)
    assert isinstance(err.__cause__, RuntimeError)
    assert before.events == expected_others
    if hook == "on_train_begin":
        assert after.events == []  # it never began, so it gets no end
    elif hook == "on_train_step_begin":
        assert after.events == [e for e in expected_others if e != "on_train_step_begin"]
    else:
        assert after.events == expected_others
    assert boom.exited_with is CallbackError
    last = before.params[-1]
    if hook != "on_train_end":
        assert last["exception"] is err and last["stop_reason"] == "error"


def test_model_error_gives_end_hooks_with_exception() -> None:
    class BadLoss(torch.nn.Module):
        calls = 0

        def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            BadLoss.calls += 1
            if BadLoss.calls == 3:
                raise FloatingPointError("diverged")
            return torch.nn.functional.cross_entropy(out, y)

    rec = Recorder(fields=("exception", "stop_reason"))
    net = make_net()
    model = Model(net, BadLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(FloatingPointError):
        model.train(2, make_data(n=32), callbacks=rec)
    assert rec.events[-2:] == ["on_train_epoch_end", "on_train_end"]
    assert rec.events.count("on_train_step_end") == 2  # the failed step reports nothing
    assert isinstance(rec.params[-1]["exception"], FloatingPointError)


def test_end_hook_failure_does_not_stop_others_end_hooks() -> None:
    a, c = Recorder(), Recorder()
    with pytest.raises(CallbackError, match="Boom.on_train_end"):
        _model().train(1, make_data(n=8), callbacks=[a, Boom("on_train_end"), c])
    assert a.events[-1] == c.events[-1] == "on_train_end"


def test_error_path_failure_is_noted_not_replacing() -> None:
    second = Boom("on_train_end", exc=ValueError("also broken"))
    with pytest.raises(CallbackError) as info:
        _model().train(1, make_data(n=8), callbacks=[Boom("on_train_step_end"), second])
    assert info.value.hook == "on_train_step_end"
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:  # Python >= 3.11
        assert any("also broken" in n for n in notes)


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)])
def test_keyboard_interrupt_and_system_exit_not_wrapped(exc: BaseException) -> None:
    rec = Recorder(fields=("exception",))
    with pytest.raises(type(exc)):
        _model().train(2, make_data(n=8), callbacks=[Boom("on_train_step_end", exc), rec])
    assert rec.events[-1] == "on_train_end"
    assert rec.params[-1]["exception"] is exc


def test_eval_callback_failure_runs_eval_end() -> None:
    rec = Recorder()
    with pytest.raises(CallbackError, match="on_eval_step_end"):
        _model().eval(make_data(n=8), callbacks=[Boom("on_eval_step_end"), rec])
    assert rec.events[-2:] == ["on_eval_epoch_end", "on_eval_end"]


def test_fit_eval_failure_runs_train_ends() -> None:
    rec = Recorder()
    with pytest.raises(CallbackError, match="on_eval_begin"):
        _model().fit(2, make_data(n=8), make_data(n=8), callbacks=[rec, Boom("on_eval_begin")])
    assert rec.events[-3:] == ["on_eval_end", "on_train_epoch_end", "on_train_end"]


def test_phase_wrapper_directly() -> None:
    rec = Recorder()
    manager = CallbackManager([rec])
    rc = RunContext(CallbackParams())
    with manager, pytest.raises(ZeroDivisionError):
        with manager.phase(rc, "on_eval_begin", "on_eval_end"):
            1 / 0  # noqa: B018
    assert rec.events == ["on_eval_begin", "on_eval_end"]
    assert isinstance(rc.original_args().exception, ZeroDivisionError)


def test_two_step_end_failures_name_the_first_and_note_the_second() -> None:
    """The step loop calls step-end hooks itself (``functions``/``failed_in``): same result as
    ``call_all``: every callback gets the hook, the first failure is raised, later ones noted."""
    after = Recorder()
    with pytest.raises(CallbackError) as info:
        _model().train(
            1,
            make_data(n=8),
            callbacks=[
                Boom("on_train_step_end"),
                Boom("on_train_step_end", exc=ValueError("second")),
                after,
            ],
        )
    assert info.value.hook == "on_train_step_end" and isinstance(info.value.__cause__, RuntimeError)
    assert any("second" in note for note in getattr(info.value, "__notes__", []))
    assert after.events.count("on_train_step_end") == 1
    assert after.events[-2:] == ["on_train_epoch_end", "on_train_end"]
