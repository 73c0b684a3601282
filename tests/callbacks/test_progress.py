"""ProgressBar: draws on a terminal, silent elsewhere; Model adds it only on a TTY."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console

from trainledger.callbacks.progress import ProgressBar
from trainledger.run.callback import Callback

from ._train import data, model


def test_quiet_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    bar = ProgressBar()
    model(metrics={"acc"}).fit(2, data(), data(), callbacks=bar)
    assert capsys.readouterr().out == ""
    assert not bar.active


def test_draws_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    bar = ProgressBar(console=console, refresh_interval=0)
    model(metrics={"acc"}).fit(2, data(n=32), data(), callbacks=bar)
    text = out.getvalue()
    assert "epoch 2/2" in text
    assert "4/4" in text
    assert "steps/s" in text and "loss" in text
    assert "acc" in text  # evaluation results at epoch end
    assert not bar.active  # stopped at on_train_end


def test_model_adds_a_bar_only_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[Callback]] = []

    class Grab(Callback):
        def on_train_begin(self, run_context) -> None:  # type: ignore[no-untyped-def]
            seen.append(list(run_context.original_args().list_callback))

    model().train(1, data(), callbacks=Grab())
    assert not any(isinstance(cb, ProgressBar) for cb in seen[-1])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    model().train(1, data(), callbacks=Grab())
    assert sum(isinstance(cb, ProgressBar) for cb in seen[-1]) == 1
    mine = ProgressBar(console=Console(file=io.StringIO()))
    model().train(1, data(), callbacks=[Grab(), mine])
    bars = [cb for cb in seen[-1] if isinstance(cb, ProgressBar)]
    assert bars == [mine]  # not added twice
    quiet = model()
    quiet.show_progress = False
    quiet.train(1, data(), callbacks=Grab())
    assert not any(isinstance(cb, ProgressBar) for cb in seen[-1])


def test_bad_refresh_interval() -> None:
    with pytest.raises(ValueError, match="refresh_interval expected seconds >= 0"):
        ProgressBar(refresh_interval=-1)


def test_lines_printed_under_the_bar_come_out_in_order_even_when_training_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """LossMonitor's lines are held while the bar is drawn and printed above it at its next
    draw; none is lost, including those printed just before a failure."""
    from trainledger.callbacks.monitors import LossMonitor
    from trainledger.errors import CallbackError

    class Fail(Callback):
        def on_train_step_end(self, run_context: object) -> None:
            cb = run_context.original_args()  # type: ignore[attr-defined]
            if cb.cur_step_num == 7:
                print("last words")
                raise RuntimeError("boom")

    out = io.StringIO()
    bar = ProgressBar(console=Console(file=out, force_terminal=True, width=120))
    with pytest.raises(CallbackError):
        model().train(3, data(n=32), callbacks=[LossMonitor(1), bar, Fail()])
    assert sys.stdout is not None and not bar.active
    printed = capsys.readouterr().out + out.getvalue()
    steps = [f"epoch: {e} step: {s}," for e in (1, 2) for s in (1, 2, 3, 4)][:7]
    positions = [printed.index(line) for line in steps]
    assert positions == sorted(positions)
    assert printed.index("last words") > positions[-1]
