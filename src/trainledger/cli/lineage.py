"""``trainledger lineage BASE`` (filter/sort/page runs) and ``trainledger show RUN_DIR``.

Thin layers over ``trainledger.query``: ``--where`` compiles through ``parse_where`` (the
same compiler the web UI's filter box uses). ``render_table(result, console)`` draws a filter
result as a rich table and is reused by ``trainledger demo``. No torch is imported; rich and
the query engine are imported inside the commands, so ``trainledger --help`` starts fast.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from typing import Any

import click

from trainledger.cli.locations import user_location
from trainledger.errors import LineageError, LineageFileNotFoundError
from trainledger.lineage import Redaction, redact_object

__all__ = ["lineage", "show", "render_table", "format_value"]

# columns shown in the terminal table when at least one run has a value
_TABLE_FIELDS = (
    "network",
    "optimizer",
    "learning_rate",
    "batch_size",
    "epoch",
    "loss",
    "dataset_mark",
)
_LABELS = {
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


def format_value(value: Any) -> str:
    """Short human form: floats to 6 significant digits, None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)


def render_table(result: dict[str, Any], console: Any = None, *, title: str | None = None) -> Any:
    """Print a ``filter_summary_lineage`` result as a rich table; returns the Table.

    Columns: run, the fields any run has a value for, every metric/ and user_defined/ column
    of ``customized``, and the tag/remark annotations when present.
    """
    # rich and the query engine (numpy, protobuf) load on use: `trainledger lineage --help`
    # and the demo's import of this module stay fast
    from rich.console import Console
    from rich.table import Table

    from trainledger.query import flatten_object

    console = console or Console()
    rows = [flatten_object(obj) for obj in result.get("object", [])]
    fields = [f for f in _TABLE_FIELDS if any(r.get(f) is not None for r in rows)]
    custom = list(result.get("customized", {}))
    extra = [c for c in ("tag", "remark") if any(r.get(c) is not None for r in rows)]
    shown = len(rows)
    table = Table(
        title=title,
        caption=f"{shown} of {result.get('count', shown)} runs",
        header_style="bold",
    )
    table.add_column("run", style="cyan", no_wrap=True)
    for f in fields:
        table.add_column(
            _LABELS.get(f, f),
            justify="left" if f in ("network", "optimizer", "loss_function") else "right",
        )
    for c in custom:
        table.add_column(
            c.split("/", 1)[1] if c.startswith("metric/") else c,
            style="green" if c.startswith("metric/") else None,
            justify="right",
        )
    for c in extra:
        table.add_column(c)
    for row in rows:
        table.add_row(
            str(row.get("summary_dir")),
            *(format_value(row.get(f)) for f in fields),
            *(format_value(row.get(c)) for c in custom),
            *(format_value(row.get(c)) for c in extra),
        )
    if not console.is_terminal:  # piped or captured: never squeeze columns to 80 characters
        from rich.measure import Measurement  # rich on use, as above

        options = console.options.update(max_width=10_000)
        console.width = max(console.width, Measurement.get(console, options, table).maximum)
    console.print(table)
    return table


def _csv(result: dict[str, Any]) -> str:
    """The CLI's csv: ``flatten_result``'s columns, floats exact (repr), None empty."""
    from trainledger.query import flatten_result  # the query engine on use (see render_table)

    columns, rows = flatten_result(result)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(
            [
                ""
                if row.get(c) is None
                else (repr(row[c]) if isinstance(row.get(c), float) else row[c])
                for c in columns
            ]
        )
    return buf.getvalue()


@click.command("lineage")
@click.argument("base", type=click.Path(file_okay=False, dir_okay=True))
@click.option(
    "--where",
    "-w",
    "wheres",
    multiple=True,
    metavar="EXPR",
    help="FIELD OP VALUE, e.g. 'optimizer = Adam', 'learning_rate > 0.05', "
    "'metric/Accuracy >= 0.9', 'batch_size in [16, 32]'. Repeat to AND.",
)
@click.option("--sort", "-s", metavar="[-]FIELD", help="Sort by FIELD; '-' for descending.")
@click.option("--limit", "-n", type=int, help="Runs per page (1..100).")
@click.option("--page", "-p", type=int, help="Page number from 0 (with --limit, default 10).")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.option(
    "--max-depth",
    type=int,
    default=1,
    show_default=True,
    help="How deep under BASE run directories are searched.",
)
def lineage(
    base: str,
    wheres: tuple[str, ...],
    sort: str | None,
    limit: int | None,
    page: int | None,
    fmt: str,
    max_depth: int,
) -> None:
    """Filter, sort and page the lineage of the runs under BASE."""
    from trainledger.query import FIELDS, filter_summary_lineage, parse_where  # on use

    try:
        condition = parse_where(wheres, sort=sort, limit=limit, page=page)
        # a shell path like ../runs is the user's own: normalize it (the API rejects "..")
        result = filter_summary_lineage(user_location(base), condition, max_depth=max_depth)
    except LineageFileNotFoundError:  # an empty base is an answer, not a failure
        click.echo(f"no runs under {base}", err=fmt != "table")
        if fmt == "json":
            click.echo(json.dumps({"customized": {}, "object": [], "count": 0}, indent=2))
        return
    except (LineageError, ValueError) as exc:
        hint = ""
        if "not supported" in str(exc) or "sorted_name must be" in str(exc):
            hint = f"\nfields: {', '.join(FIELDS)}, metric/<name>, user_defined/<name>"
        raise click.ClickException(f"{exc}{hint}") from exc
    if fmt in ("json", "csv"):  # output meant to leave the machine: TRAINLEDGER_REDACT applies
        policy = Redaction.from_env()
        result = {**result, "object": [redact_object(o, policy) for o in result["object"]]}
    if fmt == "json":
        click.echo(json.dumps(result, indent=2))
    elif fmt == "csv":
        click.echo(_csv(result), nl=False)
    else:
        from rich.console import Console  # rich on use (see render_table)

        console = Console()
        if not console.is_terminal:
            console = Console(width=200)
        render_table(result, console, title=f"lineage of {base}")


def _render_show(lineage_info: dict[str, Any]) -> None:
    # rich on use (see render_table)
    from rich.console import Console
    from rich.pretty import Pretty
    from rich.table import Table

    console = Console()
    table = Table(title=str(lineage_info.get("summary_dir")), show_header=False, box=None)
    table.add_column("section", style="bold cyan", no_wrap=True, vertical="top")
    table.add_column("value")
    for key, value in lineage_info.items():
        if key == "summary_dir":
            continue
        if isinstance(value, dict) and value and key != "dataset_graph":
            inner = Table(show_header=False, box=None, pad_edge=False)
            inner.add_column(style="dim")
            inner.add_column()
            for name, item in value.items():
                inner.add_row(
                    str(name),
                    format_value(item) if not isinstance(item, (dict, list)) else Pretty(item),
                )
            table.add_row(key, inner)
        else:
            table.add_row(key, Pretty(value) if value else "-")
    console.print(table)


@click.command("show")
@click.argument("run_dir", type=click.Path(file_okay=False, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print the lineage as JSON.")
def show(run_dir: str, as_json: bool) -> None:
    """Show the lineage of one run directory."""
    from trainledger.query import get_summary_lineage  # the query engine on use

    try:
        info = get_summary_lineage(user_location(run_dir))
    except LineageFileNotFoundError:
        info = {}  # no lineage file: said below, as for an empty one
    except (LineageError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not info:
        if as_json:
            click.echo("{}")
            return
        click.echo(f"no lineage in {run_dir}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        _render_show(info)
