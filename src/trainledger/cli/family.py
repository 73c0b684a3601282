"""``trainledger family BASE RUN``: where a run's weights came from and what came of them."""

from __future__ import annotations

import json
from typing import Any

import click

from trainledger.cli.locations import index_option, user_location
from trainledger.errors import LineageError

__all__ = ["family"]


@click.command("family")
@click.argument("base", type=click.Path(file_okay=False, dir_okay=True))
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="The whole answer, as data.")
@index_option
def family(base: str, run: str, as_json: bool, index: str | None) -> None:
    """The ancestors, descendants and evaluations of RUN among the runs under BASE, found
    from the weights themselves (docs/lineage.md, "Across runs")."""
    from trainledger.query import run_family

    try:
        answer: dict[str, Any] = run_family(user_location(base), run, index=index)
    except (LineageError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    click.echo(f"{answer['run']}{_metric(answer['metric'])}")
    _tree("started from", answer["ancestors"])
    _tree("continued by", answer["descendants"])
    evaluations = answer["evaluations"]
    if evaluations:
        click.echo("evaluated by")
        for e in evaluations:
            click.echo(f"  {e['run']}{_metric(e['metric'])}  ({_where(e)})")
    if not (answer["ancestors"] or answer["descendants"] or evaluations):
        click.echo("  no parent, child or evaluation found among the runs of the base")


def _tree(title: str, entries: list[dict[str, Any]]) -> None:
    if not entries:
        return
    click.echo(title)
    for e in entries:
        name = e["run"] or "(a file outside the base)"
        indent = "  " * int(e["depth"])
        click.echo(f"{indent}{name}{_metric(e['metric'])}  ({_where(e)})")


def _where(entry: dict[str, Any]) -> str:
    step = f"step {entry['step']}, " if entry.get("step") is not None else ""
    return f"{step}match {entry['match']:.0%}, {entry['checkpoint']}"


def _metric(metric: dict[str, Any]) -> str:
    return "".join(
        f"  {k} {v:.4g}" if isinstance(v, float) else f"  {k} {v}" for k, v in metric.items()
    )
