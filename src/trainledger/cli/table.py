"""The lineage table in a terminal: the columns that tell runs apart, fitted to its width.

Why choose columns: a base of runs has twenty-odd fields, most of them the same for every run
(the network, the loss function, the dataset). Shown all at once at 80 columns every cell is
cut, numbers included. So the table shows the run, its metrics, and the fields and
user-defined values that *vary* across the runs shown, in that order, as many as fit; what is
the same everywhere goes in one footer line, and what did not fit is named there too, with
``--columns`` to choose. Numbers are never cut (a column is left out instead); only text
cells (the run's name, a network's name) are shortened, in the middle.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "render_table",
    "format_value",
    "table_columns",
    "terminal_safe",
    "LABELS",
    "RUN_COLUMNS",
    "run_cells",
]

LABELS = {
    "learning_rate": "lr",
    "loss": "train loss",
    "batch_size": "batch",
    "train_dataset_count": "train n",
    "test_dataset_count": "test n",
    "dataset_mark": "data",
    "device_num": "devices",
    "model_size": "model size",
    "loss_function": "loss fn",
}
_STYLES = {"run": "cyan", "metric": "green"}
# what a run's own record adds (read per shown run when ``run_info`` is given)
RUN_COLUMNS = ("status", "steps", "bad_records", "checkpoint")
_TEXT_MIN = 10  # a shortened text column keeps at least this many characters
_GAP = 2  # rich's padding between columns (box=None, padding (0, 1))


#: control characters (C0, DEL, C1) as visible escapes: a value or a run directory name
#: holding ESC must not drive the terminal, and a newline must not make a fake table row
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROL.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})


def terminal_safe(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\n``)."""
    return text.translate(_CONTROL)


