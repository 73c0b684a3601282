"""``trainledger import``: bring runs recorded by other tools in as trainledger run directories.

Thin: the work is ``trainledger.integrations.import_mlflow``; MLflow is imported only when the
subcommand runs (extra ``mlflow``).
"""

from __future__ import annotations

from pathlib import Path

import click


@click.group(name="import")
def import_group() -> None:
    """Import runs from another tracker (re-running is idempotent)."""


@import_group.command(name="mlflow")
@click.argument("tracking_uri")
@click.argument("base", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--experiment",
    "experiments",
    multiple=True,
    help="Experiment name or id (repeatable; default: every active experiment).",
)
@click.option(
    "--filter",
    "filter_string",
    default="",
    help="MLflow search filter, e.g. \"metrics.accuracy > 0.9 and params.optimizer = 'Adam'\".",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
def mlflow_command(
    tracking_uri: str,
    base: Path,
    experiments: tuple[str, ...],
    filter_string: str,
    progress: bool,
) -> None:
    """Import the MLflow runs of TRACKING_URI (sqlite:///mlflow.db, a server URL, ...) into
    run directories BASE/mlflow-<run_id>: params, metric histories, tags, checkpoints."""
    try:
        from trainledger.integrations import import_mlflow
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise click.ClickException(
            "importing from MLflow needs the mlflow extra "
            f"(pip install 'trainledger[mlflow]'): {exc}"
        ) from exc
    try:
        report = import_mlflow(
            tracking_uri,
            base,
            experiments=list(experiments) or None,
            filter_string=filter_string,
            progress=progress,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"{report.imported} imported, {report.updated} updated, "
        f"{report.unchanged} unchanged under {base}"
    )
