"""ProgressBar: draws on a terminal, silent elsewhere; Model adds it only on a TTY."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from trainledger.callbacks.monitors import LossMonitor
from trainledger.callbacks.progress import ProgressBar, default_terminal
from trainledger.callbacks.progress_line import BarStyle, HeldLines, Task, render_line
from trainledger.callbacks.progress_ticker import TICKER
from trainledger.run.callback import Callback
from trainledger.run.callback_manager import CallbackManager

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
    # each pair starts a line (first after the cursor was hidden, then after the bar's line
    # was cleared), in the order printed
    first, second = (re.search(rf"(^\x1b\[\?25l|\r)out {i}\nerr {i}\n", text) for i in (1, 2))
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
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no carriage-return redraws there is nothing to hold lines for: stdout is left
    alone, and the bar is one line at the end."""
    monkeypatch.setenv("TERM", "dumb")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    seen: list[tuple[object, str]] = []

    class Look(Callback):
        def on_train_step_end(self, run_context: object) -> None:
            seen.append((sys.stdout, capsys.readouterr().out))

    stdout = sys.stdout
    model().train(1, data(n=32), callbacks=[LossMonitor(1), ProgressBar(console), Look()])
    assert all(stream is stdout for stream, _ in seen)  # not held
    assert seen[1][1].startswith("epoch: 1 step: 2,")  # printed as it came
    assert out.getvalue().count("\n") == 1 and out.getvalue().endswith("\n")  # one line
    assert "4/4" in out.getvalue()


class _SlowBatches:
    """A dataset whose batches take ``delay`` seconds each (a slow loader): the bar's thread
    must show progress while the epoch runs, not only at its end."""

    def __init__(self, batches: list[object], delay: float) -> None:
        self.batches, self.delay = batches, delay

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[object]:
        for batch in self.batches:
            time.sleep(self.delay)
            yield batch


def _train_slowly_and_check_the_lines() -> None:
    """Train 20 slow steps under a bar drawn every 20 ms: the thread must have drawn lines
    mid-epoch, and nothing once the bar closed."""
    out = io.StringIO()
    bar = ProgressBar(Console(file=out, force_terminal=True, width=120), refresh_interval=0.02)
    model().train(1, _SlowBatches(data(n=160), delay=0.03), callbacks=bar)
    counts = {int(m.group(1)) for m in re.finditer(r" (\d+)/20 ", out.getvalue())}
    assert counts & set(range(1, 20)), counts  # mid-epoch lines, drawn by the thread
    assert 20 in counts and "loss" in out.getvalue()
    assert not TICKER.showing
    drawn = out.getvalue()
    time.sleep(0.1)
    assert out.getvalue() == drawn  # nothing drawn after the bar closed


def test_the_bar_draws_from_a_thread_with_no_step_hook() -> None:
    """The default bar runs no code in a training step: the ticker's thread draws the step
    count and loss the loop keeps current for it (``watches_steps``)."""
    assert not CallbackManager([ProgressBar()]).has("on_train_step_end")
    assert not CallbackManager([ProgressBar()]).has("on_eval_step_end")
    assert CallbackManager([ProgressBar(refresh_interval=0)]).has("on_train_step_end")
    _train_slowly_and_check_the_lines()


def test_a_bar_whose_thread_cannot_draw_does_not_stop_training() -> None:
    class FailsOffTheMainThread(io.StringIO):
        def write(self, text: str) -> int:
            if threading.current_thread() is not threading.main_thread():
                raise OSError("terminal gone")
            return super().write(text)

    out = FailsOffTheMainThread()
    bar = ProgressBar(Console(file=out, force_terminal=True, width=120), refresh_interval=0.01)
    trained = model()
    trained.train(2, _SlowBatches(data(n=32), delay=0.02), callbacks=[bar, LossMonitor(1)])
    assert "epoch 2/2" in out.getvalue() and not bar.active
    _train_slowly_and_check_the_lines()  # the thread still draws the next bar


def test_a_forked_child_gets_a_drawing_thread_of_its_own() -> None:
    """After fork the parent's thread does not exist in the child (and may have held the
    ticker's condition): the child's first bar starts a new one."""
    _train_slowly_and_check_the_lines()  # the parent's thread exists
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            calls: list[int] = []
            TICKER.show(lambda: calls.append(1), 0.01)
            time.sleep(0.2)
            code = 0 if calls else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_held_lines_lose_nothing_when_another_thread_takes_them() -> None:
    """The training thread prints while the bar's thread takes the held lines: every line
    comes out once, in order, and no unfinished line is split."""
    held = HeldLines(io.StringIO())
    taken: list[str] = []
    done = threading.Event()

    def take() -> None:
        while not done.is_set():
            taken.append(held.take())
        taken.append(held.take(whole_lines=False))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        taker = threading.Thread(target=take)
        taker.start()
        for i in range(20000):
            held.write(f"line {i}")
            held.write("\n")
        done.set()
        taker.join()
    finally:
        sys.setswitchinterval(interval)
    assert all(chunk == "" or chunk.endswith("\n") for chunk in taken[:-1])
    assert "".join(taken) == "".join(f"line {i}\n" for i in range(20000))


