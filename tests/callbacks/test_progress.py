"""ProgressBar: draws on a terminal, silent elsewhere; Model adds it only on a TTY."""

from __future__ import annotations

import io
import re
import sys

import pytest
from rich.console import Console

from trainledger.callbacks.monitors import LossMonitor
from trainledger.callbacks.progress import ProgressBar
from trainledger.callbacks.progress_line import BarStyle, Task, render_line
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


def test_stderr_under_the_bar_is_held_and_printed_above_it() -> None:
    """Warnings and other stderr lines do not land on the bar's line: like stdout's, they are
    held and written (in the order printed) before the next draw; both streams come back."""
    stdout, stderr = sys.stdout, sys.stderr

    class Talk(Callback):
        def on_train_step_end(self, run_context: object) -> None:
            step = run_context.original_args().cur_step_num  # type: ignore[attr-defined]
            print(f"out {step}")
            print(f"err {step}", file=sys.stderr)

    out = io.StringIO()
    model().train(
        1,
        data(n=16),
        callbacks=[Talk(), ProgressBar(Console(file=out, force_terminal=True, width=80), 0)],
    )
    assert sys.stdout is stdout and sys.stderr is stderr
    text = out.getvalue()
    # each pair starts a line (after the bar's line was cleared), in the order printed
    first, second = (re.search(rf"(^|\r)out {i}\nerr {i}\n", text) for i in (1, 2))
    assert first and second and first.start() < second.start()


def test_the_line_fits_the_console_and_ends_the_run_with_a_newline() -> None:
    """Drawn after a carriage return, the line must never wrap (the next draw would then
    overwrite only its last row): at most width - 1 cells, the bar dropped when narrow."""
    for width in (120, 40, 12):
        out = io.StringIO()
        console = Console(file=out, force_terminal=True, width=width, color_system=None)
        model().train(2, data(n=32), callbacks=ProgressBar(console, refresh_interval=0))
        text = out.getvalue()
        assert text.endswith("\n") or text.endswith("\x1b[?25h")
        lines = [seg for chunk in text.split("\n") for seg in chunk.split("\r") if seg.strip()]
        assert lines and all(len(seg) <= width - 1 for seg in lines), (width, lines)
        if width == 120:
            assert any("epoch 2/2 ━" in seg and " 4/4 " in seg for seg in lines)


def test_render_line_without_a_known_total() -> None:
    task = Task("epoch 1", None, completed=3, info="loss 0.5", started=0.0)
    line = render_line(task, 61.0, 80, BarStyle(color=False, unicode=True))
    assert line.startswith("\r") and len(line) == 80  # "\r" + 79 cells
    assert line[1:].rstrip() == "epoch 1 3/? loss 0.5 0:01:01"


def test_a_stream_kept_from_training_writes_through_after_the_bar_closes() -> None:
    kept: list[object] = []

    class Keep(Callback):
        def on_train_step_end(self, run_context: object) -> None:
            kept.append(sys.stdout)

    out = io.StringIO()
    model().train(
        1, data(n=8), callbacks=[Keep(), ProgressBar(Console(file=out, force_terminal=True), 0)]
    )
    target = io.StringIO()
    held = kept[0]
    assert held is not sys.stdout
    held.target = target  # type: ignore[attr-defined]
    print("after", file=held)  # type: ignore[arg-type]
    assert target.getvalue() == "after\n"


def test_a_dumb_terminal_gets_the_printed_lines_as_they_come_and_only_the_final_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "dumb")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    seen: list[str] = []

    class Look(Callback):
        def on_train_step_end(self, run_context: object) -> None:
            seen.append(out.getvalue())

    model().train(1, data(n=32), callbacks=[LossMonitor(1), ProgressBar(console, 0), Look()])
    assert "epoch: 1 step: 1," in seen[1] and "\r" not in seen[-1]  # no bar while training
    assert out.getvalue().count("4/4") == 1 and out.getvalue().endswith("\n")
