"""``trainledger show``: one run's lineage as a person reads it.

Why apart from ``cli/lineage.py``: the query table and the single-run view share only the
cell formatting (``cli/table.py``). Times are local date-times (a resumed run's sessions
too, as a table of their own), durations carry units, and off a terminal (a pipe, a file)
nothing is wrapped, so a path is never cut mid-name at rich's 80-column default.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from trainledger.cli.table import format_value, terminal_safe

__all__ = ["render_show"]


def _when(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e9:
        return dt.datetime.fromtimestamp(value).isoformat(sep=" ", timespec="seconds")
    return "-"


def duration(seconds: float) -> str:
    """``12.5 s``, ``3 min 20 s``, ``2 h 5 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _sessions(sessions: list[Any]) -> Any:
    """A resumed run's processes as rows: when each ran, how long, which steps, where."""
    from rich.table import Table  # rich on use

    table = Table(box=None, padding=(0, 1, 0, 0), header_style="dim")
    for name in ("#", "start", "end", "duration", "steps", "host", "pid"):
        table.add_column(name, no_wrap=True)
    for i, session in enumerate(sessions, 1):
        item = session if isinstance(session, dict) else {}
        start, end = item.get("start_time"), item.get("end_time")
        spent = (
            end - start if isinstance(start, float | int) and isinstance(end, float | int) else None
        )
        first, last = item.get("first_step"), item.get("last_step")
        steps = f"{first if first is not None else '?'}-{last if last is not None else '?'}"
        table.add_row(
            str(i),
            _when(start),
            _when(end) if end is not None else "running or killed",
            duration(float(spent)) if spent is not None else "-",
            steps,
            terminal_safe(str(item.get("hostname") or "-")),
            str(item.get("pid") or "-"),
        )
    return table


def _show_value(key: str, value: Any) -> Any:
    """A value as a person reads it: times as local date-times, durations with units, the
    model path as the path, numbers whole; containers pretty-printed (wrapped, never cut)."""
    from rich.pretty import Pretty  # rich on use
    from rich.text import Text

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key.endswith("time") and value > 1e9:
            return _when(value)
        if key == "duration":
            return duration(float(value))
        return format_value(value)
    if key == "sessions" and isinstance(value, list) and value:
        return _sessions(value)
    if key == "path" and isinstance(value, str) and value.startswith("{"):
        try:
            named = json.loads(value)
        except ValueError:
            named = None
        if isinstance(named, dict) and len(named) == 1:
            return Text(terminal_safe(str(next(iter(named.values())))))
    if isinstance(value, (dict, list)):
        return Pretty(value) if value else "-"  # repr: control characters already escaped
    return Text("-" if value in (None, "") else terminal_safe(str(value)))


def render_show(lineage_info: dict[str, Any]) -> None:
    """Print one run's lineage (``get_summary_lineage``'s answer) as a two-column table."""
    from rich.console import Console  # rich on use (see render_table)
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not console.is_terminal:  # a pipe or a file: never wrap (a path stays whole)
        console = Console(width=100_000)
    title = Text(terminal_safe(str(lineage_info.get("summary_dir"))))
    table = Table(title=title, show_header=False, box=None, title_justify="left")
    table.add_column("field", style="bold cyan", no_wrap=True, vertical="top")
    table.add_column("value", overflow="fold")  # on a terminal long paths wrap, never "..."
    for section, value in lineage_info.items():
        if section == "summary_dir":
            continue
        if isinstance(value, dict) and value and section != "dataset_graph":
            table.add_row(Text(terminal_safe(section), style="bold"), "")
            for name, item in value.items():
                table.add_row(Text(f"  {terminal_safe(str(name))}"), _show_value(str(name), item))
        else:
            table.add_row(Text(terminal_safe(section)), _show_value(section, value))
    console.print(table)