def test_the_default_terminal_is_kept_while_stdout_and_its_environment_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Creating a rich Console and reading its properties cost about 80 µs a run: they are
    kept, and read again when stdout is another stream or a variable rich reads changed."""
    first = default_terminal()
    assert default_terminal() is first
    monkeypatch.setenv("NO_COLOR", "1")
    second = default_terminal()
    assert second is not first and second.console.no_color and not second.style.color
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    third = default_terminal()
    assert third is not second and third.console.file is sys.stdout and not third.is_terminal


def _pty(monkeypatch: pytest.MonkeyPatch, columns: int) -> tuple[int, io.TextIOWrapper]:
    """stdout on a new pseudo-terminal ``columns`` wide; returns (master fd, stdout)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    stdout = os.fdopen(slave, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    return master, stdout


def test_the_default_terminal_is_as_wide_as_stdout_and_follows_a_resize(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default bar asks stdout's own size (one ioctl, not rich's walk over the standard
    streams): a resize is seen at the next ask; COLUMNS, when set, wins as in rich."""
    import fcntl
    import struct
    import termios

    master, stdout = _pty(monkeypatch, 93)
    try:
        terminal = default_terminal()
        assert terminal.is_terminal and terminal.animate and terminal.width() == 93
        fcntl.ioctl(stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 24, 61, 0, 0))
        assert terminal.width() == 61
        monkeypatch.setenv("COLUMNS", "77")
        assert default_terminal().width() == 77
    finally:
        stdout.close()
        os.close(master)


def test_a_run_shorter_than_a_tick_is_drawn_once_with_no_cursor_codes() -> None:
    """A short run (a sweep's) is drawn once, when the bar closes: the held lines, then the
    final line, in one write, without hiding and showing the cursor or clearing a line that
    was never drawn."""
    out = io.StringIO()
    bar = ProgressBar(Console(file=out, force_terminal=True, width=100), refresh_interval=60)
    model().train(1, data(n=16), callbacks=[LossMonitor(1), bar])
    text = out.getvalue()
    assert "\x1b[?25" not in text and "   \r" not in text
    printed = r"epoch: 1 step: 1, loss is [^\n]+\nepoch: 1 step: 2, [^\n]+\n"
    assert re.fullmatch(printed + r"\r.*2/2.*\n", text)


def test_a_bar_drawn_by_its_thread_hides_the_cursor_once_and_shows_it_at_the_end() -> None:
    out = io.StringIO()
    bar = ProgressBar(Console(file=out, force_terminal=True, width=120), refresh_interval=0.02)
    model().train(1, _SlowBatches(data(n=64), delay=0.03), callbacks=[LossMonitor(1), bar])
    text = out.getvalue()
    assert text.count("\x1b[?25l") == 1 and text.endswith("\n\x1b[?25h")
    assert text.index("\x1b[?25l") < text.index("\r")  # hidden before the first line


def test_the_thread_lingers_after_a_bar_then_sleeps_until_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waking the sleeping thread costs more CPU than a short run's bar: for LINGER seconds
    after a bar it keeps waking by itself, so a sweep's next bar needs no wake-up; then it
    sleeps, and a new bar wakes it."""
    from trainledger.callbacks import progress_ticker

    monkeypatch.setattr(progress_ticker, "LINGER", 0.3)
    calls: list[str] = []

    def first() -> None:
        calls.append("first")

    def second() -> None:
        calls.append("second")

    TICKER.show(first, 0.01)
    time.sleep(0.1)
    TICKER.hide(first)
    assert calls and set(calls) == {"first"}
    assert not TICKER.sleeping  # lingering: in a timed wait
    TICKER.show(second, 0.01)
    time.sleep(0.15)
    TICKER.hide(second)
    assert "second" in calls
    deadline = time.monotonic() + 5
    while not TICKER.sleeping and time.monotonic() < deadline:
        time.sleep(0.05)
    assert TICKER.sleeping
    calls.clear()
    TICKER.show(first, 0.01)
    time.sleep(0.1)
    TICKER.hide(first)
    assert calls and set(calls) == {"first"}


def test_a_descriptor_redirected_under_the_same_stdout_gets_no_bar(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``os.dup2`` of a file onto stdout's descriptor keeps the same ``sys.stdout`` object:
    the kept default terminal sees it (and sees it come back), so no escape codes land in the
    file."""
    master, stdout = _pty(monkeypatch, 100)
    saved = os.dup(stdout.fileno())
    log = tmp_path / "train.log"
    try:
        assert default_terminal().is_terminal
        with open(log, "wb") as file:
            os.dup2(file.fileno(), stdout.fileno())
        bar = ProgressBar()
        model().train(1, data(), callbacks=[bar])
        stdout.flush()
        assert not default_terminal().is_terminal
        assert "\x1b" not in log.read_text() and "\r" not in log.read_text()
        os.dup2(saved, stdout.fileno())  # back on the terminal
        assert default_terminal().is_terminal
    finally:
        os.close(saved)
        os.close(master)


def test_a_bar_with_a_shorter_interval_wakes_a_thread_in_a_long_wait() -> None:
    """After a bar drawn every minute, the next bar (drawn every 10 ms) is drawn at once, not
    when the thread's minute-long wait ends."""
    TICKER.show(lambda: None, 60.0)
    deadline = time.monotonic() + 5
    while TICKER._wait != 60.0 and time.monotonic() < deadline:  # the thread took it up
        time.sleep(0.01)
    assert TICKER._wait == 60.0
    calls: list[int] = []

    def draw() -> None:
        calls.append(1)

    TICKER.show(draw, 0.01)  # replaces the first bar
    time.sleep(0.3)
    TICKER.hide(draw)
    assert len(calls) >= 3
