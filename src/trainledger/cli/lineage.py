"""``trainledger lineage BASE`` (filter/sort/page runs) and ``trainledger show RUN_DIR``.

Thin layers over ``trainledger.query``: ``--where`` compiles through ``parse_where`` (the
same compiler the web UI's filter box uses). ``render_table(result, console)`` draws a filter
result as a rich table and is reused by ``trainledger demo``. No torch is imported; rich and
the query engine are imported inside the commands, so ``trainledger --help`` starts fast.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import click

from trainledger.cli.hints import cli_command
from trainledger.cli.locations import index_option, user_location, warn_unsynced
from trainledger.cli.show_render import render_show
from trainledger.cli.table import (
    RUN_COLUMNS,
    render_table,
    run_cells,
)
from trainledger.errors import (
    LineageError,
    LineageFileNotFoundError,
    LineageQuerySummaryDataError,
    UnknownFieldWarning,
)

__all__ = ["TABLE_PAGE", "lineage", "show"]

#: runs the table shows when neither ``--limit`` nor ``--page`` is given (the largest page):
#: a terminal table of every run of a base of 100,000 took minutes and 1.5 GiB to draw
TABLE_PAGE = 100


def _csv(result: dict[str, Any], columns: list[str], base: str) -> str:
    """The CLI's csv: ``flatten_result``'s columns, or with ``columns`` (``--columns``) the
    run's ``summary_dir`` and those, in that order (``RUN_COLUMNS`` from each run's record
    under ``base``); floats exact (repr), None empty."""
    from trainledger.query import flatten_result  # the query engine on use (see render_table)

    names, rows = flatten_result(result)
    if columns:
        chosen = (c for c in columns if c not in ("run", "summary_dir"))
        names = ["summary_dir", *dict.fromkeys(chosen)]
        if set(names) & set(RUN_COLUMNS):
            run_info = _run_reader(user_location(base))
            for row in rows:
                row.update(run_cells(run_info(str(row.get("summary_dir", "")))))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow(
            [
                ""
                if row.get(c) is None
                else (repr(row[c]) if isinstance(row.get(c), float) else row[c])
                for c in names
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
    "'metric/Accuracy >= 0.9', 'batch_size in [16, 32]', 'status = finished'. Repeat to AND.",
)
@click.option("--sort", "-s", metavar="[-]FIELD", help="Sort by FIELD; '-' for descending.")
@click.option(
    "--limit",
    "-n",
    type=int,
    help=f"Runs per page (1..100). The table shows the first {TABLE_PAGE} without it; json "
    "and csv, every run.",
)
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
    help="How deep under BASE run directories are searched (a TensorBoard run's train/, "
    "validation/ and add_hparams folders belong to it and do not count).",
)
@click.option(
    "--columns",
    "-c",
    metavar="A,B,...",
    help="Table and csv columns, e.g. 'optimizer,learning_rate,metric/accuracy' (default: "
    "the table's metrics and the fields that differ between the runs, as many as fit; "
    "csv's every field). json always holds whole objects.",
)
@index_option
def lineage(
    base: str,
    wheres: tuple[str, ...],
    sort: str | None,
    limit: int | None,
    page: int | None,
    fmt: str,
    max_depth: int,
    columns: str | None,
    index: str | None,
) -> None:
    """Filter, sort and page the lineage of the runs under BASE."""
    from trainledger.query import (
        FIELDS,
        RUN_FIELDS,
        base_names,
        filter_summary_lineage,
        parse_series_field,
        parse_where,
    )

    warn_unsynced(base)  # first: a run that never reached the store is missing below
    first_page = fmt == "table" and limit is None and page is None
    in_base = functools.partial(base_names, user_location(base), max_depth, index)
    try:
        condition = parse_where(
            wheres,
            sort=sort,
            limit=TABLE_PAGE if first_page else limit,
            page=page,
            known=_base_fields(user_location(base), max_depth, index),
        )
        listed = _columns(columns)
        # a shell path like ../runs is the user's own: normalize it (the API rejects "..")
        with warnings.catch_warnings(record=True) as noted:
            warnings.simplefilter("always", UnknownFieldWarning)
            result = filter_summary_lineage(
                user_location(base),
                condition,
                max_depth=max_depth,
                index=index,
                series=[c for c in listed if parse_series_field(c)],
            )
    except LineageFileNotFoundError:  # an empty base is an answer, not a failure
        click.echo(
            f"no runs under {base} (searched --max-depth {max_depth}; a run is a directory "
            f"holding lineage or TensorBoard event files: train with TrainLineage, or try "
            f"`{cli_command()} demo`)",
            err=fmt != "table",
        )
        if fmt == "json":
            click.echo(json.dumps({"customized": {}, "object": [], "count": 0}, indent=2))
        return
    except LineageQuerySummaryDataError:
        raise  # the index failed, not the query: one line (cli/main.py)
    except (LineageError, ValueError) as exc:
        hint = "".join(f"\n{note}" for note in getattr(exc, "__notes__", ()))
        if "not supported" in str(exc) or "sorted_name must be" in str(exc):
            names = ", ".join([*FIELDS, *RUN_FIELDS])
            hint += (
                f"\nfields: {names}, metric/<name>, user_defined/<name>, "
                "<stat>(<tag>) (stat: last, min, max, count, last_step, min_step, max_step, "
                "nonfinite_step)"
            )
        raise click.ClickException(f"{exc}{hint}") from exc
    _check_named_columns(result, condition, listed, in_base)
    for note in noted:  # what the check above did not make an error of
        click.secho(f"note: {note.message}", fg="yellow", err=True)
    if fmt in ("json", "csv"):  # output meant to leave the machine: TRAINLEDGER_REDACT applies
        result = _redacted(result)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2))
    elif fmt == "csv":
        click.echo(_csv(result, listed, base), nl=False, color=True)  # (no ESC stripped)
    else:
        _table(result, base, listed, condition, first_page)


def _table(
    result: dict[str, Any],
    base: str,
    listed: list[str],
    condition: dict[str, Any],
    first_page: bool,
) -> None:
    """The answer as a table; ``first_page``: cut at ``TABLE_PAGE`` runs, said when it was."""
    from rich.console import Console  # rich on use (see render_table)

    if not result["object"]:
        click.echo(_nothing_shown(base, result.get("count", 0), condition))
        return
    render_table(
        result,
        Console(),
        title=f"lineage of {base}",
        columns=listed or None,
        run_info=_run_reader(user_location(base)),
    )
    if first_page and result.get("count", 0) > TABLE_PAGE:
        click.echo(
            f"the first {TABLE_PAGE} shown: --limit {TABLE_PAGE} --page 1 for the next, "
            "--format csv or json for all"
        )


def _redacted(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its objects blurred as ``TRAINLEDGER_REDACT`` asks."""
    from trainledger.storage import redaction_kinds

    if not redaction_kinds():  # (nothing asked: protobuf, which the blurring loads, is not)
        return result
    from trainledger.lineage import Redaction, redact_object

    policy = Redaction.from_env()
    return {**result, "object": [redact_object(o, policy) for o in result["object"]]}


