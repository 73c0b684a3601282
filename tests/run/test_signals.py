"""SIGINT/SIGTERM during Model.train: stop after the step; a second Ctrl-C aborts."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import torch

from trainledger.run.callback import RunContext
from trainledger.run.model import Model
from trainledger.run.signals import stop_on_signals

from .helpers import Recorder, make_data, make_net


def _model() -> Model:
    net = make_net()
    return Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))


class SendSignal(Recorder):
    def __init__(self, signum: int, times: int = 1) -> None:
        super().__init__(fields=("stop_reason", "exception"))
        self.signum = signum
        self.times = times

    def on_train_step_end(self, run_context: RunContext) -> None:
        super().on_train_step_end(run_context)
        if run_context.original_args().cur_step_num == 2:
            for _ in range(self.times):
                os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_requests_stop_and_end_hooks_run(signum: int) -> None:
    before = signal.getsignal(signum)
    rec = SendSignal(signum)
    _model().train(5, make_data(n=40), callbacks=rec)
    assert rec.events.count("on_train_step_end") == 2
    assert rec.events[-2:] == ["on_train_epoch_end", "on_train_end"]
    assert rec.params[-1]["stop_reason"] == "signal"
    assert signal.getsignal(signum) is before  # handlers restored


def test_second_sigint_aborts_with_keyboard_interrupt() -> None:
    rec = SendSignal(signal.SIGINT, times=2)
    with pytest.raises(KeyboardInterrupt):
        _model().train(5, make_data(n=40), callbacks=rec)
    assert rec.events[-1] == "on_train_end"  # writers still finalize
    assert isinstance(rec.params[-1]["exception"], KeyboardInterrupt)


def test_off_main_thread_is_a_no_op() -> None:
    result: dict[str, object] = {}

    def work() -> None:
        rc = RunContext({})
        with stop_on_signals(rc) as installed:
            result["installed"] = installed
        rec = Recorder(fields=("stop_reason",))
        _model().train(1, make_data(n=8), callbacks=rec)
        result["reason"] = rec.params[-1]["stop_reason"]

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=60)
    assert result == {"installed": False, "reason": "completed"}


def test_main_thread_installs_and_restores() -> None:
    before = signal.getsignal(signal.SIGINT)
    rc = RunContext({})
    with stop_on_signals(rc) as installed:
        assert installed
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def test_signal_in_fit_skips_the_pending_evaluation() -> None:
    net = make_net()
    model = Model(
        net,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.1),
        metrics={"acc"},
    )
    rec = SendSignal(signal.SIGINT)
    model.fit(3, make_data(n=40), make_data(n=8), callbacks=rec)
    assert "on_eval_begin" not in rec.events  # the user asked to stop now
    assert rec.events[-2:] == ["on_train_epoch_end", "on_train_end"]
    assert rec.params[-1]["stop_reason"] == "signal"


def test_the_users_own_handlers_come_back_after_training() -> None:
    """Whatever was installed before (a Python function, SIG_IGN) is installed again after,
    and a nested run (fit -> eval) restores its outer run's handler."""
    calls: list[int] = []

    def mine(signum: int, frame: object) -> None:
        calls.append(signum)

    old_int = signal.signal(signal.SIGINT, mine)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with stop_on_signals(RunContext({})):
            outer = signal.getsignal(signal.SIGINT)
            with stop_on_signals(RunContext({})):
                assert signal.getsignal(signal.SIGINT) is not outer
            assert signal.getsignal(signal.SIGINT) is outer
        assert signal.getsignal(signal.SIGINT) is mine
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        assert calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
