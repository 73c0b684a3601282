"""``ProgressBar``: a rich progress bar with epoch, step, loss and steps/s.

Quiet when the console is not a terminal (CI logs, pipes, files) and on every rank but 0 under
torch.distributed: it then does nothing at all, so it is safe to leave in scripts.
``Model.train`` adds one by default on a TTY.

Cost: rich redraws the whole bar for each line printed above it, and from a refresh thread ten
times a second; on a small CPU step that was 10% of training with a ``LossMonitor``. So the bar
is drawn from the training thread, at most every ``refresh_interval`` seconds, and lines
printed meanwhile (``LossMonitor``'s, the user's) are held and printed together just before it:
a line shows up at most ``refresh_interval`` late, and every held line is printed when the bar
closes (also when training fails).
"""

from __future__ import annotations

import io
import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from trainledger.run import Callback, RunContext, is_main_rank, loss_value

__all__ = ["ProgressBar"]


class ProgressBar(Callback):
    """Show training (and evaluation) progress.

    Args:
        console: where to draw; default a new ``rich.console.Console`` on stdout.
        refresh_interval: seconds between bar updates from step hooks; updating on every step
            would cost more than a small training step.
    """

    def __init__(self, console: Console | None = None, refresh_interval: float = 0.25) -> None:
        if not isinstance(refresh_interval, (int, float)) or refresh_interval < 0:
            raise ValueError(
                "ProgressBar refresh_interval expected seconds >= 0, "
                f"received: {refresh_interval!r}"
            )
        self._console = console
        self._interval = float(refresh_interval)
        self._progress: Progress | None = None
        self._owner: str | None = None  # "train" or "eval": who started the display
        self._task: TaskID | None = None
        self._eval_task: TaskID | None = None
        self._last_update = 0.0
        self._start = 0.0
        self._first_step = 0
        self._epoch_first_step = 0
        self._held: _HeldLines | None = None  # sys.stdout while the bar is drawn
        self._follows_stdout = False  # the console wrote to whatever sys.stdout was

    @property
    def active(self) -> bool:
        """Whether a bar is being drawn right now (False off a terminal)."""
        return self._progress is not None

    # --- display lifecycle ---------------------------------------------------------------
    def _open(self, owner: str) -> bool:
        if self._progress is not None:
            return True
        if not is_main_rank():
            return False  # one bar per job, not one per rank
        console = self._console if self._console is not None else Console()
        if not console.is_terminal:
            return False
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=console,
            auto_refresh=False,  # drawn by _draw, from the training thread
            redirect_stdout=False,  # _HeldLines instead: one redraw for many lines
        )
        self._held = _HeldLines(sys.stdout)
        self._follows_stdout = console.file is sys.stdout  # rich resolves stdout per write
        if self._follows_stdout:
            console.file = sys.stdout  # the bar itself must not land in the held lines
        sys.stdout = self._held
        self._progress.start()
        self._owner = owner
        return True

    def _draw(self) -> None:
        """Print the held lines above the bar, then redraw it (one render for both)."""
        progress, held = self._progress, self._held
        if progress is None:
            return
        if held is not None:
            text = held.take()
            if text:
                progress.console.out(text, end="", highlight=False)
        progress.refresh()

    def _close(self, owner: str) -> None:
        if self._progress is not None and self._owner == owner:
            try:
                self._draw()
                self._progress.stop()
            finally:
                held, self._held = self._held, None
                if self._follows_stdout:
                    self._progress.console.file = None  # type: ignore[assignment]
                if held is not None and sys.stdout is held:
                    sys.stdout = held.target
                    held.target.write(held.take())  # anything printed during the last draw
            self._progress = None
            self._owner = None
            self._task = None
            self._eval_task = None

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
        assert self._progress is not None
        self._task = self._progress.add_task("train", total=cb_params.get("batch_num"), info="")

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if self._progress is None or self._task is None:
            return
        cb_params = run_context.original_args()
        epoch_num = cb_params.get("epoch_num")
        of = f"/{epoch_num}" if epoch_num else ""
        self._epoch_first_step = cb_params.get("cur_step_num") or 0
        self._progress.reset(
            self._task,
            total=cb_params.get("batch_num"),
            description=f"epoch {cb_params.get('cur_epoch_num')}{of}",
        )

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self._progress is None or self._task is None:
            return
        now = time.perf_counter()
        if now - self._last_update < self._interval:
            return
        self._last_update = now
        self._update(run_context.original_args(), now)
        self._draw()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self._progress is None or self._task is None:
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
        assert self._progress is not None and self._task is not None
        cur = cb_params.get("cur_step_num") or 0
        rate = (cur - self._first_step) / max(now - self._start, 1e-9)
        loss = loss_value(cb_params.get("net_outputs"))
        info = (
            f"loss {_fmt(loss)}  {rate:,.1f} steps/s"
            if loss is not None
            else f"{rate:,.1f} steps/s"
        )
        self._progress.update(
            self._task, completed=cur - self._epoch_first_step, info=info, refresh=False
        )

    # --- evaluation ------------------------------------------------------------------------
    def on_eval_begin(self, run_context: RunContext) -> None:
        if not self._open("eval"):
            return
        assert self._progress is not None
        total = run_context.original_args().get("batch_num")
        self._eval_task = self._progress.add_task("eval", total=total, info="")

    def on_eval_step_end(self, run_context: RunContext) -> None:
        if self._progress is None or self._eval_task is None:
            return
        now = time.perf_counter()
        if now - self._last_update < self._interval:
            return
        self._last_update = now
        cur = run_context.original_args().get("cur_step_num") or 0
        self._progress.update(self._eval_task, completed=cur, refresh=False)
        self._draw()

    def on_eval_end(self, run_context: RunContext) -> None:
        if self._progress is None or self._eval_task is None:
            return
        self._progress.remove_task(self._eval_task)
        self._eval_task = None
        self._close("eval")


class _HeldLines(io.TextIOBase):
    """A stdout that keeps what is written until the bar's next draw (``take``)."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self.target = target
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return len(text)

    def take(self) -> str:
        parts, self._parts = self._parts, []
        return "".join(parts)

    def flush(self) -> None:
        return None  # the held lines are written at the next draw

    def isatty(self) -> bool:
        return bool(getattr(self.target, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self.target.fileno())


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
