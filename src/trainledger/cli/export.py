"""``trainledger export``: convert what MindSpore wrote into formats today's tools read.

- ``export safetensors SRC.ckpt DST.safetensors``: one checkpoint (MindSpore's or ours).
- ``export tensorboard SRC DST``: the ``_MS`` summaries of a run (or of every run below a base
  directory) as TensorBoard event files, one sub-directory of DST per run.
Both only read their source, which may be an ``s3://`` URL (read through a local cache); DST
is local. Errors say what was expected and exit with status 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import click

from trainledger.cli.locations import local_copy
from trainledger.errors import (
    CheckpointDecryptError,
    MissingExtraError,
    ObjectStoreError,
    TrainledgerError,
    UnsupportedLocationError,
)
from trainledger.storage import is_object_url, readable_file


@click.group("export")
def export() -> None:
    """Convert MindSpore checkpoints and summaries (safetensors, TensorBoard)."""


@export.command("safetensors")
@click.argument("src", metavar="SRC")
@click.argument("dst", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--dec-key-env",
    metavar="VAR",
    default=None,
    help="Name of an environment variable holding the decryption key (hex) of an encrypted "
    "checkpoint. The key is never printed.",
)
@click.option("--overwrite", is_flag=True, help="Replace DST if it exists.")
def safetensors_cmd(src: str, dst: Path, dec_key_env: str | None, overwrite: bool) -> None:
    """Write checkpoint SRC (MindSpore .ckpt or trainledger; a path or an s3:// URL) as
    DST.safetensors."""
    # numpy and the checkpoint stack: here so that `trainledger export --help` starts fast
    from trainledger.checkpoint import export_safetensors

    source = _source_file(src)
    key = None
    if dec_key_env is not None:
        raw = os.environ.get(dec_key_env)
        if not raw:
            raise click.ClickException(f"environment variable {dec_key_env} is not set")
        try:
            key = bytes.fromhex(raw)
        except ValueError:
            raise click.ClickException(f"{dec_key_env} expected a hex key") from None
    try:
        n = export_safetensors(source, dst, dec_key=key, overwrite=overwrite)
    except CheckpointDecryptError as exc:
        hint = "" if key else " (give the key with --dec-key-env VAR)"
        raise click.ClickException(f"{exc}{hint}") from None
    except (TrainledgerError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {n} tensors to {dst}")


def _source_file(src: str) -> Path:
    """SRC as a local file: itself, or a cached copy of an ``s3://`` object."""
    try:
        local = Path(readable_file(src, "SRC"))
    except (UnsupportedLocationError, ObjectStoreError, MissingExtraError) as exc:
        raise click.BadParameter(str(exc), param_hint="'SRC'") from exc
    if not local.is_file():
        raise click.BadParameter(
            f"expected an existing checkpoint file, received {src!r}", param_hint="'SRC'"
        )
    return local


def _inside(path: Path, parent: Path) -> bool:
    path, parent = path.resolve(), parent.resolve()
    return path == parent or parent in path.parents


@export.command("tensorboard")
@click.argument("source", metavar="SRC")
@click.argument("dst", type=click.Path(file_okay=False, path_type=Path))
def tensorboard_cmd(source: str, dst: Path) -> None:
    """Convert the MindSpore summaries (_MS files) of run SRC, or of every run below SRC, into
    TensorBoard event files under DST (one sub-directory per run): scalars, images,
    histograms, tensors and the graph. SRC may be an s3:// URL. Then: tensorboard --logdir
    DST."""
    # numpy and protobuf: here so that `trainledger export --help` starts fast
    from trainledger.summary import convert_mindspore_run, find_mindspore_runs

    src = Path(local_copy(source, param="SRC"))  # an s3:// run or base: its synced copy
    name = source.rstrip("/").rpartition("/")[2] if is_object_url(source) else src.name
    if _inside(dst, src):
        raise click.ClickException(f"DST {dst} is inside SRC {src}; the source is never written")
    runs = find_mindspore_runs(src)
    if not runs:
        raise click.ClickException(
            f"nothing to convert: no MindSpore summary files (events.out.events.summary.*_MS) "
            f"in {src} or below it"
        )
    single = runs == [src]
    targets = [(run, dst / (name if single else run.relative_to(src))) for run in runs]
    for _, target in targets:
        if target.exists() and any(p.name.count("tfevents") for p in target.iterdir()):
            raise click.ClickException(f"{target} already holds TensorBoard event files")
    items: Iterable[tuple[Path, Path]] = targets
    if len(targets) > 1:
        from rich.console import Console  # rich only when a progress bar is drawn
        from rich.progress import track

        items = track(targets, description="converting", console=Console(stderr=True))
    totals: dict[str, int] = {}
    for run, target in items:
        counts = convert_mindspore_run(run, target)
        for key, value in vars(counts).items():
            totals[key] = totals.get(key, 0) + value
    summary = ", ".join(f"{v} {k}" for k, v in totals.items() if v)
    click.echo(f"converted {len(runs)} run(s) into {dst}: {summary}")
