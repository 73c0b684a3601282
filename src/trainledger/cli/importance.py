"""``trainledger importance BASE --metric M``: which hyperparameters moved the metric."""

from __future__ import annotations

import json
from typing import Any

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
    forest's permutation importance on held-out runs, 5 folds; scikit-learn, extra [demo])."""
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
    click.echo(answer["verdict"])
    top = max((p["importance"] for p in answer["parameters"]), default=0.0) or 1.0
    width = max(len(p["name"]) for p in answer["parameters"])
    for p in answer["parameters"]:
        bar = "#" * max(0, round(20 * p["importance"] / top))
        way = _way(p["direction"])
        click.echo(
            f"  {p['name']:<{width}}  {p['importance']:6.2f} +/- {p['spread']:.2f}  {bar:<20} {way}"
        )
    click.echo("(mean drop in held-out R^2 when the parameter is shuffled; +/- over the folds)")
    if answer["left_out"]:
        click.echo(f"left out as id-like: {', '.join(answer['left_out'])}")


def _way(direction: dict[str, Any]) -> str:
    """A parameter's direction in words: the metric rising or falling with it, or the levels
    with its highest and lowest mean."""
    if "correlation" in direction:
        rho = direction["correlation"]
        if rho is None:
            return ""
        return f"the metric {'rises' if rho > 0 else 'falls'} with it (rho {rho:+.2f})"
    return f"highest with {direction['highest']}, lowest with {direction['lowest']}"
