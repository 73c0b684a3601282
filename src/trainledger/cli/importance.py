"""``trainledger importance BASE --metric M``: which hyperparameters moved the metric."""

from __future__ import annotations

import json

import click

from trainledger.cli.locations import index_option, user_location
from trainledger.errors import LineageError

__all__ = ["importance"]


@click.command("importance")
@click.argument("base", type=click.Path(file_okay=False, dir_okay=True))
@click.option("--metric", "-m", required=True, help="The metric to explain, e.g. accuracy.")
@click.option("--where", "-w", "wheres", multiple=True, metavar="EXPR", help="As in lineage.")
@click.option("--repeats", default=5, show_default=True, type=click.IntRange(1, 100))
@click.option("--json", "as_json", is_flag=True, help="The whole answer, scatter points included.")
@index_option
def importance(
    base: str,
    metric: str,
    wheres: tuple[str, ...],
    repeats: int,
    as_json: bool,
    index: str | None,
) -> None:
    """Importance of each hyperparameter for METRIC over the runs under BASE (a random
    forest's permutation importance, repeated over 3 seeds; scikit-learn, extra [demo])."""
    from trainledger.query import filter_summary_lineage, hyperparameter_importance, parse_where

    try:
        condition = parse_where(wheres)
        result = filter_summary_lineage(user_location(base), condition or None, index=index)
        answer = hyperparameter_importance(result, metric, repeats=repeats)
    except (LineageError, ValueError, ModuleNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    if "reason" in answer:
        click.echo(f"no importance for {answer['metric']}: {answer['reason']}")
        return
    click.echo(f"importance for {answer['metric']} over {answer['runs']} runs")
    top = max((p["importance"] for p in answer["parameters"]), default=0.0) or 1.0
    width = max(len(p["name"]) for p in answer["parameters"])
    for p in answer["parameters"]:
        bar = "#" * max(0, round(20 * p["importance"] / top))
        click.echo(f"  {p['name']:<{width}}  {p['importance']:7.3f} +/- {p['spread']:.3f}  {bar}")
    click.echo("(mean drop in R^2 when the parameter is shuffled; +/- its spread over seeds)")
