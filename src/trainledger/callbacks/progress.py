"""``ProgressBar``: one line with epoch, a bar, step, loss, steps/s and the elapsed time.

Quiet when the console is not a terminal (CI logs, pipes, files, Jupyter) and on every rank but
0 under torch.distributed: it then does nothing at all, so it is safe to leave in scripts.
``Model.train`` adds one by default on a TTY.

Cost: the line is drawn from the training thread, at most every ``refresh_interval`` seconds
(and at epoch ends and when the bar closes), as a plain string after a carriage return
(``progress_line``), not through ``rich.progress``, whose refreshes cost a small CPU step's
worth of time each. Lines printed meanwhile to stdout or stderr (``LossMonitor``'s, the user's,
warnings) are held and printed together just before the next draw: a line shows up at most
``refresh_interval`` late, and every held line is printed when the bar closes (also when
training fails). On a dumb terminal (``TERM=dumb``) only the final line is drawn.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console

from trainledger.callbacks.progress_line import BarStyle, HeldLines, Task, render_line
from trainledger.run import Callback, RunContext, is_main_rank, loss_value

__all__ = ["ProgressBar"]

_HIDE_CURSOR, _SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
_clock = time.perf_counter


class ProgressBar(Callback):
    """Show training (and evaluation) progress.

    Args:
        console: decides whether and how wide to draw (and where: its file); default a new
            ``rich.console.Console`` on stdout.
        refresh_interval: seconds between draws from step hooks; drawing on every step would
            cost more than a small training step.
    """

    def __init__(self, console: Console | None = None, refresh_interval: float = 0.25) -> None:
        if not isinstance(refresh_interval, (int, float)) or refresh_interval < 0:
            raise ValueError(
                "ProgressBar refresh_interval expected seconds >= 0, "
                f"received: {refresh_interval!r}"
            )
        self._given_console = console
        self._interval = float(refresh_interval)
        self._console: Console | None = None  # set while a bar is shown
        self._out: Any = None  # the stream the line is drawn on (the real stdout)
        self._style = BarStyle(color=False, unicode=False)
        self._animate = True  # False on a dumb terminal: only the final line
        self._owner: str | None = None  # "train" or "eval": who opened the display
        self._task: Task | None = None
        self._eval_task: Task | None = None
        self._last_update = 0.0
        self._start = 0.0
        self._first_step = 0
        self._epoch_first_step = 0
        self._held: HeldLines | None = None  # sys.stdout while the bar is shown
        self._held_err: HeldLines | None = None  # sys.stderr, sharing the held parts
        self._drawn = ""  # the line last written

    @property
    def active(self) -> bool:
        """Whether a bar is being drawn right now (False off a terminal)."""
        return self._console is not None

    # --- display lifecycle ---------------------------------------------------------------
    def _open(self, owner: str) -> bool:
        if self._console is not None:
            return True
        if not is_main_rank():
            return False  # one bar per job, not one per rank
        console = self._given_console if self._given_console is not None else Console()
        if not console.is_terminal:
            return False
        self._console = console
        self._out = console.file  # resolved now: a default console follows sys.stdout
        self._style = BarStyle(
            color=console.color_system is not None and not console.no_color,
            unicode=console.encoding.lower().startswith("utf"),
        )
        self._animate = not console.is_dumb_terminal and not console.legacy_windows
        parts: list[str] = []  # one list: stdout and stderr lines keep their order
        self._held = HeldLines(sys.stdout, parts)
        self._held_err = HeldLines(sys.stderr, parts)
        sys.stdout, sys.stderr = self._held, self._held_err
        if self._animate:
            self._out.write(_HIDE_CURSOR)
        self._owner = owner
        self._last_update = time.perf_counter()
        return True

    def _draw(self, final: bool = False) -> None:
        """Print the held lines, then the bar's line (one write, one flush); at the close, a
        line already on screen as it would be drawn only gets its newline."""
        console, held = self._console, self._held
        if console is None or held is None:
            return
        if not (self._animate or final):  # a dumb terminal: the held lines, no bar
            self._out.write(held.take())
            self._out.flush()
            return
        now = time.perf_counter()
        self._last_update = now
        width = console.width
        text = held.take(whole_lines=not final)
        if text and not text.endswith("\n") and final:
            text += "\n"
        task = self._eval_task or self._task
        line = render_line(task, now, width, self._style) if task is not None else ""
        if final and not text and line == self._drawn:
            self._out.write("\n" if line else "")  # the final line is already on screen
            return
        self._drawn = line
        clear = f"\r{' ' * (width - 1)}\r" if text and self._animate else ""
        self._out.write(f"{clear}{text}{line}{chr(10) if final and line else ''}")
        if not final:
            self._out.flush()  # at the close: one flush, after the cursor comes back

    def _close(self, owner: str) -> None:
        if self._console is None or self._owner != owner:
            return
        try:
            self._draw(final=True)
        finally:
            held, held_err = self._held, self._held_err
            if held is not None and sys.stdout is held:
                sys.stdout = held.target
            if held_err is not None and sys.stderr is held_err:
                sys.stderr = held_err.target
            if held is not None:
                self._out.write(held.take(whole_lines=False))  # if the last draw failed
                held.release()
            if held_err is not None:
                held_err.release()
            if self._animate:
                self._out.write(_SHOW_CURSOR)
            self._out.flush()
            self._console = self._out = self._held = self._held_err = None
            self._drawn = ""
            self._owner = None
            self._task = self._eval_task = None

    def __exit__(self, *exc_info: object) -> None:
        if self._owner is not None:
            self._close(self._owner)

    # --- training --------------------------------------------------------------------------
    def on_train_begin(self, run_context: RunContext) -> None:
        if not self._open("train"):
            return
        cb_params = run_context.original_args()
        self._start = time.perf_counter()
        self._first_step = cb_params.get("cur_step_num") or 0
        self._task = Task("train", cb_params.get("batch_num"), started=self._start)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if self._task is None:
            return
        cb_params = run_context.original_args()
        epoch_num = cb_params.get("epoch_num")
        of = f"/{epoch_num}" if epoch_num else ""
        self._epoch_first_step = cb_params.get("cur_step_num") or 0
        self._task.description = f"epoch {cb_params.get('cur_epoch_num')}{of}"
        self._task.total = cb_params.get("batch_num")
        self._task.completed = 0
        self._task.started = time.perf_counter()
        self._draw()

    def on_train_step_end(self, run_context: RunContext) -> None:
        now = _clock()  # every step: the interval first, it is what nearly always returns
        if now - self._last_update < self._interval or self._task is None:
            return
        self._update(run_context.original_args(), now)
        self._draw()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self._task is None:
            return
        cb_params = run_context.original_args()
        self._update(cb_params, time.perf_counter())
        results = cb_params.get("eval_results")
        if results:
            shown = ", ".join(f"{k} {_fmt(v)}" for k, v in results.items())
            print(f"epoch {cb_params.get('cur_epoch_num')}: {shown}")
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
        if not self._open("eval"):
            return
        total = run_context.original_args().get("batch_num")
        self._eval_task = Task("eval", total, started=time.perf_counter())
        self._draw()

    def on_eval_step_end(self, run_context: RunContext) -> None:
        if self._eval_task is None:
            return
        now = time.perf_counter()
        if now - self._last_update < self._interval:
            return
        self._eval_task.completed = run_context.original_args().get("cur_step_num") or 0
        self._draw()

    def on_eval_end(self, run_context: RunContext) -> None:
        if self._eval_task is None:
            return
        cb_params = run_context.original_args()
        self._eval_task.completed = cb_params.get("cur_step_num") or 0
        self._eval_task.total = cb_params.get("batch_num")
        if self._owner == "eval":
            self._close("eval")  # the final line shows the whole pass
        self._eval_task = None  # inside fit: the training line is back at the epoch end


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