def _nothing_shown(base: str, count: int, condition: dict[str, Any]) -> str:
    """Why the table is empty: no run matches, or the page asked for lies past the last."""
    from trainledger.query import page_bounds

    if not count:
        return f"no run under {base} matches"
    start, stop = page_bounds(condition)
    size = (stop or count) - start
    last = (count - 1) // size
    return (
        f"page {condition.get('offset', 0)} is past the last: {count:,} runs under {base} match, "
        f"{size} a page (pages 0-{last})"
    )


def _run_reader(base: str) -> Any:
    """summary_dir ("./r1") -> that run's ``run`` record (status, steps, checkpoints)."""
    from trainledger.lineage import read_lineage  # on use (see render_table)
    from trainledger.query import index_copy

    root = index_copy(base)  # (an s3:// base: the copy the query read, event files left out)

    def read(summary_dir: str) -> dict[str, Any]:
        try:
            run = read_lineage(os.path.join(root, summary_dir)).get("run")
        except Exception:  # noqa: BLE001 - a damaged run must not break the table
            return {}
        return run if isinstance(run, dict) else {}

    return read


def _check_named_columns(
    result: dict[str, Any],
    condition: dict[str, Any],
    listed: list[str],
    in_base: Callable[..., list[str]],
) -> None:
    """A ``metric/``, ``user_defined/``, ``optimizer/`` or ``scheduler/`` name, or a series
    statistic's tag, that no run of the base has (a typo, usually) is an error with the
    closest names the runs do have, for --where (inside or/and/not too), --sort and
    --columns alike. ``in_base()``: every run's custom fields, asked only when a name is
    missing from the result (a filter on a typo matches nothing); ``in_base(tags=True)``:
    every scalar tag, asked only when a statistic is named."""
    from trainledger.query import (
        FIELDS,
        PREFIXES,
        condition_fields,
        did_you_mean,
        parse_series_field,
    )

    named = condition_fields(condition)
    known = [*result.get("customized", {})]
    allowed = {*FIELDS, "run", "tag", "remark", "loss", *RUN_COLUMNS}
    series = [n for n in [*named, *listed] if parse_series_field(n)]
    missing = [n for n in named if n.startswith(PREFIXES) and n not in known]
    missing += [c for c in listed if c not in allowed and c not in known and c not in series]
    if missing:
        known = in_base()
        allowed |= set(known)
        bad = [n for n in missing if n not in allowed]
        if bad:
            raise click.ClickException(
                f"no run has the field {bad[0]!r}{did_you_mean(bad[0], sorted(allowed))} "
                f"(fields the runs have: {', '.join(known)})"
            )
    tags = in_base(tags=True) if series else []
    for name in series:
        tag = parse_series_field(name)[1]  # type: ignore[index]
        if tag not in tags:
            raise click.ClickException(
                f"no run has the scalar tag {tag!r} of {name!r}{did_you_mean(tag, tags)} "
                f"(tags the runs have: {', '.join(tags) if tags else 'none'})"
            )


