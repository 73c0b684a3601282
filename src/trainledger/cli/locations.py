"""Run and base locations as the CLI takes them: a local path (made absolute, so ``../runs``
works) or an ``s3://`` URL; any other ``scheme://`` is refused with the storage's message.
``--index URL`` (``index_option``) says where the lineage index of a base lives."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import click

from trainledger.errors import MissingExtraError, ObjectStoreError, UnsupportedLocationError
from trainledger.storage import check_location, is_object_url, no_checkpoints, readable_dir

__all__ = ["user_location", "local_copy", "keep_fresh", "index_option", "warn_unsynced"]


def _check_index(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``value`` once it is known to name a backend, or a usage error saying what is taken."""
    from trainledger.query import index_url  # the query package on use

    try:
        index_url(value)
        return value
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


def index_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--index URL``: a shared PostgreSQL index instead of the SQLite file beside the runs."""
    return click.option(
        "--index",
        "index",
        metavar="URL",
        callback=_check_index,
        help="Where the lineage index is: postgresql://USER@HOST/DB (shared by a team; "
        "pip install 'trainledger[postgres]') or sqlite:// (the file beside the runs). "
        "Default: $TRAINLEDGER_INDEX_URL, else sqlite://.",
    )(fn)


def user_location(path: str) -> str:
    """An ``s3://`` URL unchanged (the query API reads it), a local path made absolute."""
    try:
        check_location(path)
    except UnsupportedLocationError as exc:
        raise click.ClickException(str(exc)) from exc
    return path if is_object_url(path) else os.path.abspath(path)


def local_copy(
    path: str,
    want: Callable[[str], bool] = no_checkpoints,
    param: str = "BASE",
    *,
    for_index: bool = False,
) -> str:
    """A local directory holding ``path``'s files (for an ``s3://`` URL, the synced cache;
    ``for_index``: the query index's copy, whose event files may be stand-ins,
    ``query/object_copy.py``); a usage error (exit 2) naming ``param`` when there is none."""
    from trainledger.query import index_copy  # the query package on use (fast --help)

    try:
        local = index_copy(path) if for_index else readable_dir(path, want=want)
    except (UnsupportedLocationError, ObjectStoreError, MissingExtraError) as exc:
        raise click.BadParameter(str(exc), param_hint=f"'{param}'") from exc
    if not os.path.isdir(local):
        raise click.BadParameter(
            f"expected an existing directory, received {path!r}", param_hint=f"'{param}'"
        )
    return os.path.abspath(local)


def keep_fresh(url: str, every: float) -> threading.Event:
    """Re-sync the index copy of an ``s3://`` base (``local_copy(..., for_index=True)``)
    every ``every`` seconds on a daemon thread (the UI's staleness bound for runs written
    elsewhere); set the returned event to stop."""
    from trainledger.query import index_copy  # the query package on use (fast --help)

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            try:
                index_copy(url, max_age=0)
            except (ObjectStoreError, OSError) as exc:
                click.secho(f"warning: could not refresh {url}: {exc}", fg="yellow", err=True)

    threading.Thread(target=loop, name=f"trainledger-refresh {url}", daemon=True).start()
    return stop


def warn_unsynced(url: str) -> list[str]:
    """Warn (on stderr) of the locations under the ``s3://`` ``url`` that a process on this
    machine wrote and never finished uploading; returns their URLs ([] for a local path)."""
    if not is_object_url(url):
        return []
    from trainledger.storage import staged_locations  # on use

    stale = [s for s in staged_locations(under=url) if s.unsynced]
    for staged in stale:
        why = f": {staged.error}" if staged.error else " (its writer stopped before the end)"
        click.secho(
            f"warning: {staged.url} has files that did not reach the store{why}; they are "
            f"staged in {staged.directory}; `trainledger sync` uploads them",
            fg="yellow",
            err=True,
        )
    return [s.url for s in stale]
