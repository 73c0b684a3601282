"""``trainledger archive | restore | delete | audit``: a team's housekeeping of a base.

Each write asks for confirmation (``--yes`` skips it), goes through the same functions as the
web UI (``query.run_admin``) and is recorded in the base's audit log as ``cli:<user>@<host>``.
"""

from __future__ import annotations

import datetime as dt
import json

import click

from trainledger.cli.locations import index_option, user_location
from trainledger.errors import LineageError
from trainledger.query import (
    append_audit,
    archive_run,
    cli_actor,
    delete_run,
    read_audit,
    restore_run,
)

__all__ = ["archive", "restore", "delete", "audit"]

_BASE = click.argument("base", type=click.Path(exists=True, file_okay=False))
_RUNS = click.argument("runs", nargs=-1, required=True)
_YES = click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
_FORCE = click.option(
    "--force",
    is_flag=True,
    help="Also a run whose lineage still says 'running' (dead writer), or that a named "
    "model's version points into (the version then names a missing checkpoint).",
)


def _run_id(run: str) -> str:
    return run if run.startswith("./") else f"./{run.strip('/')}"


def _each(base: str, runs: tuple[str, ...], action: str, do: object) -> None:
    base = user_location(base)
    for run in runs:
        try:
            result = do(base, _run_id(run))  # type: ignore[operator]
        except (LineageError, ValueError, OSError) as exc:
            raise click.ClickException(f"{run}: {exc}") from exc
        append_audit(base, cli_actor(), action, _run_id(run))
        click.echo(f"{action}d {run}" + (f" -> {result}" if isinstance(result, str) else ""))


@click.command("archive")
@_BASE
@_RUNS
@_FORCE
@_YES
@index_option
def archive(base: str, runs: tuple[str, ...], force: bool, yes: bool, index: str | None) -> None:
    """Move runs into BASE/.trainledger-archive (out of every query; `restore` brings them back)."""
    if not yes:
        click.confirm(f"Archive {len(runs)} run(s) under {base}?", abort=True)
    _each(base, runs, "archive", lambda b, r: archive_run(b, r, force=force, index=index))


@click.command("restore")
@_BASE
@_RUNS
def restore(base: str, runs: tuple[str, ...]) -> None:
    """Bring archived runs back into BASE."""
    _each(base, runs, "restore", restore_run)


@click.command("delete")
@_BASE
@_RUNS
@_FORCE
@click.option("--archived", is_flag=True, help="The runs are in the archive.")
@_YES
@index_option
def delete(
    base: str, runs: tuple[str, ...], force: bool, archived: bool, yes: bool, index: str | None
) -> None:
    """Delete runs and their own checkpoints elsewhere under BASE. This cannot be undone.

    A checkpoint outside a run's folder goes with the run only when its header carries the
    run's identity and it lies in no other run's folder (docs/lineage.md, "A run's identity").
    """
    if not yes:
        click.confirm(
            f"Delete {len(runs)} run(s) under {base} with their checkpoints? This cannot be undone",
            abort=True,
        )

    def remove(b: str, r: str) -> None:
        removed = delete_run(b, r, force=force, archived=archived, index=index)
        click.echo(f"  removed {len(removed)} path(s)")

    _each(base, runs, "delete", remove)


@click.command("audit")
@_BASE
@click.option("-n", "--last", default=50, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def audit(base: str, last: int, as_json: bool) -> None:
    """Who archived, restored, deleted or annotated which run, and when (newest last)."""
    for entry in read_audit(user_location(base), last):
        if as_json:
            click.echo(json.dumps(entry, sort_keys=True))
            continue
        when = dt.datetime.fromtimestamp(float(entry.get("time", 0))).isoformat(timespec="seconds")
        extra = {k: v for k, v in entry.items() if k not in ("time", "actor", "action", "run")}
        tail = f"  {json.dumps(extra, sort_keys=True)}" if extra else ""
        click.echo(f"{when}  {entry.get('actor')}  {entry.get('action')}  {entry.get('run')}{tail}")
