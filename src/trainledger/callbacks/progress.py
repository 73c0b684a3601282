"""``ProgressBar``: one line with epoch, a bar, step, loss, steps/s and the elapsed time.

Quiet when the console is not a terminal (CI logs, pipes, files, Jupyter) and on every rank but
0 under torch.distributed: it then does nothing at all, so it is safe to leave in scripts.
``Model.train`` adds one by default on a TTY.

Cost: the line is drawn every ``refresh_interval`` seconds by a thread (``progress_ticker``,
one for the process), and by the training thread at epoch ends (but the last) and when the bar
closes, as a plain string after a carriage return (``progress_line``), not through
``rich.progress``, whose refreshes cost a small CPU step's worth of time each. The bar has no
step hook, so a training step runs none of its code: on a small CPU step, any Python called per
step costs microseconds (it runs between torch ops, with cold caches); a hook that only read
the clock measured 1.6 µs of a 270 µs step. Only ``refresh_interval=0`` (a draw after every
step: deterministic output, for tests) draws from step hooks.

Lines printed meanwhile to stdout or stderr (``LossMonitor``'s, the user's, warnings) are held
and printed together just before the next draw: a line shows up at most ``refresh_interval``
late, and every held line is printed when the bar closes (also when training fails). On a dumb
terminal (``TERM=dumb``) nothing is held and only the final line is drawn.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, NamedTuple

from rich.console import Console

from trainledger.callbacks.progress_line import BarStyle, HeldLines, Task, render_line
from trainledger.callbacks.progress_ticker import TICKER
from trainledger.run import Callback, RunContext, is_main_rank, loss_value, stdout_is_tty

__all__ = ["ProgressBar"]

_HIDE_CURSOR, _SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


class ProgressBar(Callback):
    """Show training (and evaluation) progress.

    Args:
        console: decides whether and how wide to draw (and where: its file); default a new
            ``rich.console.Console`` on stdout.
        refresh_interval: seconds between draws, made by a drawing thread (one for the
            process); 0 draws after every step instead, from the step hooks (deterministic
            output, but a draw costs more than a small training step).
    """

    watches_steps = True  # the drawing thread reads cur_step_num and net_outputs

    def __init__(self, console: Console | None = None, refresh_interval: float = 0.25) -> None:
        if not isinstance(refresh_interval, (int, float)) or refresh_interval < 0:
            raise ValueError(
                "ProgressBar refresh_interval expected seconds >= 0, "
                f"received: {refresh_interval!r}"
            )
        self._given_console = console
        self._interval = float(refresh_interval)
        self._terminal: Terminal | None = None  # what it draws with, set while a bar is shown
        self._out: Any = None  # the stream the line is drawn on (the real stdout)
        self._style = BarStyle(color=False, unicode=False)
        self._animate = True  # False on a dumb terminal: only the final line
        self._owner: str | None = None  # "train" or "eval": who opened the display
        self._task: Task | None = None
        self._eval_task: Task | None = None
        self._params: Any = None  # the run's cb_params, read by the drawing thread
        self._start = 0.0
        self._first_step = 0
        self._epoch_first_step = 0
        self._held: HeldLines | None = None  # sys.stdout while the bar is shown
        self._held_err: HeldLines | None = None  # sys.stderr, sharing the held parts
        self._drawn = ""  # the line last written
        self._width = 80  # the console's width: asked at the open and by each tick
        self._lock = threading.Lock()  # one drawer at a time: the ticker's thread or a hook
        self._ticking = False  # whether the ticker's draws are still wanted
        self._cursor_hidden = False  # hidden by the first draw, shown by the final one
        if self._interval == 0:  # hooks only then: the manager skips hooks a callback lacks
            self.on_train_step_end = self._draw_step  # type: ignore[method-assign]
            self.on_eval_step_end = self._draw_step  # type: ignore[method-assign]

    @property
    def active(self) -> bool:
        """Whether a bar is being drawn right now (False off a terminal)."""
        return self._terminal is not None

    # --- display lifecycle ---------------------------------------------------------------
    def _open(self, owner: str, run_context: RunContext) -> bool:
        if self._terminal is not None:
            return True
        if not is_main_rank():
            return False  # one bar per job, not one per rank
        given = self._given_console
        terminal = terminal_of(given) if given is not None else default_terminal()
        if not terminal.is_terminal:
            return False
        self._terminal = terminal
        self._width = terminal.width()
        self._out = terminal.console.file  # resolved now: a default console follows sys.stdout
        self._style, self._animate = terminal.style, terminal.animate
        self._owner = owner
        self._params = run_context.original_args()
        if self._animate:  # a dumb terminal draws one line at the end: nothing to hold
            parts: list[str] = []  # one list: stdout and stderr lines keep their order
            self._held = HeldLines(sys.stdout, parts)
            self._held_err = HeldLines(sys.stderr, parts)
            sys.stdout, sys.stderr = self._held, self._held_err
            if self._interval > 0:
                self._ticking = True
                TICKER.show(self._tick, self._interval)
        return True

    def _tick(self) -> None:
        """The ticker's draw: the line as the run's cb_params have it now (at the console's
        width now: a resized terminal is followed within a tick)."""
        with self._lock:
            if self._ticking and self._terminal is not None:
                self._width = self._terminal.width()
                self._refresh()

    def _draw_step(self, run_context: RunContext) -> None:
        """The train and eval step hooks of a bar with ``refresh_interval=0``: what a tick
        draws, after every step."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        """Update the shown task from cb_params and draw it (call with the lock held)."""
        params = self._params
        if params is None:
            return
        if self._eval_task is not None:
            self._eval_task.completed = params.get("cur_step_num") or 0
        elif self._task is None or params.get("mode") == "eval":
            return  # inside fit, between an evaluation's fields and its first hook
        else:
            self._update(params, time.perf_counter())
        self._draw()

    def _draw(self, final: bool = False) -> None:
        """Print the held lines, then the bar's line (one write, one flush); at the close, a
        line already on screen as it would be drawn only gets its newline.

        The first draw hides the cursor and the final one shows it again; a run shorter than
        a tick is drawn once, at its close, and then needs neither (nor a line to clear)."""
        held = self._held
        if self._terminal is None or not (self._animate or final):
            return
        now = time.perf_counter()
        width = self._width
        text = held.take(whole_lines=not final) if held is not None else ""
        if text and not text.endswith("\n") and final:
            text += "\n"
        task = self._eval_task or self._task
        line = render_line(task, now, width, self._style) if task is not None else ""
        drawn, self._drawn = self._drawn, line
        if final:
            cursor = _SHOW_CURSOR if self._cursor_hidden else ""
            hide, end = "", f"{chr(10) if line else ''}{cursor}"
            self._cursor_hidden = False
            if not text and line == drawn:  # the final line is already on screen
                self._out.write(end)
                return
        else:
            hide, end = ("" if self._cursor_hidden else _HIDE_CURSOR), ""
            self._cursor_hidden = True
        clear = f"\r{' ' * (width - 1)}\r" if text and drawn else ""  # a line is on screen
        self._out.write(f"{hide}{clear}{text}{line}{end}")
        if not final:
            self._out.flush()  # at the close: one flush, after everything is written

    def _close(self, owner: str) -> None:
        if self._terminal is None or self._owner != owner:
            return
        TICKER.hide(self._tick)
        try:
            with self._lock:
                self._ticking = False
                self._draw(final=True)
        finally:
            held, held_err = self._held, self._held_err
            if held is not None and sys.stdout is held:
                sys.stdout = held.target
            if held_err is not None and sys.stderr is held_err:
                sys.stderr = held_err.target
            if held is not None:
                rest = held.take(whole_lines=False)  # if the last draw failed
                if rest:
                    self._out.write(rest)
                held.release()
            if held_err is not None:
                held_err.release()
            if self._cursor_hidden:  # the final draw failed before showing it
                self._out.write(_SHOW_CURSOR)
                self._cursor_hidden = False
            self._out.flush()
            self._terminal = self._out = self._held = self._held_err = None
            self._drawn = ""
            self._owner = None
            self._task = self._eval_task = self._params = None

    def __exit__(self, *exc_info: object) -> None:
        if self._owner is not None:
            self._close(self._owner)

    # --- training --------------------------------------------------------------------------
    def on_train_begin(self, run_context: RunContext) -> None:
        if not self._open("train", run_context):
            return
        cb_params = run_context.original_args()
        self._start = time.perf_counter()
        self._first_step = cb_params.get("cur_step_num") or 0
        with self._lock:
            self._task = Task("train", cb_params.get("batch_num"), started=self._start)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if self._task is None:
            return
        cb_params = run_context.original_args()
        epoch_num = cb_params.get("epoch_num")
        of = f"/{epoch_num}" if epoch_num else ""
        with self._lock:
            self._epoch_first_step = cb_params.get("cur_step_num") or 0
            self._task.description = f"epoch {cb_params.get('cur_epoch_num')}{of}"
            self._task.total = cb_params.get("batch_num")
            self._task.completed = 0
            self._task.started = time.perf_counter()
        # no draw here: the next tick shows the new epoch, a draw per epoch less

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self._task is None:
            return
        cb_params = run_context.original_args()
        results = cb_params.get("eval_results")
        if results:
            shown = ", ".join(f"{k} {_fmt(v)}" for k, v in results.items())
            print(f"epoch {cb_params.get('cur_epoch_num')}: {shown}")
        last = cb_params.get("cur_epoch_num") == cb_params.get("epoch_num")
        with self._lock:
            self._update(cb_params, time.perf_counter())
            if not last:  # the last epoch's line is drawn once, when the bar closes
                self._draw()

    def on_train_end(self, run_context: RunContext) -> None:
        self._close("train")

    def _update(self, cb_params: Any, now: float) -> None:
        assert self._task is not None
        cur = cb_params.get("cur_step_num") or 0
        rate = (cur - self._first_step) / max(now - self._start, 1e-9)
        loss = loss_value(cb_params.get("net_outputs"))
        self._task.completed = cur - self._epoch_first_step
        self._task.total = cb_params.get("batch_num")  # learnt after an unsized first pass
        self._task.info = (
            f"loss {_fmt(loss)}  {rate:,.1f} steps/s"
            if loss is not None
            else f"{rate:,.1f} steps/s"
        )

    # --- evaluation ------------------------------------------------------------------------
    def on_eval_begin(self, run_context: RunContext) -> None:
        if not self._open("eval", run_context):
            return
        total = run_context.original_args().get("batch_num")
        with self._lock:
            self._eval_task = Task("eval", total, started=time.perf_counter())
            self._draw()

    def on_eval_end(self, run_context: RunContext) -> None:
        if self._eval_task is None:
            return
        cb_params = run_context.original_args()
        with self._lock:
            self._eval_task.completed = cb_params.get("cur_step_num") or 0
            self._eval_task.total = cb_params.get("batch_num")
        if self._owner == "eval":
            self._close("eval")  # the final line shows the whole pass
        with self._lock:
            self._eval_task = None  # inside fit: the training line is back at the epoch end


class Terminal(NamedTuple):
    """What the bar draws with, read from a rich console: whether it is a terminal, colours
    and characters, whether lines can be redrawn (not on a dumb terminal)."""

    console: Console
    is_terminal: bool
    style: BarStyle
    animate: bool
    fd: int | None = None  # a descriptor whose size is the console's width (default console)

    def width(self) -> int:
        """The console's width now (a resized terminal is followed). For the default console,
        stdout's own size, one ioctl: rich tries each standard stream, about 30 µs."""
        if self.fd is not None:
            try:
                return os.get_terminal_size(self.fd).columns or 80
            except OSError:
                pass  # no longer a terminal: rich's answer
        return self.console.width