def _base_fields(base: str, max_depth: int, index: str | None) -> Callable[[], list[str]]:
    """The fields the base's runs have, for the "did you mean" of a name ``parse_where``
    does not know (its ``known``): asked only then; none when the base cannot be read (the
    query's own error follows)."""

    def known() -> list[str]:
        from trainledger.query import filter_summary_lineage  # the query engine on use

        try:
            found = filter_summary_lineage(base, {"limit": 1}, max_depth=max_depth, index=index)
        except (LineageError, OSError, ValueError):
            return []
        return [*found["customized"]]

    return known


def _columns(text: str | None) -> list[str]:
    """--columns as field names: the table's short labels (``lr``, ``batch``) as in --where."""
    from trainledger.query import FIELD_ALIASES

    return [FIELD_ALIASES.get(c, c) for c in (c.strip() for c in (text or "").split(",")) if c]


def _holds_runs(path: str) -> bool:
    """Whether ``path`` is a base: a directory whose sub-directories hold lineage files."""
    from trainledger.storage import LINEAGE_SUFFIX

    try:
        children = [e for e in os.scandir(path) if e.is_dir()]
    except OSError:
        return False
    for child in children:
        try:
            if any(n.endswith(LINEAGE_SUFFIX) for n in os.listdir(child.path)):
                return True
        except OSError:
            continue
    return False


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
    except LineageQuerySummaryDataError:
        raise  # the files could not be read: one line (cli/main.py)
    except (LineageError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not info:
        if as_json:
            click.echo("{}")
            return
        if _holds_runs(run_dir):
            click.echo(
                f"{run_dir} holds runs, it is not one: list them with "
                f"`{cli_command()} lineage {run_dir}`",
                err=True,
            )
        else:
            click.echo(f"no lineage in {run_dir}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        render_show(info)
