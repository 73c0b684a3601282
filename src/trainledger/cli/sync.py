"""``trainledger sync [STAGING]``: upload what a killed or failed process left in staging.

A process that wrote ``s3://`` runs and could not finish its upload (the store was down past
the deadline, the job was killed, the node was recycled) leaves the files in its staging
directory, marked (``storage.staging``). This command uploads every such directory whose
writer is gone, like ``wandb sync``; a directory a live process still writes is left to it.
"""

from __future__ import annotations

import click

__all__ = ["sync"]


@click.command()
@click.argument("staging", required=False, metavar="[STAGING]")
@click.option(
    "--force", is_flag=True, help="Also upload directories whose writer is still running."
)
@click.option(
    "--deadline",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Give up after this long (default: $TRAINLEDGER_OBJECT_DEADLINE, 300).",
)
@click.option(
    "--rescan",
    is_flag=True,
    help="Also make every local copy of a bucket list it whole at its next refresh "
    "(finds objects uploaded by tools that write no change records, such as aws s3 cp).",
)
def sync(staging: str | None, force: bool, deadline: float | None, rescan: bool) -> None:
    """Upload the runs left in STAGING (default: $TRAINLEDGER_STAGING_DIR, else
    ~/.cache/trainledger/staging) to their object store."""
    from trainledger.storage import staged_locations, sync_staging  # on use

    if rescan:
        from trainledger.storage import request_rescan_all  # on use

        click.echo(f"rescan asked of {request_rescan_all()} local copies")

    found = staged_locations(staging)
    results = sync_staging(staging, force=force, deadline=deadline)
    done = {r[0].directory for r in results}
    for staged in found:
        if staged.directory not in done:
            click.echo(f"skipped {staged.url}: a running process writes it (--force to upload)")
    failed = 0
    for staged, error in results:
        if error:
            failed += 1
            click.secho(f"failed  {staged.url}: {error}", fg="red", err=True)
        else:
            click.echo(f"synced  {staged.url}")
    if not found:
        click.echo("nothing to upload: no staging directory found")
    if failed:
        raise click.ClickException(f"{failed} location(s) could not be uploaded; try again later")