def terminal_of(console: Console, fd: int | None = None) -> Terminal:
    """``console``'s ``Terminal``; ``fd``: its stream's descriptor, when nothing else sets its
    width (a default console with no ``COLUMNS``)."""
    is_terminal = console.is_terminal
    animate = is_terminal and not console.is_dumb_terminal and not console.legacy_windows
    style = BarStyle(
        color=console.color_system is not None and not console.no_color,
        unicode=console.encoding.lower().startswith("utf"),
    )
    return Terminal(console, is_terminal, style, animate, fd if animate else None)


# what rich's Console reads from the environment
_CONSOLE_ENV = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS")
_default_terminals: dict[str, tuple[Any, tuple[Any, ...], Terminal]] = {}


def default_terminal() -> Terminal:
    """The ``Terminal`` of a console on the current stdout, kept while stdout, whether it is a
    TTY (one ioctl: a descriptor redirected under the same stdout, ``os.dup2``) and the
    environment variables rich reads stay the same: creating a console and reading its
    properties cost about 80 µs, on every run of a sweep."""
    stream = sys.stdout
    key = (stdout_is_tty(), *(os.environ.get(name) for name in _CONSOLE_ENV))
    kept = _default_terminals.get("stdout")
    if kept is None or kept[0] is not stream or kept[1] != key:
        fd = _fileno(stream) if key[-1] is None else None  # COLUMNS, when set, is the width
        kept = _default_terminals["stdout"] = (stream, key, terminal_of(Console(), fd))
    return kept[2]


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):  # StringIO, a closed or wrapped stream
        return None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
