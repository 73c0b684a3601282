"""The progress bar's one line of text, and the stdout/stderr that hold lines printed under it.

Why not ``rich.progress``: a rich refresh lays out a table through its general renderer, about
0.5-0.9 ms of CPU, and a short run needed six of them (start, add_task, reset, first step,
epoch end, stop): on the bench's 1,000-step run that alone was +11 µs per 270 µs step. This
line is a plain string written after a carriage return: tens of microseconds per draw.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

__all__ = ["BarStyle", "HeldLines", "Task", "render_line"]

_BAR_WIDTH = 40  # as rich's BarColumn
_MIN_BAR = 10  # below this the bar is left out: the numbers matter more


@dataclass
class Task:
    """What one line shows: ``description  bar  completed/total  info  elapsed``."""

    description: str
    total: int | None
    completed: int = 0
    info: str = ""
    started: float = 0.0  # time.perf_counter() when the task (re)started


@dataclass(frozen=True)
class BarStyle:
    """How to draw: ANSI colours or none, and the bar's characters (ASCII off UTF-8)."""

    color: bool
    unicode: bool

    def bar(self, done: int, rest: int, finished: bool) -> str:
        if self.color:
            char = "━" if self.unicode else "-"
            colour = "32" if finished else "35"  # green when done, magenta while running
            done_part = f"\x1b[{colour}m{char * done}" if done else ""
            rest_part = f"\x1b[90m{char * rest}" if rest else ""
            return f"{done_part}{rest_part}\x1b[0m"
        full, empty = ("━", "─") if self.unicode else ("#", "-")
        return full * done + empty * rest

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if self.color else text


def render_line(task: Task, now: float, width: int, style: BarStyle) -> str:
    """The task as one line of at most ``width - 1`` visible cells (the last column is left
    free so the terminal never wraps, which would break the carriage-return redraw), padded
    with spaces so it covers a longer line drawn before."""
    total = task.total
    count = f"{task.completed:>{len(str(total))}}/{total}" if total else f"{task.completed}/?"
    seconds = int(max(now - task.started, 0.0))
    clock = f"{seconds // 3600}:{seconds // 60 % 60:02}:{seconds % 60:02}"  # H:MM:SS
    tail = " ".join(part for part in (count, task.info, clock) if part)
    room = max(width - 1, 1)
    head = task.description[:room]
    tail = f" {tail}"[: room - len(head)]
    bar = ""
    bar_width = min(_BAR_WIDTH, room - len(head) - len(tail) - 1)
    if total and bar_width >= _MIN_BAR:
        done = bar_width * min(max(task.completed, 0), total) // total
        bar = " " + style.bar(done, bar_width - done, task.completed >= total)
    else:
        bar_width = -1
    visible = len(head) + bar_width + 1 + len(tail)
    return f"\r{style.bold(head)}{bar}{tail}{' ' * (room - visible)}"


class HeldLines(io.TextIOBase):
    """A stdout (or stderr) that keeps what is written until the bar's next draw (``take``).

    stdout and stderr share one list of parts, so lines keep the order they were written in.
    Once ``release``d (the bar closed), writes go straight to the target: something that kept
    a reference (a logging handler set up during training) still prints.
    """

    def __init__(self, target: Any, parts: list[str] | None = None) -> None:
        super().__init__()
        self.target = target
        self._parts: list[str] = parts if parts is not None else []
        self._released = False

    def write(self, text: str) -> int:
        if self._released:
            return int(self.target.write(text))
        self._parts.append(text)
        return len(text)

    def release(self) -> None:
        """Write through to the target from now on."""
        self._released = True

    def take(self, whole_lines: bool = True) -> str:
        """The text held so far; with ``whole_lines``, an unfinished last line stays held (the
        bar is drawn after a newline, never in the middle of a line).

        Safe against writes from other threads (the training thread prints while the bar's
        thread draws): writes only append, and this removes only the parts it read.
        """
        parts = self._parts
        count = len(parts)
        text = "".join(parts[:count])
        del parts[:count]
        if whole_lines:
            cut = text.rfind("\n") + 1
            if cut < len(text):
                parts.insert(0, text[cut:])  # before anything written meanwhile
                text = text[:cut]
        return text

    def flush(self) -> None:
        if self._released:
            self.target.flush()  # else: the held lines are written at the next draw

    def isatty(self) -> bool:
        return bool(getattr(self.target, "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self.target.fileno())