def format_value(value: Any) -> str:
    """Short human form for a terminal: floats to 6 significant digits, None as an empty
    cell, control characters escaped (``terminal_safe``; JSON and CSV stay exact)."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}"
    return terminal_safe(str(value))


def _label(column: str) -> str:
    if column.startswith("metric/"):
        return column.split("/", 1)[1]
    return LABELS.get(column, column)


def table_columns(rows: list[dict[str, Any]], customized: dict[str, Any]) -> tuple[
    list[str], dict[str, Any]
]:  # fmt: skip
    """(columns in priority order, {field: value} of the fields equal in every row)."""
    # the query engine on use (fast --help)
    from trainledger.query import HYPERPARAMETERS, parse_series_field

    metrics = [c for c in customized if c.startswith("metric/")]
    others = [c for c in customized if not c.startswith("metric/")]
    candidates = [*HYPERPARAMETERS, "model_size", "loss", *others]
    candidates += [c for c in RUN_COLUMNS if c != "status"]
    varying, same = [], {}
    for column in candidates:
        values = {repr(r.get(column)) for r in rows}
        if values == {"None"}:
            continue
        if len(values) == 1 and len(rows) > 1:
            same[column] = rows[0].get(column)
        else:
            varying.append(column)
    extra = [c for c in ("tag", "remark") if any(r.get(c) not in (None, 0, "") for r in rows)]
    status = ["status"] if any(r.get("status") for r in rows) else []
    # the series statistics a condition named (``max(eval/accuracy)``): what was asked about
    series = list(dict.fromkeys(c for r in rows for c in r if parse_series_field(c)))
    return ["run", *status, *series, *metrics, *varying, *extra], same


RUN_INFO_MAX = 500


def run_cells(run: dict[str, Any]) -> dict[str, Any]:
    """The ``RUN_COLUMNS`` cells of a run's ``run`` record (the newest checkpoint's name)."""
    checkpoints = run.get("checkpoints") or []
    newest = (
        checkpoints[-1].get("path") if checkpoints and isinstance(checkpoints[-1], dict) else None
    )
    return {
        "status": run.get("status"),
        "steps": run.get("total_steps"),
        "bad_records": run.get("bad_records"),
        "checkpoint": os.path.basename(str(newest)) if newest else None,
    }


class _Cells:
    """Each column's cell texts, terminal width and kind, worked out once: rich measuring
    every cell of a 100-row table was a third of a ``trainledger lineage`` call at 100,000
    runs (BENCHMARKS.md), and the widths are known here already."""

    def __init__(self, rows: list[dict[str, Any]], columns: list[str]) -> None:
        from rich.cells import cell_len  # a terminal cell count: wide characters take two

        self.texts = {c: [format_value(r.get(c)) for r in rows] for c in columns}
        self.widths = {
            c: max([cell_len(_label(c)), *map(cell_len, self.texts[c])]) for c in columns
        }
        self.text = {
            c: c == "run" or all(not isinstance(r.get(c), (int, float)) for r in rows)
            for c in columns
        }


def _laid_out(cells: _Cells, shown: list[str], width: int) -> dict[str, int]:
    """Each shown column's width at a terminal ``width`` wide: numbers whole, text columns
    from their shortest (``_TEXT_MIN``) up to whole, the run first, while the room lasts
    (``_fit`` chose columns so that the shortest fit)."""
    out = {c: min(cells.widths[c], _TEXT_MIN) if cells.text[c] else cells.widths[c] for c in shown}
    room = width - sum(out.values()) - _GAP * len(shown)
    for column in shown:
        if cells.text[column] and room > 0:
            grow = min(cells.widths[column] - out[column], room)
            out[column] += grow
            room -= grow
    return out


def _fit(cells: _Cells, columns: list[str], width: int) -> tuple[list[str], list[str]]:
    """The columns that fit in ``width`` (the run always), and those left out."""
    widths = cells.widths
    run_min = min(widths["run"], _TEXT_MIN)
    used = run_min + _GAP
    chosen, left = ["run"], []
    for column in columns[1:]:
        need = widths[column] + _GAP
        if cells.text[column]:
            need = min(need, _TEXT_MIN + _GAP)
        if used + need <= width:
            chosen.append(column)
            used += need
        else:
            left.append(column)
    return chosen, left


def render_table(
    result: dict[str, Any],
    console: Any = None,
    *,
    title: str | None = None,
    columns: list[str] | None = None,
    run_info: Callable[[str], dict[str, Any]] | None = None,
) -> Any:
    """Print a ``filter_summary_lineage`` result as a table fitted to the console; returns
    the rich Table. ``columns`` (field names) replaces the automatic choice; ``run_info``
    (summary_dir -> the run's ``run`` record) adds status, steps, bad records and the newest
    checkpoint, for up to ``RUN_INFO_MAX`` runs."""
    from rich.console import Console  # rich and the query engine on use: fast --help
    from rich.table import Table

    from trainledger.query import flatten_object

    console = console or Console()
    rows = []
    for obj in result.get("object", []):
        row = flatten_object(obj)
        row["run"] = str(row.get("summary_dir", "")).removeprefix("./") or "."
        rows.append(row)
    if run_info is not None and len(rows) <= RUN_INFO_MAX:
        for row in rows:
            row.update(run_cells(run_info(str(row.get("summary_dir", "")))))
    count = result.get("count", len(rows))
    if columns is None:
        wanted, same = table_columns(rows, result.get("customized", {}))
    else:
        wanted, same = ["run", *(c for c in columns if c != "run")], {}
    terminal = console.is_terminal
    cells = _Cells(rows, wanted)
    width = console.width if terminal else 10_000
    shown, left = _fit(cells, wanted, width) if rows else (wanted, [])
    from rich.text import Text  # cells are text, never markup: "[red]" in a value stays as is

    table = Table(
        title=Text(terminal_safe(title)) if title else None,
        header_style="bold",
        box=None,
        padding=(0, 1),
        pad_edge=False,
    )
    widths = _laid_out(cells, shown, width) if terminal else cells.widths
    for column in shown:
        text = cells.text[column]
        table.add_column(
            Text(terminal_safe(_label(column))),
            style="cyan"
            if column == "run"
            else ("green" if column.startswith("metric/") else None),
            justify="left" if text else "right",
            no_wrap=True,
            overflow="ellipsis" if text else "fold",
            width=widths[column],  # fixed: rich need not measure each cell
        )
    for i in range(len(rows)):
        table.add_row(*(Text(cells.texts[c][i]) for c in shown))
    if not terminal:  # piped or captured: every chosen column, at full width
        from rich.measure import Measurement

        options = console.options.update(max_width=10_000)
        console.width = max(console.width, Measurement.get(console, options, table).maximum)
    console.print(table)
    notes = [f"{len(rows):,} of {count:,} runs"]  # (100 of 100,000 runs)
    if same:
        notes.append(
            "same in all: " + ", ".join(f"{_label(k)}={format_value(v)}" for k, v in same.items())
        )
    if left:
        notes.append(f"not shown: {', '.join(left)} (--columns to choose, or a wider terminal)")
    for note in notes:
        console.print(Text(terminal_safe(note)), style="dim", overflow="fold")
    return table
