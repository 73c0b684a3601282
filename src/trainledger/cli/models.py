"""``trainledger models register | alias | list | show | history``: named models of a base.

Thin calls into ``trainledger.query``'s registry (docs/models.md); each write is recorded as
``cli:<user>@<host>``. ``--json`` prints the API's answer as it is, for scripts.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from trainledger.cli.locations import index_option, user_location
from trainledger.cli.table import terminal_safe
from trainledger.errors import LineageError

__all__ = ["models"]

T = TypeVar("T")

_BASE = click.argument("base", type=click.Path(file_okay=False, dir_okay=True))
_JSON = click.option("--json", "as_json", is_flag=True, help="The whole answer, as data.")
_DEPTH = click.option(
    "--max-depth",
    type=click.IntRange(0, 64),
    default=1,
    show_default=True,
    help="How deep under BASE run directories are searched.",
)


def _call(fn: Callable[[], T]) -> T:
    """``fn()``; a mistaken name, reference or checkpoint is one line and exit status 1."""
    try:
        return fn()
    except (LineageError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


def _dump(answer: Any) -> None:
    click.echo(json.dumps(answer, indent=2))


def _when(seconds: Any) -> str:
    return dt.datetime.fromtimestamp(float(seconds or 0)).isoformat(timespec="seconds")


@click.group("models")
def models() -> None:
    """Named models: a run's checkpoint registered as a numbered version of a name, and
    aliases (production, candidate...) moved between versions (docs/models.md)."""


@models.command("register")
@_BASE
@click.argument("name")
@click.argument("checkpoint")
@click.option(
    "--alias", "aliases", multiple=True, help="Also point ALIAS at the new version (repeatable)."
)
@_JSON
@index_option
@_DEPTH
def register(
    base: str,
    name: str,
    checkpoint: str,
    aliases: tuple[str, ...],
    as_json: bool,
    index: str | None,
    max_depth: int,
) -> None:
    """Register CHECKPOINT (a file of a run of BASE: a path, or relative to BASE) as the next
    version of model NAME."""
    from trainledger.query import list_models, register_model, set_model_alias

    where = user_location(base)
    if not os.path.isabs(checkpoint) and "://" not in checkpoint and os.path.exists(checkpoint):
        checkpoint = os.path.abspath(checkpoint)  # (as the shell completed it; else in BASE)
    version = _call(
        lambda: register_model(where, name, checkpoint, index=index, max_depth=max_depth)
    )
    try:
        moves = [set_model_alias(where, name, a, version, index=index) for a in aliases]
    except (LineageError, ValueError) as exc:  # (the version stays: say so)
        raise click.ClickException(f"registered {name}/{version}, but: {exc}") from exc
    (model,) = [m for m in list_models(where, index=index) if m["name"] == name]
    entry = next(v for v in model["versions"] if v["version"] == version)
    if as_json:
        _dump(entry)
        return
    click.echo(f"registered {_version_line(entry)}")
    for move in moves:
        click.echo(_move_line(move))


@models.command("alias")
@_BASE
@click.argument("name")
@click.argument("alias")
@click.argument("version", type=click.IntRange(min=1), required=False)
@click.option("--remove", is_flag=True, help="Remove ALIAS instead (no VERSION).")
@_JSON
@index_option
def alias(
    base: str,
    name: str,
    alias: str,
    version: int | None,
    remove: bool,
    as_json: bool,
    index: str | None,
) -> None:
    """Point ALIAS of model NAME at VERSION (or remove it with --remove)."""
    from trainledger.query import set_model_alias

    if (version is None) != remove:
        raise click.UsageError("expected a VERSION, or --remove without one")
    move = _call(lambda: set_model_alias(user_location(base), name, alias, version, index=index))
    if as_json:
        _dump(move)
        return
    click.echo(_move_line(move))


@models.command("list")
@_BASE
@_JSON
@index_option
def list_command(base: str, as_json: bool, index: str | None) -> None:
    """Every named model of BASE: its versions (run, checkpoint, step) and aliases."""
    from trainledger.query import list_models

    found = _call(lambda: list_models(user_location(base), index=index))
    if as_json:
        _dump(found)
        return
    if not found:
        click.echo(f"no named models in {base} (trainledger models register BASE NAME CHECKPOINT)")
    for model in found:
        _print_model(model)


def _print_model(model: dict[str, Any]) -> None:
    aliases = ", ".join(f"{a} -> {v}" for a, v in model["aliases"].items()) or "no aliases"
    click.echo(f"{model['name']}  latest {model['latest']}  {aliases}")
    for entry in model["versions"]:
        click.echo(f"  {_version_line(entry, named=False)}")


def _version_line(entry: dict[str, Any], named: bool = True) -> str:
    """``classifier/2  ./r2  r2/m.ckpt  step 8  production``."""
    head = f"{entry['name']}/{entry['version']}" if named else str(entry["version"])
    step = f"  step {entry['step']}" if entry.get("step") is not None else ""
    aliases = f"  {', '.join(entry['aliases'])}" if entry.get("aliases") else ""
    return f"{head}  {terminal_safe(entry['run'])}  {terminal_safe(entry['path'])}{step}{aliases}"


def _move_line(move: dict[str, Any]) -> str:
    """``classifier@production -> 3 (was 2)``."""
    was = f"was {move['previous']}" if move.get("previous") is not None else "was unset"
    target = "removed" if move["version"] is None else f"-> {move['version']}"
    return f"{move['name']}@{move['alias']} {target} ({was})"


@models.command("show")
@_BASE
@click.argument("ref")
@_JSON
@index_option
@_DEPTH
def show(base: str, ref: str, as_json: bool, index: str | None, max_depth: int) -> None:
    """What REF names: NAME@ALIAS or NAME/VERSION (its checkpoint, run, lineage and family),
    or NAME (the model's versions and aliases)."""
    from trainledger.query import list_models, resolve_model

    where = user_location(base)
    if "@" not in ref and "/" not in ref:  # a name: the model (an unknown one: the error)
        from trainledger.query import model_history

        _call(lambda: model_history(where, ref, index=index))
        (model,) = [m for m in list_models(where, index=index) if m["name"] == ref]
        if as_json:
            _dump(model)
        else:
            _print_model(model)
        return
    found = _call(lambda: resolve_model(where, ref, index=index, max_depth=max_depth))
    if as_json:
        _dump(found)
        return
    aliases = f"  ({', '.join(found['aliases'])})" if found["aliases"] else ""
    click.echo(f"{found['name']}/{found['version']}{aliases}")
    click.echo(f"  checkpoint  {terminal_safe(found['checkpoint'])}")
    click.echo(f"  run         {terminal_safe(found['run'])}{_metric(found['family']['metric'])}")
    if found["step"] is not None:
        click.echo(f"  step        {found['step']}")
    click.echo(f"  registered  {_when(found['time'])} by {terminal_safe(found['actor'])}")
    for title, key in (("started from", "ancestors"), ("continued by", "descendants")):
        for e in found["family"][key]:
            name = terminal_safe(str(e["run"] or "(a file outside the base)"))
            click.echo(f"  {title:<11} {name}{_metric(e['metric'])}  (depth {e['depth']})")


def _metric(metric: dict[str, Any]) -> str:
    return "".join(
        f"  {k} {v:.4g}" if isinstance(v, float) else f"  {k} {v}" for k, v in metric.items()
    )


@models.command("history")
@_BASE
@click.argument("name", required=False)
@_JSON
@index_option
def history(base: str, name: str | None, as_json: bool, index: str | None) -> None:
    """Every registration and alias move of model NAME (of every model without NAME), oldest
    first, with who and when."""
    from trainledger.query import model_history

    found = _call(lambda: model_history(user_location(base), name, index=index))
    if as_json:
        _dump(found)
        return
    for e in found:
        if e["action"] == "register":
            was = f" (latest was {e['previous']})" if e.get("previous") is not None else ""
            what = f"register  {e['name']}/{e['version']}  {terminal_safe(e['checkpoint'])}{was}"
        else:
            what = f"alias     {_move_line(e)}"
        click.echo(f"{_when(e['time'])}  {terminal_safe(e['actor'])}  {what}")
